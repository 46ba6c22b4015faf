/**
 * `rateLimit.store: { shared }`: the application's `SharedStore`, one `increment` per window.
 * Behaviour against an in-process store of the contract (a Map, atomic because single-threaded)
 * and against stores that fail in every way a remote one can; end to end through the docs' HTTP
 * recipe in test/limits/shared-store-gateways.test.ts.
 */
import { describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import type { RateLimitOptions, TenantLimiter } from '../../src/limits/rate-limit.js'
import { createTenantLimiter } from '../../src/limits/rate-limit.js'
import type { ResolvedTenant } from '../../src/limits/tenant.js'
import { checkedIncrement, type SharedStore } from '../../src/shared-store.js'
import type { RequestLike } from '../../src/types.js'
import { get, ManualClock, token } from '../helpers/limiter-fixtures.js'

const tenant = (id: string, plan?: string): ResolvedTenant => ({ id, plan })
/** Generous: a shared machine must not turn a slow answer into a fallback here. */
const ROOMY_TIMEOUT_MS = 5000

interface Call {
  readonly key: string
  readonly amount: number
  readonly ttlMs: number
}

/**
 * A `SharedStore` in this process, as the contract reads: a counter opens at 0 with `ttlMs` and
 * keeps its expiry. Time comes from `now` so that the tests decide it. Records every increment.
 */
function mapStore(now: () => number = Date.now): SharedStore & { calls: Call[] } {
  const entries = new Map<string, { count: number; expiresAt: number }>()
  const calls: Call[] = []
  return {
    calls,
    async increment(key, amount, ttlMs) {
      calls.push({ key, amount, ttlMs })
      const at = now()
      let entry = entries.get(key)
      if (entry === undefined || entry.expiresAt <= at) {
        entry = { count: 0, expiresAt: at + ttlMs }
        entries.set(key, entry)
      }
      entry.count += amount
      return { count: entry.count, msBeforeReset: entry.expiresAt - at }
    },
    async claimOnce() {
      throw new Error('not used by the limiter')
    },
  }
}

function limiterWith(
  options: RateLimitOptions,
  context: { events?: GateEvent[]; clock?: ManualClock } = {},
): TenantLimiter {
  const { events, clock } = context
  return createTenantLimiter(normalizeRateLimitOptions(options), {
    emit: events === undefined ? undefined : (event) => events.push(event),
    ...(clock === undefined ? {} : { clock }),
  })
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly code?: string | undefined
}

async function answerOf(limiter: TenantLimiter, id = 'acme', request = get): Promise<Answer> {
  try {
    return { status: 200, headers: await limiter.consume(tenant(id), request, token) }
  } catch (error) {
    const { status, headers, code } = error as Answer
    return { status: status ?? 500, headers, code }
  }
}

const storeErrors = (events: readonly GateEvent[]) =>
  events.filter((event) => event.type === 'limiter_store_error')

describe('rateLimit.store: { shared } (options)', () => {
  const windows = [{ points: 5, durationSeconds: 60 }]

  it.each([
    ['nothing', undefined],
    ['an object without increment', { claimOnce: async () => true }],
    ['an increment that is not a function', { increment: 'http://counters' }],
  ])('refuses a shared store with %s, naming the option and what to pass', (_name, shared) => {
    expect(() => normalizeRateLimitOptions({ windows, store: { shared } })).toThrow(
      '"rateLimit.store.shared" must be a SharedStore, an object with increment(key, amount, ttlMs) returning a promise (see docs/stores.md, "A store of your own")',
    )
  })

  it('refuses { shared } beside another store', () => {
    expect(() =>
      normalizeRateLimitOptions({ windows, store: { shared: mapStore(), redis: {} } }),
    ).toThrow(
      `"rateLimit.store" must be 'memory', { redis: client }, { flexible: (window) => limiter } or { shared: store }`,
    )
  })

  it('keeps the store, with no Redis client nor flexible limiters', () => {
    const shared = mapStore()
    expect(normalizeRateLimitOptions({ windows, store: { shared } })).toMatchObject({
      shared,
      redis: undefined,
      flexible: undefined,
    })
  })
})

describe('rateLimit.store: { shared }', () => {
  it('admits exactly the limit across two limiters sharing one store', async () => {
    const shared = mapStore()
    const options: RateLimitOptions = {
      windows: [{ points: 25, durationSeconds: 60 }],
      store: { shared },
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
      onStoreError: 'deny',
    }
    const limiters = [limiterWith(options), limiterWith(options)]
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, index) => answerOf(limiters[index % 2] as TenantLimiter)),
    )
    expect(answers.filter(({ status }) => status === 200)).toHaveLength(25)
    expect(answers.filter(({ status }) => status === 429)).toHaveLength(35)
  })

  it("increments the Redis script's key of each window by the request's cost, with the window as ttlMs", async () => {
    const shared = mapStore()
    const limiter = limiterWith({
      plans: { pro: [{ points: 50, durationSeconds: 60 }] },
      defaultPlan: 'pro',
      keyPrefix: 'edge:rl',
      cost: (request: RequestLike) => (request.url === '/big' ? 3 : 1),
      store: { shared },
    })
    await answerOf(limiter, 'acme', { ...get, url: '/big' })
    expect(shared.calls).toEqual([{ key: 'edge:rl:{acme}:pro:60', amount: 3, ttlMs: 60_000 }])
  })

  it('counts the windows shortest first and stops at the first that refuses', async () => {
    const shared = mapStore()
    const options: RateLimitOptions = {
      windows: [
        { points: 100, durationSeconds: 3600 },
        { points: 2, durationSeconds: 1 },
      ],
      store: { shared },
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
    }
    const limiter = limiterWith(options)
    expect((await answerOf(limiter)).status).toBe(200)
    expect((await answerOf(limiter)).status).toBe(200)
    // Another limiter: the first one refuses a spent window from memory, without the store.
    const refused = await answerOf(limiterWith(options))
    expect(refused.status).toBe(429)
    expect(refused.headers['RateLimit']).toMatch(/^"default-1s";r=0;t=1$/)
    expect(shared.calls.map(({ key }) => key)).toEqual([
      'tollgate:rl:{acme}:default:1',
      'tollgate:rl:{acme}:default:3600',
      'tollgate:rl:{acme}:default:1',
      'tollgate:rl:{acme}:default:3600',
      // Refused by the 1-second window: never counted in the hour.
      'tollgate:rl:{acme}:default:1',
    ])
  })

  it("answers 429 with Retry-After from the store's msBeforeReset", async () => {
    const clock = new ManualClock()
    const shared = mapStore(() => clock.now())
    const limiter = limiterWith(
      { windows: [{ points: 1, durationSeconds: 60 }], store: { shared } },
      { clock },
    )
    expect((await answerOf(limiter)).status).toBe(200)
    clock.advance(25_000)
    // A second limiter, so that the first one's memory of the spent window plays no part.
    const other = limiterWith(
      { windows: [{ points: 1, durationSeconds: 60 }], store: { shared } },
      { clock },
    )
    const refused = await answerOf(other)
    expect(refused).toMatchObject({ status: 429, headers: { 'Retry-After': '35' } })
  })

  it('has no synchronous path (consumeNow): every request asks the store', () => {
    const limiter = limiterWith({
      windows: [{ points: 1, durationSeconds: 60 }],
      store: { shared: mapStore() },
    })
    expect(limiter.consumeNow).toBeUndefined()
  })
})

