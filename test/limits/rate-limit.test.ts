import { afterEach, describe, expect, it, vi } from 'vitest'

import { RateLimitedError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import type { RateLimitOptions, TenantLimiter } from '../../src/limits/rate-limit.js'
import { createTenantLimiter, LIMITER_FULL_WARNING_CODE } from '../../src/limits/rate-limit.js'
import type { ResolvedTenant } from '../../src/limits/tenant.js'
import type { RequestLike } from '../../src/types.js'
import { resetWarningsForTests } from '../../src/warnings.js'
import { get, ManualClock, token } from '../helpers/limiter-fixtures.js'

const NOW = Date.parse('2025-01-01T00:00:00.000Z')
const acme: ResolvedTenant = { id: 'acme', plan: undefined }

function limiterWith(
  options: RateLimitOptions,
  events?: GateEvent[],
  clock?: ManualClock,
): TenantLimiter {
  return createTenantLimiter(normalizeRateLimitOptions(options), {
    emit: events === undefined ? undefined : (event) => events.push(event),
    ...(clock === undefined ? {} : { clock }),
  })
}

type Outcome =
  | { readonly status: 200; readonly headers: Record<string, string> }
  | { readonly status: number; readonly headers: Record<string, string>; readonly error: unknown }

async function attempt(
  limiter: TenantLimiter,
  tenant: ResolvedTenant = acme,
  request: RequestLike = get,
): Promise<Outcome> {
  try {
    return { status: 200, headers: await limiter.consume(tenant, request, token) }
  } catch (error) {
    const { status, headers } = error as RateLimitedError
    return { status, headers, error }
  }
}

async function admittedCount(limiter: TenantLimiter, attempts: number, tenant = acme) {
  let admitted = 0
  for (let index = 0; index < attempts; index++) {
    if ((await attempt(limiter, tenant)).status === 200) admitted++
  }
  return admitted
}

afterEach(() => {
  vi.useRealTimers()
})

describe('createTenantLimiter (memory store)', () => {
  it('admits exactly the window points, then answers 429 with Retry-After', async () => {
    const limiter = limiterWith({ windows: [{ points: 5, durationSeconds: 60 }] })
    expect(await admittedCount(limiter, 5)).toBe(5)
    const refused = await attempt(limiter)
    expect(refused.status).toBe(429)
    expect(refused).toMatchObject({
      error: { code: 'ERR_RATE_LIMITED', retryAfterSeconds: 60 },
      headers: { 'Retry-After': '60' },
    })
    expect((refused as { error: unknown }).error).toBeInstanceOf(RateLimitedError)
  })

  it('sends the draft-10 fields named after the plan, never the tenant', async () => {
    vi.useFakeTimers({ now: NOW })
    const limiter = limiterWith({ windows: [{ points: 10, durationSeconds: 60 }] })
    expect(await attempt(limiter)).toEqual({
      status: 200,
      headers: { 'RateLimit-Policy': '"default";q=10;w=60', RateLimit: '"default";r=9;t=60' },
    })
    vi.advanceTimersByTime(20_500)
    expect((await attempt(limiter)).headers).toEqual({
      'RateLimit-Policy': '"default";q=10;w=60',
      RateLimit: '"default";r=8;t=40',
    })
  })

  describe('several windows', () => {
    const windows = [
      { points: 5, durationSeconds: 60 },
      { points: 3, durationSeconds: 1 },
    ]

    it('lists every window in both fields, shortest first, named <plan>-<seconds>s', async () => {
      vi.useFakeTimers({ now: NOW })
      const limiter = limiterWith({ windows })
      expect((await attempt(limiter)).headers).toEqual({
        'RateLimit-Policy': '"default-1s";q=3;w=1, "default-60s";q=5;w=60',
        RateLimit: '"default-1s";r=2;t=1, "default-60s";r=4;t=60',
      })
    })

    it('refuses as soon as one window is spent and names that window in RateLimit', async () => {
      vi.useFakeTimers({ now: NOW })
      const events: GateEvent[] = []
      const limiter = limiterWith({ windows }, events)
      expect(await admittedCount(limiter, 3)).toBe(3)
      vi.advanceTimersByTime(400)
      expect(await attempt(limiter)).toMatchObject({
        status: 429,
        headers: {
          'Retry-After': '1',
          'RateLimit-Policy': '"default-1s";q=3;w=1, "default-60s";q=5;w=60',
          RateLimit: '"default-1s";r=0;t=1',
        },
      })
      expect(events).toEqual([{ type: 'rate_limited', tenant: 'acme', policy: 'default-1s' }])
    })

    it('charges nothing in the longer windows for a request a shorter window refused', async () => {
      vi.useFakeTimers({ now: NOW })
      const limiter = limiterWith({ windows })
      expect(await admittedCount(limiter, 10)).toBe(3)
      vi.advanceTimersByTime(1000)
      // 3 admitted in the first second; the 7 refusals cost nothing in the 60 s window.
      expect((await attempt(limiter)).headers['RateLimit']).toBe(
        '"default-1s";r=2;t=1, "default-60s";r=1;t=59',
      )
      expect(await admittedCount(limiter, 5)).toBe(1)
      expect((await attempt(limiter)).headers).toMatchObject({
        'Retry-After': '59',
        RateLimit: '"default-60s";r=0;t=59',
      })
    })

    it('uses the names the windows are given', async () => {
      const limiter = limiterWith({
        windows: [
          { points: 3, durationSeconds: 1, name: 'burst' },
          { points: 5, durationSeconds: 60, name: 'sustained' },
        ],
      })
      expect((await attempt(limiter)).headers['RateLimit-Policy']).toBe(
        '"burst";q=3;w=1, "sustained";q=5;w=60',
      )
    })
  })

  describe('header modes', () => {
    const windows = [
      { points: 3, durationSeconds: 1 },
      { points: 5, durationSeconds: 60 },
    ]

    it('sends the legacy X-RateLimit fields for the most restrictive window', async () => {
      vi.useFakeTimers({ now: NOW })
      const limiter = limiterWith({ windows, headers: 'legacy' })
      expect((await attempt(limiter)).headers).toEqual({
        'X-RateLimit-Limit': '3',
        'X-RateLimit-Remaining': '2',
        'X-RateLimit-Reset': String(NOW / 1000 + 1),
      })
      await attempt(limiter)
      vi.advanceTimersByTime(1000)
      await attempt(limiter)
      await attempt(limiter)
      // 1 s window: 1 left; 60 s window: 1 left. On a tie the window that resets last is shown.
      expect((await attempt(limiter)).headers).toEqual({
        'X-RateLimit-Limit': '5',
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset': String(NOW / 1000 + 60),
      })
    })

    it('sends both families with headers: both', async () => {
      vi.useFakeTimers({ now: NOW })
      const limiter = limiterWith({ windows, headers: 'both' })
      expect((await attempt(limiter)).headers).toEqual({
        'RateLimit-Policy': '"default-1s";q=3;w=1, "default-60s";q=5;w=60',
        RateLimit: '"default-1s";r=2;t=1, "default-60s";r=4;t=60',
        'X-RateLimit-Limit': '3',
        'X-RateLimit-Remaining': '2',
        'X-RateLimit-Reset': String(NOW / 1000 + 1),
      })
    })

    it('sends no rate-limit fields with headers: false, and only Retry-After on a 429', async () => {
      const limiter = limiterWith({ windows: [{ points: 1, durationSeconds: 30 }], headers: false })
      expect(await attempt(limiter)).toEqual({ status: 200, headers: {} })
      expect((await attempt(limiter)).headers).toEqual({ 'Retry-After': '30' })
    })
  })

  describe('plans', () => {
    const plans = {
      free: [{ points: 1, durationSeconds: 60 }],
      pro: [{ points: 3, durationSeconds: 60 }],
    }

    it('applies the plan the tenant resolver gave', async () => {
      const limiter = limiterWith({ plans, defaultPlan: 'free' })
      expect(await admittedCount(limiter, 5, { id: 'acme', plan: 'pro' })).toBe(3)
      expect(await admittedCount(limiter, 5, { id: 'globex', plan: 'free' })).toBe(1)
    })

    it('names the policy after the plan', async () => {
      const limiter = limiterWith({ plans, defaultPlan: 'free' })
      expect((await attempt(limiter, { id: 'acme', plan: 'pro' })).headers).toEqual({
        'RateLimit-Policy': '"pro";q=3;w=60',
        RateLimit: '"pro";r=2;t=60',
      })
    })

    it.each([
      ['no plan', undefined],
      ['an unknown plan', 'enterprise'],
      ['constructor', 'constructor'],
      ['__proto__', '__proto__'],
      ['toString', 'toString'],
    ])('applies the default plan to a tenant with %s', async (_name, plan) => {
      const limiter = limiterWith({ plans, defaultPlan: 'free' })
      expect(await admittedCount(limiter, 3, { id: 'acme', plan })).toBe(1)
    })

    it('lets tenantPlans pin a tenant over the plan the resolver gave', async () => {
      const limiter = limiterWith({ plans, defaultPlan: 'free', tenantPlans: { acme: 'pro' } })
      expect(await admittedCount(limiter, 5, { id: 'acme', plan: 'free' })).toBe(3)
      expect(await admittedCount(limiter, 5, { id: 'globex', plan: undefined })).toBe(1)
    })

    it('accepts tenantPlans as a Map and never matches inherited keys', async () => {
      const limiter = limiterWith({
        plans,
        defaultPlan: 'free',
        tenantPlans: new Map([['acme', 'pro']]),
      })
      expect(await admittedCount(limiter, 5, { id: 'constructor', plan: undefined })).toBe(1)
      expect(await admittedCount(limiter, 5, { id: 'acme', plan: undefined })).toBe(3)
    })

    it('keeps separate counters per plan', async () => {
      const limiter = limiterWith({ plans, defaultPlan: 'free' })
      expect(await admittedCount(limiter, 2, { id: 'acme', plan: 'free' })).toBe(1)
      expect(await admittedCount(limiter, 5, { id: 'acme', plan: 'pro' })).toBe(3)
    })
  })

  describe('cost', () => {
    const cost = (request: RequestLike) => (request.url?.startsWith('/export') ? 4 : 1)

    it('charges each request the points its cost function returns', async () => {
      const limiter = limiterWith({ windows: [{ points: 10, durationSeconds: 60 }], cost })
      const exportRequest = { ...get, url: '/export' }
      expect((await attempt(limiter, acme, exportRequest)).headers['RateLimit']).toBe(
        '"default";r=6;t=60',
      )
      expect((await attempt(limiter, acme, exportRequest)).headers['RateLimit']).toBe(
        '"default";r=2;t=60',
      )
      expect((await attempt(limiter, acme, exportRequest)).status).toBe(429)
    })

    it('passes the request and the verified token to the cost function', async () => {
      const spy = vi.fn(() => 1)
      const limiter = limiterWith({ windows: [{ points: 10, durationSeconds: 60 }], cost: spy })
      await limiter.consume(acme, get, token)
      expect(spy).toHaveBeenCalledWith(get, token)
    })

    it.each([0, -1, 1.5, Number.NaN, '2', null, undefined])(
      'rejects with a TypeError when the cost function returns %s',
      async (value) => {
        const limiter = limiterWith({
          windows: [{ points: 10, durationSeconds: 60 }],
          cost: () => value as number,
        })
        await expect(limiter.consume(acme, get, token)).rejects.toThrow(
          /"rateLimit.cost" must return an integer ≥ 1/,
        )
      },
    )
  })

  describe('a cost no window can admit, such as one a client sends in a header', () => {
    // The smallest window by points is the longer one: the cap is the fewest points, not the
    // shortest duration.
    const windows = [
      { points: 100, durationSeconds: 60 },
      { points: 10, durationSeconds: 3600, name: 'hourly' },
    ]

    it.each([11, 1000, Number.MAX_SAFE_INTEGER, 2 ** 53, 1e300, Number.POSITIVE_INFINITY])(
      'refuses a cost of %s, above the smallest window’s points, with 403 ERR_COST_EXCEEDS_LIMIT and counts nothing',
      async (cost) => {
        const events: GateEvent[] = []
        const limiter = limiterWith(
          { windows, cost: (request) => (request.url === '/bulk' ? cost : 1) },
          events,
        )
        const refused = await attempt(limiter, acme, { ...get, url: '/bulk' })
        expect(refused).toMatchObject({
          status: 403,
          headers: { 'RateLimit-Policy': '"default-60s";q=100;w=60, "hourly";q=10;w=3600' },
          error: {
            code: 'ERR_COST_EXCEEDS_LIMIT',
            reason: 'cost_exceeds_limit',
            cost,
            limit: 10,
            detail: { cost, limit: 10, policy: 'hourly' },
          },
        })
        expect(refused.headers['Retry-After']).toBeUndefined()
        expect(events).toEqual([])
        // Nothing was counted: the next request of cost 1 finds every point but its own.
        expect((await attempt(limiter)).headers['RateLimit']).toBe(
          '"default-60s";r=99;t=60, "hourly";r=9;t=3600',
        )
      },
    )

    it('admits a cost equal to the smallest window’s points', async () => {
      const limiter = limiterWith({ windows, cost: () => 10 })
      expect((await attempt(limiter)).status).toBe(200)
      expect((await attempt(limiter)).status).toBe(429)
    })

    it('judges the cost against the plan of the tenant', async () => {
      const limiter = limiterWith({
        plans: {
          free: [{ points: 5, durationSeconds: 60 }],
          pro: [{ points: 50, durationSeconds: 60 }],
        },
        defaultPlan: 'free',
        cost: () => 20,
      })
      expect((await attempt(limiter, { id: 'acme', plan: 'free' })).status).toBe(403)
      expect((await attempt(limiter, { id: 'acme', plan: 'pro' })).status).toBe(200)
    })
  })

  it('keeps tenants apart: one tenant over its limit never refuses another', async () => {
    const limiter = limiterWith({ windows: [{ points: 2, durationSeconds: 60 }] })
    expect(await admittedCount(limiter, 5, acme)).toBe(2)
    const other = await attempt(limiter, { id: 'globex', plan: undefined })
    expect(other).toEqual({
      status: 200,
      headers: { 'RateLimit-Policy': '"default";q=2;w=60', RateLimit: '"default";r=1;t=60' },
    })
  })

  it('admits the tenant again once its window has passed', async () => {
    vi.useFakeTimers({ now: NOW })
    const limiter = limiterWith({ windows: [{ points: 2, durationSeconds: 10 }] })
    expect(await admittedCount(limiter, 3)).toBe(2)
    vi.advanceTimersByTime(10_000)
    expect(await admittedCount(limiter, 3)).toBe(2)
  })

  it('holds no timer for any tenant window: windows end by the clock alone', async () => {
    vi.useFakeTimers({ now: NOW })
    const limiter = limiterWith({
      windows: [
        { points: 5, durationSeconds: 1 },
        { points: 50, durationSeconds: 30 },
      ],
    })
    for (let index = 0; index < 1000; index++) {
      await limiter.consume({ id: `tenant-${index}`, plan: undefined }, get, token)
    }
    // rate-limiter-flexible's memory store, and this one when it kept a timer per window, held
    // 2,000 here.
    expect(vi.getTimerCount()).toBe(0)
    vi.advanceTimersByTime(1000)
    expect((await attempt(limiter, { id: 'tenant-0', plan: undefined })).headers['RateLimit']).toBe(
      '"default-1s";r=4;t=1, "default-30s";r=48;t=29',
    )
    vi.advanceTimersByTime(29_000)
    expect((await attempt(limiter, { id: 'tenant-1', plan: undefined })).headers['RateLimit']).toBe(
      '"default-1s";r=4;t=1, "default-30s";r=49;t=30',
    )
    expect(vi.getTimerCount()).toBe(0)
  })

  describe('maxTenants', () => {
    const tenant = (id: string): ResolvedTenant => ({ id, plan: undefined })

    it('answers 503 ERR_LIMITER_UNAVAILABLE to a new tenant while maxTenants windows have not ended, with Retry-After when the oldest ends', async () => {
      const clock = new ManualClock()
      const events: GateEvent[] = []
      const limiter = limiterWith(
        { windows: [{ points: 3, durationSeconds: 60 }], maxTenants: 2 },
        events,
        clock,
      )
      expect((await attempt(limiter, tenant('a'))).status).toBe(200)
      clock.advance(20_000)
      expect((await attempt(limiter, tenant('b'))).status).toBe(200)
      clock.advance(5_000)
      const refused = await attempt(limiter, tenant('c'))
      expect(refused).toMatchObject({
        status: 503,
        headers: { 'Retry-After': '35' },
        error: {
          code: 'ERR_LIMITER_UNAVAILABLE',
          reason: 'limiter_unavailable',
          cause: { name: 'LimiterStoreError', code: 'ERR_STORE_FULL' },
        },
      })
      expect(events).toContainEqual({
        type: 'limiter_store_error',
        error: expect.objectContaining({ code: 'ERR_STORE_FULL' }),
      })
      // The tenants held are still limited exactly, and c is counted once a window ends.
      expect(await admittedCount(limiter, 5, tenant('a'))).toBe(2)
      clock.advance(35_000)
      expect((await attempt(limiter, tenant('c'))).headers['RateLimit']).toBe('"default";r=2;t=60')
      expect((await attempt(limiter, tenant('a'))).status).toBe(503)
      expect(await admittedCount(limiter, 5, tenant('b'))).toBe(2)
    })

    it('warns once, without an onEvent listener, naming the option to raise', async () => {
      resetWarningsForTests()
      const warnings: Array<Error & { code?: string }> = []
      const onWarning = (warning: Error) => warnings.push(warning)
      process.on('warning', onWarning)
      try {
        const limiter = limiterWith({
          windows: [{ points: 3, durationSeconds: 60 }],
          maxTenants: 1,
        })
        await attempt(limiter, tenant('a'))
        for (let index = 0; index < 20; index++) await attempt(limiter, tenant(`new-${index}`))
        await new Promise((resolve) => setImmediate(resolve))
      } finally {
        process.off('warning', onWarning)
        resetWarningsForTests()
      }
      const full = warnings.filter((warning) => warning.code === LIMITER_FULL_WARNING_CODE)
      expect(full).toHaveLength(1)
      expect(full[0]?.message).toContain('rateLimit.maxTenants (1)')
    })

    it('takes back what the shorter windows counted for a request a full longer window could not count', async () => {
      const clock = new ManualClock()
      const limiter = limiterWith(
        {
          windows: [
            { points: 5, durationSeconds: 1 },
            { points: 50, durationSeconds: 3600 },
          ],
          maxTenants: 1,
        },
        [],
        clock,
      )
      expect((await attempt(limiter, tenant('a'))).status).toBe(200)
      clock.advance(1000)
      // b fits in the 1-second window (a's ended) but not in the hour (a's has not).
      for (let index = 0; index < 3; index++) {
        expect((await attempt(limiter, tenant('b'))).status).toBe(503)
      }
      clock.advance(3_599_000)
      expect((await attempt(limiter, tenant('b'))).headers['RateLimit']).toBe(
        '"default-1s";r=4;t=1, "default-3600s";r=49;t=3600',
      )
    })

    it('never admits a tenant more than its points within one of its windows, whatever the churn of tenants and time', async () => {
      const clock = new ManualClock()
      const points = 3
      const durationMs = 10_000
      const limiter = limiterWith(
        { windows: [{ points, durationSeconds: durationMs / 1000 }], maxTenants: 5 },
        [],
        clock,
      )
      let seed = 11
      const random = () => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
        return seed / 2 ** 31
      }
      const admitted = new Map<string, number[]>()
      const statuses = new Map<number, number>()
      for (let step = 0; step < 5000; step++) {
        clock.advance(Math.floor(random() * 400))
        const id = `t${Math.floor(random() * 20)}`
        const { status } = await attempt(limiter, tenant(id))
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        if (status === 200) admitted.set(id, [...(admitted.get(id) ?? []), clock.now()])
      }
      // Every answer was decided: admitted, over the limit, or not counted while memory was full.
      expect([...statuses.keys()].sort()).toEqual([200, 429, 503])
      // With cost 1, a window opens at an admitted request (a 503 counts nothing): greedy windows
      // over each tenant's admitted times are the limiter's own, and none holds more than points.
      for (const [id, times] of admitted) {
        let start = Number.NEGATIVE_INFINITY
        let inWindow = 0
        for (const at of times) {
          if (at >= start + durationMs) {
            start = at
            inWindow = 0
          }
          inWindow++
          expect(inWindow, `${id}: window opened at ${start}`).toBeLessThanOrEqual(points)
        }
      }
    })
  })

  it('reports each refusal as a rate_limited event with tenant and policy name', async () => {
    const events: GateEvent[] = []
    const limiter = limiterWith({ windows: [{ points: 1, durationSeconds: 60 }] }, events)
    await attempt(limiter)
    await attempt(limiter)
    await attempt(limiter, { id: 'globex', plan: undefined })
    expect(events).toEqual([{ type: 'rate_limited', tenant: 'acme', policy: 'default' }])
  })

  it('keeps 1,000,000 tenants per window unless maxTenants says otherwise', () => {
    expect(
      normalizeRateLimitOptions({ windows: [{ points: 1, durationSeconds: 1 }] }),
    ).toMatchObject({
      maxTenants: 1_000_000,
    })
    expect(
      normalizeRateLimitOptions({ windows: [{ points: 1, durationSeconds: 1 }], maxTenants: 5000 }),
    ).toMatchObject({ maxTenants: 5000 })
  })

  describe('option validation', () => {
    const windows = [{ points: 10, durationSeconds: 60 }]
    const plans = { free: windows }
    it.each<[string, unknown, RegExp]>([
      [
        'options that are not an object',
        'fast',
        /"rateLimit" must be an object \(got a string of length 4\)/,
      ],
      ['an unknown option', { windows, points: 5 }, /"rateLimit.points" is not an option/],
      [
        'neither windows nor plans',
        {},
        /needs exactly one of "windows" \(a single plan\) or "plans"/,
      ],
      ['both windows and plans', { windows, plans }, /needs exactly one of "windows"/],
      [
        'windows that are not an array',
        { windows: windows[0] },
        /"rateLimit.windows" must be an array of 1 to 8 windows/,
      ],
      ['no windows', { windows: [] }, /"rateLimit.windows" must be an array of 1 to 8 windows/],
      [
        'nine windows',
        { windows: Array.from({ length: 9 }, (_, i) => ({ points: 1, durationSeconds: i + 1 })) },
        /1 to 8 windows/,
      ],
      [
        'a window that is not an object',
        { windows: [5] },
        /"rateLimit.windows\[0\]" must be an object \(got number 5\)/,
      ],
      [
        'an unknown window key',
        { windows: [{ points: 1, durationSeconds: 1, duration: 1 }] },
        /"rateLimit.windows\[0\].duration" is not an option/,
      ],
      [
        'missing points',
        { windows: [{ durationSeconds: 60 }] },
        /"rateLimit.windows\[0\].points" must be a whole number from 1/,
      ],
      [
        'zero points',
        { windows: [{ points: 0, durationSeconds: 60 }] },
        /points" must be a whole number from 1/,
      ],
      [
        'fractional points',
        { windows: [{ points: 1.5, durationSeconds: 60 }] },
        /points" must be a whole number/,
      ],
      [
        'points as a string',
        { windows: [{ points: '10', durationSeconds: 60 }] },
        /points" must be a whole number .*got a string/,
      ],
      [
        'infinite points',
        { windows: [{ points: Number.POSITIVE_INFINITY, durationSeconds: 60 }] },
        /points" must be a whole number/,
      ],
      [
        'missing durationSeconds',
        { windows: [{ points: 1 }] },
        /"rateLimit.windows\[0\].durationSeconds" must be a whole number from 1 to 31622400/,
      ],
      [
        'a sub-second window',
        { windows: [{ points: 1, durationSeconds: 0.5 }] },
        /durationSeconds" must be a whole number from 1/,
      ],
      [
        'a zero-length window',
        { windows: [{ points: 1, durationSeconds: 0 }] },
        /durationSeconds" must be a whole number from 1/,
      ],
      [
        'a negative window',
        { windows: [{ points: 1, durationSeconds: -1 }] },
        /durationSeconds" must be a whole number from 1/,
      ],
      [
        'a window over a year',
        { windows: [{ points: 1, durationSeconds: 40_000_000 }] },
        /durationSeconds" must be a whole number from 1 to 31622400/,
      ],
      [
        'two windows of the same duration',
        {
          windows: [
            { points: 1, durationSeconds: 60 },
            { points: 2, durationSeconds: 60 },
          ],
        },
        /two windows with the same durationSeconds/,
      ],
      [
        'two windows of the same name',
        {
          windows: [
            { points: 1, durationSeconds: 1, name: 'a' },
            { points: 2, durationSeconds: 60, name: 'a' },
          ],
        },
        /two windows with the same name/,
      ],
      [
        'a window name with a quote',
        { windows: [{ points: 1, durationSeconds: 1, name: 'a"b' }] },
        /"rateLimit.windows\[0\].name" must match/,
      ],
      [
        'plans that are not an object',
        { plans: [windows] },
        /"rateLimit.plans" must be an object of plan name → windows/,
      ],
      ['no plans', { plans: {} }, /"rateLimit.plans" must be an object/],
      [
        'a plan name with a space',
        { plans: { 'free plan': windows }, defaultPlan: 'free plan' },
        /"rateLimit.defaultPlan" must be a plan name/,
      ],
      [
        'a malformed plan key',
        { plans: { 'free plan': windows, free: windows }, defaultPlan: 'free' },
        /"rateLimit.plans" keys must be plan names matching .* \(got a string of length 9\)/,
      ],
      [
        'a bad window in a plan',
        { plans: { free: [{ points: -1, durationSeconds: 1 }] }, defaultPlan: 'free' },
        /"rateLimit.plans.free\[0\].points"/,
      ],
      [
        'plans without the default plan',
        { plans },
        /"rateLimit.defaultPlan" must name one of the plans \(free\)$/,
      ],
      [
        'a defaultPlan that is not a string',
        { windows, defaultPlan: 1 },
        /"rateLimit.defaultPlan" must be a plan name/,
      ],
      [
        'tenantPlans naming an unknown plan',
        { plans, defaultPlan: 'free', tenantPlans: { acme: 'pro' } },
        /"rateLimit.tenantPlans" values must name one of the plans \(free\)/,
      ],
      [
        'tenantPlans that are an array',
        { windows, tenantPlans: [['acme', 'default']] },
        /"rateLimit.tenantPlans" must be an object or a Map/,
      ],
      ['a cost that is a number', { windows, cost: 2 }, /"rateLimit.cost" must be a function/],
      [
        'an unknown store',
        { windows, store: 'redis' },
        /"rateLimit.store" must be 'memory', \{ redis: client \}, \{ flexible: \(window\) => limiter \} or \{ shared: store \}/,
      ],
      [
        'a store with extra keys',
        { windows, store: { redis: {}, cluster: true } },
        /"rateLimit.store" must be 'memory', \{ redis: client \}, \{ flexible: \(window\) => limiter \} or \{ shared: store \}/,
      ],
      [
        'a URL instead of a client',
        { windows, store: { redis: 'redis://127.0.0.1' } },
        /"rateLimit.store.redis" must be an ioredis Redis or Cluster client/,
      ],
      [
        'a node-redis-like client',
        { windows, store: { redis: { isReady: true, multi() {} } } },
        /node-redis clients are not supported/,
      ],
      [
        'an empty keyPrefix',
        { windows, keyPrefix: '' },
        /"rateLimit.keyPrefix" must be 1 to 64 printable ASCII characters/,
      ],
      ['a keyPrefix with braces', { windows, keyPrefix: 'rl:{x}' }, /without spaces or braces/],
      ['a keyPrefix with a space', { windows, keyPrefix: 'rl x' }, /without spaces or braces/],
      [
        'a storeTimeoutMs of 0',
        { windows, storeTimeoutMs: 0 },
        /"rateLimit.storeTimeoutMs" must be a whole number from 1 to 10000 \(got number 0\)/,
      ],
      [
        'a fractional storeTimeoutMs',
        { windows, storeTimeoutMs: 2.5 },
        /"rateLimit.storeTimeoutMs" must be a whole number/,
      ],
      [
        'a storeTimeoutMs in seconds as a string',
        { windows, storeTimeoutMs: '1s' },
        /"rateLimit.storeTimeoutMs" must be a whole number/,
      ],
      ['a huge storeTimeoutMs', { windows, storeTimeoutMs: 60_000 }, /from 1 to 10000/],
      [
        'a negative storeRetryIntervalMs',
        { windows, storeRetryIntervalMs: -1 },
        /"rateLimit.storeRetryIntervalMs" must be a whole number from 0 to 600000/,
      ],
      [
        'an unknown failure policy',
        { windows, onStoreError: 'fail-open' },
        /"rateLimit.onStoreError" must be one of 'memory', 'allow', 'deny'/,
      ],
      [
        'a boolean failure policy',
        { windows, onStoreError: true },
        /"rateLimit.onStoreError" must be one of/,
      ],
      [
        'a fallbackDivisor of 0',
        { windows, fallbackDivisor: 0 },
        /"rateLimit.fallbackDivisor" must be a whole number from 1/,
      ],
      [
        'a fallbackDivisor that is another string',
        { windows, fallbackDivisor: 'instances' },
        /"rateLimit.fallbackDivisor" must be 'auto' or a whole number from 1 to 10000 \(got a string of length 9\)/,
      ],
      [
        'an unknown header mode',
        { windows, headers: 'draft-7' },
        /"rateLimit.headers" must be one of 'draft-10', 'legacy', 'both', false/,
      ],
      ['headers: true', { windows, headers: true }, /"rateLimit.headers" must be one of/],
      [
        'a maxTenants of 0',
        { windows, maxTenants: 0 },
        /"rateLimit.maxTenants" must be a whole number from 1 to 100000000 \(got number 0\)/,
      ],
      [
        'a fractional maxTenants',
        { windows, maxTenants: 1.5 },
        /"rateLimit.maxTenants" must be a whole number from 1 to 100000000/,
      ],
      [
        'maxTenants as a string',
        { windows, maxTenants: '1000' },
        /"rateLimit.maxTenants" must be a whole number from 1 to 100000000/,
      ],
    ])('throws a TypeError for %s', (_name, options, message) => {
      const create = () => limiterWith(options as RateLimitOptions)
      expect(create).toThrow(TypeError)
      expect(create).toThrow(message)
    })
  })
})
