import { describe, expect, it } from 'vitest'

import { VerdictCache } from '../src/cache.js'
import type { PreparedKey } from '../src/jwks.js'

const key = (): PreparedKey => ({ kid: 'k', verifiers: {}, retired: false })

describe('VerdictCache', () => {
  it('returns a verdict until its validity ends', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    cache.set('t', 'verdict', [key()], 1_000, 0)
    expect(cache.get('t', 999)).toBe('verdict')
    expect(cache.get('t', 1_000)).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('never keeps a verdict longer than its TTL, whatever its validity', () => {
    const cache = new VerdictCache<string>(10, 5_000)
    cache.set('t', 'verdict', [key()], Number.POSITIVE_INFINITY, 100)
    expect(cache.get('t', 5_099)).toBe('verdict')
    expect(cache.get('t', 5_100)).toBeUndefined()
  })

  it('refuses a verdict whose key was retired, even before any purge', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    const signing = key()
    cache.set('t', 'verdict', [signing], 10_000, 0)
    signing.retired = true
    expect(cache.get('t', 1)).toBeUndefined()
  })

  it('purges every verdict of a retired key and keeps the others', () => {
    const cache = new VerdictCache<string>(10, 60_000)
    const leaving = key()
    const staying = key()
    cache.set('a', 'a', [leaving], 10_000, 0)
    cache.set('b', 'b', [staying], 10_000, 0)
    cache.set('c', 'c', [leaving], 10_000, 0)
    leaving.retired = true
    cache.purgeRetired()
    expect(cache.size).toBe(1)
    expect(cache.get('b', 1)).toBe('b')
  })

  it('stays within maxEntries, evicting the least recently used', () => {
    const cache = new VerdictCache<number>(100, 60_000)
    for (let index = 0; index < 1_000; index++) cache.set(`t${index}`, index, [key()], 10_000, 0)
    expect(cache.size).toBe(100)
    expect(cache.get('t0', 1)).toBeUndefined()
    expect(cache.get('t999', 1)).toBe(999)
  })
})