/** A store whose increment does `fail`: reject, throw, or resolve something else. */
function failingStore(increment: SharedStore['increment']): SharedStore {
  return { increment, claimOnce: async () => true }
}

const MALFORMED: ReadonlyArray<[string, unknown, string]> = [
  ['nothing', undefined, 'resolved undefined, not { count, msBeforeReset }'],
  ['a number', 3, 'resolved number 3, not { count, msBeforeReset }'],
  [
    'a count that is NaN',
    { count: Number.NaN, msBeforeReset: 1000 },
    'a count that is not a whole number ≥ the amount added (1) (got number NaN)',
  ],
  [
    'a count as text',
    { count: '3', msBeforeReset: 1000 },
    'a count that is not a whole number ≥ the amount added (1) (got a string of length 1)',
  ],
  [
    'a count below the amount added',
    { count: 0, msBeforeReset: 1000 },
    'a count that is not a whole number ≥ the amount added (1) (got number 0)',
  ],
  [
    'a negative msBeforeReset',
    { count: 1, msBeforeReset: -5 },
    'an msBeforeReset that is not a number of ms ≥ 0 (got number -5)',
  ],
  [
    'an infinite msBeforeReset',
    { count: 1, msBeforeReset: Number.POSITIVE_INFINITY },
    'an msBeforeReset that is not a number of ms ≥ 0 (got number Infinity)',
  ],
]

