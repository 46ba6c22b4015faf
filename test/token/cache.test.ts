import { describe, expect, it, vi } from 'vitest'

import { VerdictCache } from '../../src/token/cache.js'
import type { PreparedKey } from '../../src/token/jwk.js'

const key = (): PreparedKey => ({ kid: 'k', verifiers: {}, retired: false })

describe('VerdictCache', () => {
  it('returns a verdict until its validity ends', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    cache.set('t', 'verdict', [key()], { validFrom: 0, validUntil: 1_000 }, 0)
    expect(cache.get('t', 999)).toBe('verdict')
    expect(cache.get('t', 1_000)).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('never keeps a verdict longer than its TTL, whatever its validity', () => {
    const cache = new VerdictCache<string>(10, 5_000)
    cache.set('t', 'verdict', [key()], { validFrom: 0, validUntil: Number.POSITIVE_INFINITY }, 100)
    expect(cache.get('t', 5_099)).toBe('verdict')
    expect(cache.get('t', 5_100)).toBeUndefined()
  })

  it('refuses a verdict whose key was retired, even before any purge', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    const signing = key()
    cache.set('t', 'verdict', [signing], { validFrom: 0, validUntil: 10_000 }, 0)
    signing.retired = true
    expect(cache.get('t', 1)).toBeUndefined()
  })

  it('answers nothing before the verdict is valid, as when the clock steps back', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    cache.set('t', 'verdict', [key()], { validFrom: 500, validUntil: 10_000 }, 600)
    expect(cache.get('t', 499)).toBeUndefined()
    expect(cache.get('t', 500)).toBe('verdict')
  })

  it('purges every verdict of a retired key and keeps the others', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    const leaving = key()
    const staying = key()
    cache.set('a', 'a', [leaving], { validFrom: 0, validUntil: 10_000 }, 0)
    cache.set('b', 'b', [staying], { validFrom: 0, validUntil: 10_000 }, 0)
    cache.set('c', 'c', [leaving], { validFrom: 0, validUntil: 10_000 }, 0)
    leaving.retired = true
    cache.purgeRetired()
    expect(cache.size).toBe(1)
    expect(cache.get('b', 1)).toBe('b')
  })

  it('stays within maxEntries, evicting the least recently used', () => {
    const cache = new VerdictCache<number>(100, 60_000)
    for (let index = 0; index < 1_000; index++) {
      cache.set(`t${index}`, index, [key()], { validFrom: 0, validUntil: 10_000 }, 0)
    }
    expect(cache.size).toBe(100)
    expect(cache.get('t0', 1)).toBeUndefined()
    expect(cache.get('t999', 1)).toBe(999)
  })

  it('holds no timer, however many verdicts it keeps (nothing runs to expire them)', () => {
    // Fake timers count every timer, an unref'd one included (which the process would not list).
    vi.useFakeTimers()
    try {
      const cache = new VerdictCache<number>(1_000, 60_000)
      for (let index = 0; index < 1_000; index++) {
        cache.set(`t${index}`, index, [key()], { validFrom: 0, validUntil: 10_000 }, 0)
      }
      expect(cache.size).toBe(1_000)
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('VerdictCache keys', () => {
  it('never answers for a different token that shares the cached token’s tail', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    const tail = 'x'.repeat(40)
    cache.set(`valid.${tail}`, 'verdict', [key()], { validFrom: 0, validUntil: 10_000 }, 0)
    expect(cache.get(`forged.${tail}`, 1)).toBeUndefined()
    expect(cache.get(`valid.${tail}`, 1)).toBe('verdict')
  })

  it('keeps tokens shorter than the key length apart', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    cache.set('a.b.c', 'one', [key()], { validFrom: 0, validUntil: 10_000 }, 0)
    cache.set('a.b.d', 'two', [key()], { validFrom: 0, validUntil: 10_000 }, 0)
    expect(cache.get('a.b.c', 1)).toBe('one')
    expect(cache.get('a.b.d', 1)).toBe('two')
  })
})
