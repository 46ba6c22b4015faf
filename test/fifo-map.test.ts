import { describe, expect, it } from 'vitest'

import { FifoMap } from '../src/fifo-map.js'

/** A seeded generator (mulberry32): the same operations on every run. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** What a `Map` says the oldest entry is, when a key set again is deleted first (moved to the back). */
function oldestOf(model: Map<number, number>): [number, number] | undefined {
  const first = model.entries().next()
  return first.done === true ? undefined : first.value
}

describe('FifoMap', () => {
  it('gives the oldest entry first, a key set again moving to the back', () => {
    const map = new FifoMap<string, number>()
    map.set('a', 1)
    map.set('b', 2)
    map.set('c', 3)
    map.set('a', 4)
    expect(map.oldest()).toEqual(['b', 2])
    expect(map.shift()).toEqual(['b', 2])
    expect(map.shift()).toEqual(['c', 3])
    expect(map.shift()).toEqual(['a', 4])
    expect(map.shift()).toBeUndefined()
    expect(map.size).toBe(0)
  })

  it('skips deleted entries, however many were deleted before the oldest', () => {
    const map = new FifoMap<number, number>()
    for (let key = 0; key < 10_000; key++) map.set(key, key)
    for (let key = 0; key < 9_999; key++) map.delete(key)
    expect(map.oldest()).toEqual([9_999, 9_999])
    expect(map.get(9_999)).toBe(9_999)
    expect(map.get(0)).toBeUndefined()
    expect(map.size).toBe(1)
  })

  it('keeps the order of a Map through a long mix of sets, deletes and shifts (compactions included)', () => {
    const next = random(42)
    const map = new FifoMap<number, number>()
    const model = new Map<number, number>()
    for (let step = 0; step < 200_000; step++) {
      const roll = next()
      const key = Math.floor(next() * 3_000)
      if (roll < 0.5) {
        map.set(key, step)
        model.delete(key)
        model.set(key, step)
      } else if (roll < 0.7) {
        expect(map.delete(key)).toBe(model.delete(key))
      } else if (roll < 0.9) {
        const expected = oldestOf(model)
        if (expected !== undefined) model.delete(expected[0])
        expect(map.shift()).toEqual(expected)
      } else {
        expect(map.oldest()).toEqual(oldestOf(model))
        expect(map.get(key)).toBe(model.get(key))
      }
      expect(map.size).toBe(model.size)
    }
  })

  it('forgets the oldest of a full map a million times over, in order', () => {
    const map = new FifoMap<number, number>()
    const held = 1_000
    for (let key = 0; key < held; key++) map.set(key, key)
    let outOfOrder = 0
    for (let key = held; key < 1_000_000; key++) {
      if (map.shift()?.[0] !== key - held) outOfOrder += 1
      map.set(key, key)
    }
    expect(outOfOrder).toBe(0)
    expect(map.oldest()).toEqual([1_000_000 - held, 1_000_000 - held])
  })

  it('keeps the order of one key set again and again among others (the queue rebuilt)', () => {
    const map = new FifoMap<string, number>()
    map.set('first', 0)
    map.set('second', 0)
    for (let round = 1; round <= 100_000; round++) map.set('busy', round)
    expect(map.shift()).toEqual(['first', 0])
    expect(map.shift()).toEqual(['second', 0])
    expect(map.shift()).toEqual(['busy', 100_000])
  })
})