describe('rateLimit.store: { shared } answering past its window', () => {
  /** A store that answers `msBeforeReset` for acme's counter, counting correctly otherwise. */
  function storeAnswering(msBeforeReset: number, count: number, clock: ManualClock) {
    const shared = mapStore(() => clock.now())
    const store: SharedStore & { acmeCalls: number } = {
      acmeCalls: 0,
      increment(key, amount, ttlMs) {
        if (!key.includes('{acme}')) return shared.increment(key, amount, ttlMs)
        store.acmeCalls++
        return Promise.resolve({ count, msBeforeReset })
      },
      claimOnce: shared.claimOnce,
    }
    return store
  }

  it('caps a reset of 3,600,000 ms for a 60 s window at the window: Retry-After 60, and the store asked again after 60 s', async () => {
    const clock = new ManualClock()
    const store = storeAnswering(3_600_000, 2, clock)
    const limiter = limiterWith(
      { windows: [{ points: 1, durationSeconds: 60 }], store: { shared: store } },
      { clock },
    )
    expect(await answerOf(limiter)).toMatchObject({
      status: 429,
      headers: { 'Retry-After': '60', RateLimit: '"default";r=0;t=60' },
    })
    clock.advance(59_999)
    // Refused from memory until the window's end, without the store.
    expect((await answerOf(limiter)).status).toBe(429)
    expect(store.acmeCalls).toBe(1)
    clock.advance(1)
    await answerOf(limiter)
    expect(store.acmeCalls).toBe(2)
  })

  it('refuses a tenant whose counter answers { count: MAX, msBeforeReset: MAX } for one window at most, and nobody else', async () => {
    const clock = new ManualClock()
    const events: GateEvent[] = []
    const store = storeAnswering(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, clock)
    const limiter = limiterWith(
      { windows: [{ points: 5, durationSeconds: 60 }], store: { shared: store } },
      { clock, events },
    )
    expect(await answerOf(limiter)).toMatchObject({ status: 429, headers: { 'Retry-After': '60' } })
    expect(await answerOf(limiter, 'globex')).toMatchObject({ status: 200 })
    expect(events.map(({ type }) => type)).toEqual(['rate_limited'])
    clock.advance(60_000)
    await answerOf(limiter)
    expect(store.acmeCalls).toBe(2)
  })

  it('checkedIncrement caps msBeforeReset at ttlMs', () => {
    expect(checkedIncrement({ count: 2, msBeforeReset: 3_600_000 }, 1, 60_000)).toEqual({
      count: 2,
      msBeforeReset: 60_000,
    })
    expect(checkedIncrement({ count: 2, msBeforeReset: 1234 }, 1, 60_000)).toEqual({
      count: 2,
      msBeforeReset: 1234,
    })
  })
})

describe('rateLimit.store: { shared } and the request cost', () => {
  it('refuses a cost above the smallest window with 403 before calling the store, and leaves every other tenant to the store', async () => {
    const shared = mapStore()
    const events: GateEvent[] = []
    const limiter = limiterWith(
      {
        windows: [{ points: 10, durationSeconds: 60 }],
        store: { shared },
        // As an application that takes the cost from a header.
        cost: (request) => Number(request.headers['x-cost'] ?? 1),
      },
      { events },
    )
    const huge = { ...get, headers: { 'x-cost': '9007199254740991' } }
    expect(await answerOf(limiter, 'acme', huge)).toMatchObject({
      status: 403,
      code: 'ERR_COST_EXCEEDS_LIMIT',
    })
    expect(shared.calls).toEqual([])
    expect(await answerOf(limiter, 'globex')).toMatchObject({ status: 200 })
    expect(await answerOf(limiter, 'acme')).toMatchObject({
      status: 200,
      headers: { RateLimit: '"default";r=9;t=60' },
    })
    expect(events.map(({ type }) => type)).toEqual([])
  })
})

describe('rateLimit.store: { shared } with its memory of spent tenants full', () => {
  it('still admits every tenant exactly its points: tenants forgotten from memory are refused by the store', async () => {
    const shared = mapStore()
    const limiter = limiterWith({
      windows: [{ points: 2, durationSeconds: 60 }],
      store: { shared },
      maxTenants: 3,
    })
    const admitted = new Map<string, number>()
    for (let round = 0; round < 6; round++) {
      for (let index = 0; index < 10; index++) {
        const id = `tenant-${index}`
        if ((await answerOf(limiter, id)).status === 200) {
          admitted.set(id, (admitted.get(id) ?? 0) + 1)
        }
      }
    }
    expect([...admitted.values()]).toEqual(Array.from({ length: 10 }, () => 2))
    // 20 admitted and 10 first refusals went to the store; with only 3 spent tenants remembered,
    // most later refusals did too, and none was admitted.
    expect(shared.calls.length).toBeGreaterThan(30)
  })
})

