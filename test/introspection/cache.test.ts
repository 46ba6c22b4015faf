/**
 * The verdict cache and the call budget, on an injected clock.
 */
import { describe, expect, it } from 'vitest'
import { InvalidTokenError } from '../../src/errors.js'
import { CallBudget } from '../../src/introspection/budget.js'
import { IntrospectionCache, tokenKey } from '../../src/introspection/cache.js'

const OPTIONS = { maxEntries: 3, maxTtlSeconds: 60, inactiveTtlSeconds: 5, staleIfErrorSeconds: 0 }
const TOKEN = 'opaque-token-value-0123456789abcdef'

describe('IntrospectionCache', () => {
  it('is keyed by the SHA-256 of the token, and holds no part of the token', () => {
    const cache = new IntrospectionCache<object>(OPTIONS)
    const key = tokenKey(TOKEN)
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/)
    cache.keep(key, {}, { validFrom: 0, validUntil: 1e15 }, 0)
    cache.refuse(tokenKey(`${TOKEN}x`), new InvalidTokenError({ reason: 'inactive' }), 0)
    const held = JSON.stringify([
      ...(cache as unknown as { verdicts: Map<string, unknown> }).verdicts.keys(),
      ...(cache as unknown as { refusals: Map<string, unknown> }).refusals.keys(),
    ])
    expect(held).not.toContain(TOKEN.slice(0, 8))
    expect(held).not.toContain(TOKEN.slice(-8))
  })

  it('keeps a verdict until exp or maxTtlSeconds, whichever comes first', () => {
    const cache = new IntrospectionCache<object>(OPTIONS)
    const verdict = {}
    cache.keep('a', verdict, { validFrom: 0, validUntil: 30_000 }, 0)
    cache.keep('b', verdict, { validFrom: 0, validUntil: 1e12 }, 0)
    expect(cache.verdict('a', 29_999)).toBe(verdict)
    expect(cache.verdict('a', 30_000)).toBeUndefined()
    expect(cache.verdict('b', 59_999)).toBe(verdict)
    expect(cache.verdict('b', 60_000)).toBeUndefined()
  })

  it('remembers refusals for inactiveTtlSeconds only, apart from verdicts', () => {
    const cache = new IntrospectionCache<object>(OPTIONS)
    const verdict = {}
    cache.keep('good', verdict, { validFrom: 0, validUntil: 1e12 }, 0)
    for (let i = 0; i < 10; i++) {
      cache.refuse(`bad-${i}`, new InvalidTokenError({ reason: 'inactive' }), 0)
    }
    // A flood of refusals does not push an active token's verdict out.
    expect(cache.verdict('good', 1)).toBe(verdict)
    expect(cache.refusal('bad-9', 4999)?.reason).toBe('inactive')
    expect(cache.refusal('bad-9', 5000)).toBeUndefined()
  })

  it('is bounded by maxEntries', () => {
    const cache = new IntrospectionCache<object>(OPTIONS)
    for (let i = 0; i < 10; i++) cache.keep(`k${i}`, {}, { validFrom: 0, validUntil: 1e12 }, 0)
    expect(cache.size).toBe(3)
  })

  it('holds a verdict stale for staleIfErrorSeconds past its fresh period, never past exp', () => {
    const cache = new IntrospectionCache<object>({ ...OPTIONS, staleIfErrorSeconds: 300 })
    const verdict = {}
    cache.keep('far', verdict, { validFrom: 0, validUntil: 1e12 }, 0)
    cache.keep('near', verdict, { validFrom: 0, validUntil: 90_000 }, 0)
    expect(cache.stale('far', 59_999)).toBeUndefined()
    expect(cache.verdict('far', 60_000)).toBeUndefined()
    expect(cache.stale('far', 60_000)).toBe(verdict)
    expect(cache.stale('far', 359_999)).toBe(verdict)
    expect(cache.stale('far', 360_000)).toBeUndefined()
    expect(cache.stale('near', 89_999)).toBe(verdict)
    expect(cache.stale('near', 90_000)).toBeUndefined()
  })

  it('serves nothing stale with staleIfErrorSeconds 0, nor a verdict it was told to forget', () => {
    const cache = new IntrospectionCache<object>(OPTIONS)
    cache.keep('a', {}, { validFrom: 0, validUntil: 1e12 }, 0)
    expect(cache.stale('a', 60_000)).toBeUndefined()
    const stale = new IntrospectionCache<object>({ ...OPTIONS, staleIfErrorSeconds: 300 })
    stale.keep('a', {}, { validFrom: 0, validUntil: 1e12 }, 0)
    stale.forget('a')
    expect(stale.stale('a', 60_000)).toBeUndefined()
  })

  it('remembers nothing with inactiveTtlSeconds 0', () => {
    const cache = new IntrospectionCache<object>({ ...OPTIONS, inactiveTtlSeconds: 0 })
    cache.refuse('bad', new InvalidTokenError({ reason: 'inactive' }), 0)
    expect(cache.refusal('bad', 0)).toBeUndefined()
  })
})

describe('CallBudget', () => {
  it('gives tokens not seen the calls beyond the reserve (3 of 6), refilled at their share per period', () => {
    const budget = new CallBudget(6, 3, 0)
    expect([0, 0, 0, 0].map((at) => budget.takeUnknown(at))).toEqual([true, true, true, false])
    expect(budget.takeUnknown(999)).toBe(false)
    expect(budget.takeUnknown(1000)).toBe(true)
    expect(budget.takeUnknown(1000)).toBe(false)
  })

  it('keeps the reserve for refreshing known tokens: new tokens never spend it', () => {
    const budget = new CallBudget(4, 1, 0)
    for (let i = 0; i < 100; i++) budget.takeUnknown(0)
    expect([budget.takeKnown(0), budget.takeKnown(0), budget.takeKnown(0)]).toEqual([
      true,
      true,
      false,
    ])
  })

  it('lets a refresh use the other share once the reserve is spent, never beyond `calls` in all', () => {
    const budget = new CallBudget(4, 1, 0)
    const taken = Array.from({ length: 10 }, () => budget.takeKnown(0)).filter(Boolean)
    expect(taken).toHaveLength(4)
    expect(budget.takeUnknown(0)).toBe(false)
  })

  it('has no reserve with a budget of one call: that call serves every token', () => {
    const budget = new CallBudget(1, 10, 0)
    expect(budget.takeKnown(0)).toBe(true)
    expect(budget.takeUnknown(0)).toBe(false)
    expect(budget.takeUnknown(10_000)).toBe(true)
  })

  it('says in whole seconds, at least 1, when a token not seen may be asked about again', () => {
    const budget = new CallBudget(2, 10, 0)
    budget.takeUnknown(0)
    expect(budget.retryAfterSeconds(0)).toBe(10)
    expect(budget.retryAfterSeconds(9_500)).toBe(1)
  })

  it('never holds more than `calls` after a quiet period', () => {
    const budget = new CallBudget(2, 1, 0)
    const taken = Array.from({ length: 5 }, () => budget.takeKnown(3_600_000)).filter(Boolean)
    expect(taken).toHaveLength(2)
  })

  it('reports a spent budget once per period', () => {
    const budget = new CallBudget(1, 10, 0)
    expect(budget.shouldReport(0)).toBe(true)
    expect(budget.shouldReport(9_999)).toBe(false)
    expect(budget.shouldReport(10_000)).toBe(true)
  })
})