describe('rateLimit.store: { shared } that fails', () => {
  const windows = [{ points: 2, durationSeconds: 60 }]

  it.each(MALFORMED)(
    'fails only the request it answered with %s: the fallback decides it, the store stays in use for every other',
    async (_name, answer, message) => {
      const events: GateEvent[] = []
      const shared = mapStore()
      // The store misbehaves on one tenant's counter only.
      const store: SharedStore = {
        increment: (key, amount, ttlMs) =>
          key.includes('{acme}')
            ? Promise.resolve(answer as never)
            : shared.increment(key, amount, ttlMs),
        claimOnce: shared.claimOnce,
      }
      const limiter = limiterWith({ windows, store: { shared: store } }, { events })
      const answers = [await answerOf(limiter), await answerOf(limiter), await answerOf(limiter)]
      // The memory fallback applies the same window to acme: 2 admitted, then 429 from memory.
      expect(answers.map(({ status }) => status)).toEqual([200, 200, 429])
      expect(storeErrors(events)[0]).toMatchObject({
        error: { name: 'LimiterStoreError', code: 'ERR_STORE_ANSWER' },
      })
      const error = (storeErrors(events)[0] as { error: Error }).error
      expect(error.message).toContain(message)
      // Not a store failure: nobody else is sent to the fallback, and the store is not skipped.
      expect(events.filter((event) => event.type === 'limiter_fallback')).toEqual([])
      expect(await answerOf(limiter, 'globex')).toMatchObject({
        status: 200,
        headers: { RateLimit: '"default";r=1;t=60' },
      })
      expect(shared.calls.map(({ key }) => key)).toEqual(['tollgate:rl:{globex}:default:60'])
    },
  )

  it.each([
    ['deny', 503, 'ERR_LIMITER_UNAVAILABLE'],
    ['allow', 200, undefined],
  ] as const)(
    "answers a malformed answer's request by onStoreError '%s'",
    async (policy, status, code) => {
      const limiter = limiterWith({
        windows,
        store: { shared: failingStore(async () => ({ count: Number.NaN }) as never) },
        onStoreError: policy,
      })
      const answer = await answerOf(limiter)
      expect(answer.status).toBe(status)
      expect(answer.code).toBe(code)
    },
  )

  it.each([
    ['rejects', () => Promise.reject(new Error('counter service answered 502'))],
    [
      'throws instead of returning a promise',
      () => {
        throw new Error('no binding')
      },
    ],
  ] as const)(
    'answers by the fallback policy when increment %s, never a 429 or a 500',
    async (_name, increment) => {
      for (const [policy, status] of [
        ['deny', 503],
        ['allow', 200],
        ['memory', 200],
      ] as const) {
        const events: GateEvent[] = []
        const limiter = limiterWith(
          { windows, store: { shared: failingStore(increment) }, onStoreError: policy },
          { events },
        )
        const answer = await answerOf(limiter)
        expect(answer.status, policy).toBe(status)
        if (policy === 'deny') expect(answer.code).toBe('ERR_LIMITER_UNAVAILABLE')
        expect(storeErrors(events)).toHaveLength(1)
        // The event carries what the call rejected or threw with.
        expect(storeErrors(events)[0]).toMatchObject({
          error: { message: expect.stringMatching(/^(counter service answered 502|no binding)$/) },
        })
      }
    },
  )

  it('decides by the fallback a request whose store did not answer within storeTimeoutMs', async () => {
    const clock = new ManualClock()
    const events: GateEvent[] = []
    const limiter = limiterWith(
      {
        windows,
        store: { shared: failingStore(() => new Promise(() => {})) },
        storeTimeoutMs: 50,
        onStoreError: 'deny',
      },
      { events, clock },
    )
    const pending = answerOf(limiter)
    await new Promise((resolve) => setImmediate(resolve))
    expect(clock.pendingTimers).toBe(1)
    clock.advance(50)
    expect(await pending).toMatchObject({ status: 503, code: 'ERR_LIMITER_UNAVAILABLE' })
    expect(storeErrors(events)[0]).toMatchObject({ error: { code: 'ERR_STORE_TIMEOUT' } })
  })

  it('leaves counted what a call that outlived storeTimeoutMs added: it is not cancelled', async () => {
    const clock = new ManualClock()
    const shared = mapStore(() => clock.now())
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const slow: SharedStore = {
      increment: async (key, amount, ttlMs) => {
        const answer = await shared.increment(key, amount, ttlMs)
        await held
        return answer
      },
      claimOnce: shared.claimOnce,
    }
    const options: RateLimitOptions = {
      windows: [{ points: 1, durationSeconds: 60 }],
      store: { shared: slow },
      storeTimeoutMs: 50,
    }
    const pending = answerOf(limiterWith(options, { clock }))
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(50)
    // Decided by the memory fallback, which had counted nothing: admitted.
    expect((await pending).status).toBe(200)
    release()
    // The store counted it all the same: another gateway finds the window spent.
    expect((await answerOf(limiterWith({ ...options, store: { shared } }, { clock }))).status).toBe(
      429,
    )
  })

  it("divides by 1 with fallbackDivisor 'auto': each instance admits the whole limit while the store fails", async () => {
    const limiter = limiterWith({
      windows: [{ points: 4, durationSeconds: 60 }],
      store: { shared: failingStore(() => Promise.reject(new Error('down'))) },
    })
    const statuses = []
    for (let index = 0; index < 5; index++) statuses.push((await answerOf(limiter)).status)
    expect(statuses).toEqual([200, 200, 200, 200, 429])
  })
})
