/**
 * The limiter against a real `redis-server` this file starts on a free loopback port, kills,
 * freezes (SIGSTOP) and restores. Several limiter instances with their own ioredis clients stand
 * for several gateway processes sharing one Redis.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

import { Cluster, Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import type { RateLimitOptions, TenantLimiter } from '../../src/limits/rate-limit.js'
import { createTenantLimiter } from '../../src/limits/rate-limit.js'
import type { ResolvedTenant } from '../../src/limits/tenant.js'
import { get, ManualClock, README_CLIENT_OPTIONS, token } from '../helpers/limiter-fixtures.js'
import type { RedisServer } from '../helpers/redis.js'
import { startRedisServer, waitForReady } from '../helpers/redis.js'

const STORE_TIMEOUT_MS = 50
/**
 * For tests that wait out no deadline: a shared, loaded machine can delay a healthy Redis past
 * 50 ms, which would turn a test of something else into a test of the timeout.
 */
const ROOMY_TIMEOUT_MS = 500

let server: RedisServer
let admin: Redis
let prefixCounter = 0

beforeAll(async () => {
  server = await startRedisServer()
  admin = await server.client()
})

afterAll(async () => {
  await server?.stop()
})

const tenant = (id: string, plan?: string): ResolvedTenant => ({ id, plan })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A fresh key prefix per limiter group, so tests never see each other's counters. */
function nextPrefix(): string {
  prefixCounter += 1
  return `test${prefixCounter}`
}

async function limiterOnServer(
  options: Omit<RateLimitOptions, 'store'>,
  events?: GateEvent[],
  clock?: ManualClock,
): Promise<TenantLimiter> {
  const client = await server.client()
  return createTenantLimiter(
    normalizeRateLimitOptions({ keyPrefix: nextPrefix(), ...options, store: { redis: client } }),
    {
      emit: events === undefined ? undefined : (event) => events.push(event),
      ...(clock === undefined ? {} : { clock }),
    },
  )
}

interface Attempt {
  readonly status: number
  readonly ms: number
  readonly headers: Record<string, string>
  readonly error?: unknown
}

async function attempt(
  limiter: TenantLimiter,
  who = tenant('acme'),
  request = get,
): Promise<Attempt> {
  const started = performance.now()
  try {
    const headers = await limiter.consume(who, request, token)
    return { status: 200, ms: performance.now() - started, headers }
  } catch (error) {
    const { status, headers } = error as { status: number; headers: Record<string, string> }
    return { status, ms: performance.now() - started, headers, error }
  }
}

function countByStatus(attempts: readonly Attempt[]): Record<number, number> {
  const counts: Record<number, number> = {}
  for (const { status } of attempts) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

async function callsOfScripts(): Promise<number> {
  const stats = await admin.info('commandstats')
  let calls = 0
  for (const match of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) {
    calls += Number(match[1])
  }
  return calls
}

async function waitForKeyToExpire(key: string) {
  while ((await admin.exists(key)) === 1) await sleep(25)
  // The in-process block ends a round trip after the key does.
  await sleep(100)
}

describe('createTenantLimiter (Redis store)', () => {
  it('enforces one combined limit across three limiter instances sharing one Redis', async ({
    annotate,
  }) => {
    const keyPrefix = nextPrefix()
    const options = {
      keyPrefix,
      windows: [{ points: 100, durationSeconds: 60 }],
      // Wide deadline and fail-closed: a slow store shows up as 503s, never as extra admissions.
      storeTimeoutMs: 5000,
      onStoreError: 'deny' as const,
    }
    const instances = await Promise.all(
      [1, 2, 3].map(async () =>
        createTenantLimiter(
          normalizeRateLimitOptions({ ...options, store: { redis: await server.client() } }),
          { emit: undefined },
        ),
      ),
    )
    const tenants = ['acme', 'globex', 'initech', 'umbrella']
    const attempts = await Promise.all(
      Array.from({ length: 900 }, (_, index) =>
        attempt(
          instances[index % 3] as TenantLimiter,
          tenant(tenants[index % tenants.length] as string),
        ).then((result) => ({ ...result, tenant: tenants[index % tenants.length] })),
      ),
    )
    for (const id of tenants) {
      const mine = attempts.filter((result) => result.tenant === id)
      expect(countByStatus(mine)).toEqual({ 200: 100, 429: mine.length - 100 })
    }
    await annotate(
      `900 concurrent requests, 4 tenants × 225, 3 instances, limit 100 each: admitted ${tenants
        .map((id) => attempts.filter((r) => r.tenant === id && r.status === 200).length)
        .join('/')}`,
    )
  })

  it('enforces every window exactly across instances', async ({ annotate }) => {
    const keyPrefix = nextPrefix()
    const options: RateLimitOptions = {
      keyPrefix,
      windows: [
        { points: 30, durationSeconds: 2 },
        { points: 70, durationSeconds: 60 },
      ],
      storeTimeoutMs: 5000,
      onStoreError: 'deny',
    }
    const instances = await Promise.all(
      [1, 2].map(async () =>
        createTenantLimiter(
          normalizeRateLimitOptions({ ...options, store: { redis: await server.client() } }),
          { emit: undefined },
        ),
      ),
    )
    const burst = async () => {
      const results = await Promise.all(
        Array.from({ length: 120 }, (_, index) => attempt(instances[index % 2] as TenantLimiter)),
      )
      return results.filter(({ status }) => status === 200).length
    }
    const shortKey = `${keyPrefix}:{acme}:default:2`
    const admitted = [await burst()]
    await waitForKeyToExpire(shortKey)
    admitted.push(await burst())
    await waitForKeyToExpire(shortKey)
    admitted.push(await burst())
    // 30 per 2 s, and 70 per minute in all.
    expect(admitted).toEqual([30, 30, 10])
    // Of 360 requests only the 90 the 2 s window admitted were charged in the 60 s window.
    expect(Number(await admin.get(`${keyPrefix}:{acme}:default:60`))).toBe(90)
    await annotate(
      `3 bursts of 120 across 2 instances (30/2 s, 70/60 s): admitted ${admitted.join(' + ')}`,
    )
  })

  it('sends draft-10 fields with the counts Redis holds', async () => {
    const limiter = await limiterOnServer({ windows: [{ points: 3, durationSeconds: 60 }] })
    const remaining: string[] = []
    for (let index = 0; index < 3; index++) {
      const { status, headers } = await attempt(limiter)
      expect(status).toBe(200)
      expect(headers['RateLimit-Policy']).toBe('"default";q=3;w=60')
      remaining.push(headers['RateLimit']?.replace(/;t=(59|60)$/, ';t=ok') ?? '')
    }
    expect(remaining).toEqual(['"default";r=2;t=ok', '"default";r=1;t=ok', '"default";r=0;t=ok'])
    const refused = await attempt(limiter)
    expect(refused.status).toBe(429)
    expect(refused.headers['Retry-After']).toMatch(/^(59|60)$/)
    expect(refused.headers['RateLimit']).toBe(`"default";r=0;t=${refused.headers['Retry-After']}`)
  })

  it('applies plans and request costs on the shared store', async () => {
    const limiter = await limiterOnServer({
      plans: {
        free: [{ points: 4, durationSeconds: 60 }],
        pro: [{ points: 40, durationSeconds: 60 }],
      },
      defaultPlan: 'free',
      cost: (request) => (request.url === '/export' ? 3 : 1),
    })
    const exportRequest = { ...get, url: '/export' }
    expect((await attempt(limiter, tenant('acme'), exportRequest)).status).toBe(200)
    expect((await attempt(limiter, tenant('acme'), exportRequest)).status).toBe(429)
    expect((await attempt(limiter, tenant('acme'))).status).toBe(429)
    const pro = await attempt(limiter, tenant('globex', 'pro'), exportRequest)
    expect(pro.headers['RateLimit']).toMatch(/^"pro";r=37;t=(59|60)$/)
  })

  it('keeps tenants apart on the shared store', async () => {
    const limiter = await limiterOnServer({ windows: [{ points: 2, durationSeconds: 60 }] })
    await attempt(limiter)
    await attempt(limiter)
    expect((await attempt(limiter)).status).toBe(429)
    expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
  })

  it('never answers a Retry-After past the window, whatever TTL another client gave the key', async () => {
    const keyPrefix = nextPrefix()
    await admin.set(`${keyPrefix}:{acme}:default:60`, 5, 'EX', 3600)
    const limiter = await limiterOnServer({
      keyPrefix,
      windows: [{ points: 5, durationSeconds: 60 }],
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
    })
    expect(await attempt(limiter)).toMatchObject({
      status: 429,
      headers: { 'Retry-After': '60', RateLimit: '"default";r=0;t=60' },
    })
  })

  it('refuses a spent tenant from process memory, without a Redis call', async ({ annotate }) => {
    const events: GateEvent[] = []
    const limiter = await limiterOnServer(
      { windows: [{ points: 5, durationSeconds: 60 }], storeTimeoutMs: STORE_TIMEOUT_MS },
      events,
    )
    for (let index = 0; index < 5; index++) expect((await attempt(limiter)).status).toBe(200)
    const before = await callsOfScripts()
    const refused = await Promise.all(Array.from({ length: 200 }, () => attempt(limiter)))
    expect(countByStatus(refused)).toEqual({ 429: 200 })
    expect(await callsOfScripts()).toBe(before)

    // With Redis stalled, the refusal still comes at once, and nothing falls back.
    server.freeze()
    try {
      // Had it asked Redis, the deadline would have passed and the memory fallback admitted it.
      const whileFrozen = await attempt(limiter)
      expect(whileFrozen.status).toBe(429)
      await annotate(`refusal while Redis is frozen took ${whileFrozen.ms.toFixed(1)} ms`)
    } finally {
      server.thaw()
    }
    expect(events.filter(({ type }) => type !== 'rate_limited')).toEqual([])
  })

  describe.each(['memory', 'allow', 'deny'] as const)('with onStoreError: %s', (policy) => {
    const options = {
      windows: [{ points: 3, durationSeconds: 60 }],
      storeTimeoutMs: STORE_TIMEOUT_MS,
      storeRetryIntervalMs: 200,
      onStoreError: policy,
    }

    function expectPolicyApplied(attempts: readonly Attempt[]) {
      if (policy === 'memory') {
        // A fresh per-process window: 3 admitted, then 429 from process memory.
        expect(countByStatus(attempts)).toEqual({ 200: 3, 429: attempts.length - 3 })
      } else if (policy === 'allow') {
        expect(countByStatus(attempts)).toEqual({ 200: attempts.length })
        for (const { headers } of attempts) {
          expect(headers).toEqual({ 'RateLimit-Policy': '"default";q=3;w=60' })
        }
      } else {
        expect(countByStatus(attempts)).toEqual({ 503: attempts.length })
        for (const { error } of attempts) {
          expect(error).toMatchObject({
            code: 'ERR_LIMITER_UNAVAILABLE',
            headers: { 'Retry-After': '1' },
          })
        }
      }
    }

    /** Probes until the limiter is back on Redis, letting the retry interval pass on `clock`. */
    async function recover(limiter: TenantLimiter, events: GateEvent[], clock: ManualClock) {
      const until = Date.now() + 10_000
      while (!events.some((event) => event.type === 'limiter_fallback' && !event.engaged)) {
        if (Date.now() > until) throw new Error('the limiter did not return to Redis within 10 s')
        clock.advance(options.storeRetryIntervalMs)
        const probe = attempt(limiter, tenant('probe'))
        // A probe written before the client saw the restart would otherwise wait forever.
        await new Promise((resolve) => setImmediate(resolve))
        clock.advance(STORE_TIMEOUT_MS)
        await probe
        await sleep(50)
      }
    }

    it('applies the policy at once when Redis is killed, then returns to Redis after a restart', async () => {
      const events: GateEvent[] = []
      const clock = new ManualClock()
      const limiter = await limiterOnServer(options, events, clock)
      const keyPrefix = `test${prefixCounter}`
      expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
      await server.kill()
      try {
        // The limiter's clock stands still: every request is answered without waiting for its
        // deadline (a closed connection fails the one in flight, the next ones are not sent).
        const attempts: Attempt[] = []
        for (let index = 0; index < 8; index++) attempts.push(await attempt(limiter))
        expectPolicyApplied(attempts)
        expect(clock.pendingTimers).toBe(0)
        expect(events.filter(({ type }) => type === 'limiter_fallback')).toEqual([
          { type: 'limiter_fallback', engaged: true, policy },
        ])
        expect(events.filter(({ type }) => type === 'limiter_store_error')).toHaveLength(1)
      } finally {
        await server.restart()
        await waitForReady(admin)
      }
      await recover(limiter, events, clock)
      expect(events.filter(({ type }) => type === 'limiter_fallback')).toEqual([
        { type: 'limiter_fallback', engaged: true, policy },
        { type: 'limiter_fallback', engaged: false, policy },
      ])
      // Counting in Redis again (the restarted server started empty).
      expect((await attempt(limiter)).headers['RateLimit']).toMatch(/^"default";r=2;t=(59|60)$/)
      expect(await admin.get(`${keyPrefix}:{acme}:default:60`)).toBe('1')
    })

    it('never holds a request past the deadline while Redis is frozen, then recovers on thaw', async ({
      annotate,
    }) => {
      const events: GateEvent[] = []
      const clock = new ManualClock()
      const limiter = await limiterOnServer(options, events, clock)
      const keyPrefix = `test${prefixCounter}`
      expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
      server.freeze()
      const attempts: Attempt[] = []
      const bursts: Record<number, number>[] = []
      try {
        // The first request waits for its deadline: the limiter's clock passing it answers it.
        const first = attempt(limiter)
        expect(clock.pendingTimers).toBe(1)
        clock.advance(STORE_TIMEOUT_MS)
        attempts.push(await first)
        // Within the retry interval the store is skipped: answered with the clock standing still.
        for (let index = 1; index < 8; index++) attempts.push(await attempt(limiter))
        // Then once per interval a burst of tenants: one request probes the frozen store, the
        // others wait for the probe, and one deadline answers them all.
        for (let round = 0; round < 5; round++) {
          clock.advance(options.storeRetryIntervalMs)
          const burst = Promise.all(
            Array.from({ length: 20 }, (_, index) =>
              attempt(limiter, tenant(`t${round}-${index}`)),
            ),
          )
          expect(clock.pendingTimers).toBe(1)
          clock.advance(STORE_TIMEOUT_MS)
          bursts.push(countByStatus(await burst))
        }
      } finally {
        server.thaw()
      }
      expectPolicyApplied(attempts)
      const expected = policy === 'deny' ? { 503: 20 } : { 200: 20 }
      expect(bursts).toEqual(Array(5).fill(expected))
      await annotate(
        `Redis frozen: 8 requests, then 5 bursts of 20 tenants, each answered once the limiter's clock passed one deadline (${STORE_TIMEOUT_MS} ms)`,
      )
      expect(events.filter(({ type }) => type === 'limiter_fallback')).toEqual([
        { type: 'limiter_fallback', engaged: true, policy },
      ])
      expect(events.find(({ type }) => type === 'limiter_store_error')).toMatchObject({
        error: { name: 'LimiterStoreError', code: 'ERR_STORE_TIMEOUT' },
      })
      await recover(limiter, events, clock)
      const before = Number(await admin.get(`${keyPrefix}:{acme}:default:60`))
      await attempt(limiter)
      expect(Number(await admin.get(`${keyPrefix}:{acme}:default:60`))).toBe(before + 1)
    })

    it('lets the requests that arrive while a probe is in flight wait for its answer', async () => {
      const events: GateEvent[] = []
      const clock = new ManualClock()
      const client = await server.client()
      const keyPrefix = nextPrefix()
      const limiter = createTenantLimiter(
        normalizeRateLimitOptions({
          ...options,
          windows: [{ points: 100, durationSeconds: 60 }],
          keyPrefix,
          storeRetryIntervalMs: 1000,
          store: { redis: client },
        }),
        { emit: (event) => events.push(event), clock },
      )
      expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
      await server.kill()
      try {
        expect((await attempt(limiter)).status).toBe(policy === 'deny' ? 503 : 200)
      } finally {
        await server.restart()
        await waitForReady(client)
        await waitForReady(admin)
      }
      clock.advance(1000)
      const burst = Promise.all(Array.from({ length: 60 }, () => attempt(limiter)))
      // One of them probes the store; the 59 others send nothing yet and wait for its answer.
      expect(clock.pendingTimers).toBe(1)
      expect(countByStatus(await burst)).toEqual({ 200: 60 })
      // All 60 counted in Redis (restarted empty), none decided by the fallback.
      expect(await admin.get(`${keyPrefix}:{acme}:default:60`)).toBe('60')
      expect(events.filter(({ type }) => type === 'limiter_fallback')).toEqual([
        { type: 'limiter_fallback', engaged: true, policy },
        { type: 'limiter_fallback', engaged: false, policy },
      ])
    })
  })

  it('counts nothing in Redis for the commands that timed out while it was frozen, once it resumes', async ({
    annotate,
  }) => {
    const events: GateEvent[] = []
    const keyPrefix = nextPrefix()
    const client = await server.client()
    const limiter = createTenantLimiter(
      normalizeRateLimitOptions({
        keyPrefix,
        windows: [{ points: 100, durationSeconds: 60 }],
        storeTimeoutMs: STORE_TIMEOUT_MS,
        // Every request tries the store: each one leaves a command in the frozen server's socket.
        storeRetryIntervalMs: 0,
        onStoreError: 'deny',
        store: { redis: client },
      }),
      { emit: (event) => events.push(event) },
    )
    const key = `${keyPrefix}:{acme}:default:60`
    expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
    server.freeze()
    const whileFrozen: Attempt[] = []
    try {
      for (let index = 0; index < 8; index++) whileFrozen.push(await attempt(limiter))
    } finally {
      server.thaw()
    }
    // Replies come in order on one connection: once PING answers, Redis has run the 8 commands.
    expect(await client.ping()).toBe('PONG')
    const afterThaw = await admin.get(key)
    expect(afterThaw).toBeNull()
    expect(countByStatus(whileFrozen)).toEqual({ 503: 8 })
    expect(events.find(({ type }) => type === 'limiter_store_error')).toMatchObject({
      error: { code: 'ERR_STORE_TIMEOUT' },
    })
    // Counting again from zero: the next request is the tenant's first point.
    expect((await attempt(limiter)).status).toBe(200)
    expect(await admin.get(key)).toBe('1')
    await annotate(
      `8 requests timed out while Redis was frozen; counter after thaw: ${afterThaw ?? 'absent'}; after one more request: 1`,
    )
  })

  it('fails the request in flight over at once when Redis dies, without waiting for the deadline', async ({
    annotate,
  }) => {
    const events: GateEvent[] = []
    const limiter = await limiterOnServer(
      {
        windows: [{ points: 10, durationSeconds: 60 }],
        // Far beyond the test's own timeout: only the closed connection can end the wait.
        storeTimeoutMs: 10_000,
        storeRetryIntervalMs: 60_000,
        onStoreError: 'deny',
      },
      events,
    )
    expect((await attempt(limiter)).status).toBe(200)
    try {
      // Frozen first, so that the command is certainly in flight (unanswered) when Redis dies.
      server.freeze()
      const inFlight = attempt(limiter)
      const killedAt = performance.now()
      await server.kill()
      const refused = await inFlight
      expect(refused.status).toBe(503)
      expect(events.find(({ type }) => type === 'limiter_store_error')).toMatchObject({
        error: { code: 'ERR_STORE_CLOSED' },
      })
      await annotate(
        `request in flight when Redis died answered ${(performance.now() - killedAt).toFixed(1)} ms after the kill (storeTimeoutMs 10000)`,
      )
    } finally {
      await server.restart()
      await waitForReady(admin)
    }
  })

  it('divides the limit between the instances seen on the store while it is down', async ({
    annotate,
  }) => {
    const keyPrefix = nextPrefix()
    const options = {
      keyPrefix,
      windows: [{ points: 5, durationSeconds: 60 }],
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
      storeRetryIntervalMs: 60_000,
    }
    const instances = await Promise.all(
      [1, 2].map(async () =>
        createTenantLimiter(
          normalizeRateLimitOptions({ ...options, store: { redis: await server.client() } }),
          { emit: undefined },
        ),
      ),
    )
    const [first, second] = instances as [TenantLimiter, TenantLimiter]
    // Each instance announces itself at most once a second and learns the count from the answer:
    // the first one to announce sees the other at its next announcement.
    await attempt(first, tenant('warm-up'))
    await attempt(second, tenant('warm-up'))
    const seen = () => admin.zcard(`${keyPrefix}:instances`)
    expect(await seen()).toBe(2)
    await sleep(1100)
    await attempt(first, tenant('warm-up'))
    await attempt(second, tenant('warm-up'))
    await admin.ping()
    await server.kill()
    try {
      const admitted: number[] = []
      for (const limiter of [first, second]) {
        const attempts: Attempt[] = []
        for (let index = 0; index < 6; index++) attempts.push(await attempt(limiter))
        expect(countByStatus(attempts)).toEqual({ 200: 3, 429: 3 })
        admitted.push(attempts.filter(({ status }) => status === 200).length)
      }
      await annotate(
        `Redis down, limit 5, 2 instances seen: admitted ${admitted.join(' + ')} (ceil(5 / 2) each)`,
      )
    } finally {
      await server.restart()
      await waitForReady(admin)
    }
  })

  it('admits ceil(points / fallbackDivisor) per instance while Redis is down, with a set divisor', async () => {
    const limiter = await limiterOnServer({
      windows: [{ points: 5, durationSeconds: 60 }],
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
      storeRetryIntervalMs: 60_000,
      fallbackDivisor: 3,
    })
    expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
    await server.kill()
    try {
      const attempts: Attempt[] = []
      for (let index = 0; index < 4; index++) attempts.push(await attempt(limiter))
      expect(countByStatus(attempts)).toEqual({ 200: 2, 429: 2 })
      // The fields count against the share this instance admits, not the whole limit.
      expect(attempts[1]?.headers['RateLimit']).toMatch(/^"default";r=0;t=(59|60)$/)
    } finally {
      await server.restart()
      await waitForReady(admin)
    }
  })

  it('uses the answer Redis gave in time even when the event loop was blocked past the deadline', async () => {
    const events: GateEvent[] = []
    const limiter = await limiterOnServer(
      { windows: [{ points: 3, durationSeconds: 60 }], storeTimeoutMs: ROOMY_TIMEOUT_MS },
      events,
    )
    const keyPrefix = `test${prefixCounter}`
    expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
    const pending = Promise.all(Array.from({ length: 5 }, () => attempt(limiter)))
    // Blocked, as by CPU work, until Redis has run all 5 and the deadline is long past: the
    // answers wait unread in the socket while every deadline timer is overdue.
    const started = performance.now()
    let counted = 0
    // Gives up after 10 s (Redis called the commands late): the counts below then fail.
    while (
      (counted < 5 || performance.now() - started < 2 * ROOMY_TIMEOUT_MS) &&
      performance.now() - started < 10_000
    ) {
      const reply = execFileSync('redis-cli', [
        '-p',
        String(server.port),
        'GET',
        `${keyPrefix}:{acme}:default:60`,
      ])
      counted = Number(reply.toString().trim()) || 0
    }
    expect(countByStatus(await pending)).toEqual({ 200: 3, 429: 2 })
    expect(events.filter(({ type }) => type !== 'rate_limited')).toEqual([])
  })

  describe('with clocks that disagree with Redis', () => {
    afterEach(() => {
      vi.useRealTimers()
    })
    // Only Date is faked, and it keeps running: timers, sockets and Redis stay real.
    const shiftClock = (ms: number) => {
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
      vi.setSystemTime(Date.now() + ms)
    }

    it('still counts nothing for commands that timed out while Redis was frozen when our clock runs 5 s ahead', async () => {
      shiftClock(5000)
      const client = await server.client()
      const keyPrefix = nextPrefix()
      const limiter = createTenantLimiter(
        normalizeRateLimitOptions({
          keyPrefix,
          windows: [{ points: 100, durationSeconds: 60 }],
          storeTimeoutMs: STORE_TIMEOUT_MS,
          storeRetryIntervalMs: 0,
          onStoreError: 'deny',
          store: { redis: client },
        }),
        { emit: undefined },
      )
      // The first answer teaches the limiter where Redis's clock is.
      expect((await attempt(limiter)).status).toBe(200)
      server.freeze()
      const whileFrozen: Attempt[] = []
      try {
        for (let index = 0; index < 3; index++) whileFrozen.push(await attempt(limiter))
      } finally {
        server.thaw()
      }
      expect(await client.ping()).toBe('PONG')
      // Taken at face value, our clock would have put the deadline 5 s later in Redis's clock.
      expect(await admin.get(`${keyPrefix}:{acme}:default:60`)).toBe('1')
      expect(countByStatus(whileFrozen)).toEqual({ 503: 3 })
    })

    it('corrects its estimate after our clock steps back 5 s, and counts the request once', async () => {
      const events: GateEvent[] = []
      const limiter = await limiterOnServer(
        { windows: [{ points: 100, durationSeconds: 60 }], storeTimeoutMs: ROOMY_TIMEOUT_MS },
        events,
      )
      const keyPrefix = `test${prefixCounter}`
      expect((await attempt(limiter, tenant('globex'))).status).toBe(200)
      shiftClock(-5000)
      // Redis calls the first command late; its early answer shows the estimate is off.
      expect((await attempt(limiter)).status).toBe(200)
      expect((await attempt(limiter)).status).toBe(200)
      expect(events).toEqual([])
      expect(await admin.get(`${keyPrefix}:{acme}:default:60`)).toBe('2')
    })
  })

  it('treats error replies from Redis as a store failure, never as a 429 or a crash', async () => {
    const events: GateEvent[] = []
    const limiter = await limiterOnServer(
      {
        windows: [{ points: 2, durationSeconds: 60 }],
        storeTimeoutMs: STORE_TIMEOUT_MS,
        storeRetryIntervalMs: 0,
      },
      events,
    )
    // Redis answers every write with an OOM error reply.
    await admin.config('SET', 'maxmemory', '1')
    const attempts: Attempt[] = []
    try {
      for (let index = 0; index < 4; index++) attempts.push(await attempt(limiter))
    } finally {
      await admin.config('SET', 'maxmemory', '0')
    }
    // The per-process fallback window: 2 admitted, then 429 for being over the limit.
    expect(countByStatus(attempts)).toEqual({ 200: 2, 429: 2 })
    const storeError = events.find(({ type }) => type === 'limiter_store_error')
    expect(storeError).toMatchObject({ error: { message: expect.stringMatching(/^OOM/) } })
    expect((await attempt(limiter)).headers['RateLimit']).toMatch(/^"default";r=1;t=(59|60)$/)
  })

  it('reports store errors at most once a second, however many requests fail', async () => {
    const events: GateEvent[] = []
    const limiter = await limiterOnServer(
      {
        windows: [{ points: 1000, durationSeconds: 60 }],
        storeTimeoutMs: STORE_TIMEOUT_MS,
        // Every request tries the store: the worst case for event volume.
        storeRetryIntervalMs: 0,
      },
      events,
    )
    await server.kill()
    try {
      const started = Date.now()
      let failedAttempts = 0
      while (Date.now() - started < 1500) {
        await attempt(limiter)
        failedAttempts++
        await sleep(5)
      }
      expect(failedAttempts).toBeGreaterThan(100)
      expect(
        events.filter(({ type }) => type === 'limiter_store_error').length,
      ).toBeLessThanOrEqual(2)
      expect(events.filter(({ type }) => type === 'limiter_fallback')).toHaveLength(1)
    } finally {
      await server.restart()
      await waitForReady(admin)
    }
  })
})

describe('the limiter with the ioredis client settings the documentation recommends', () => {
  it('are the settings docs/operating.md shows', () => {
    const readme = readFileSync(new URL('../../docs/operating.md', import.meta.url), 'utf8')
    const block = /const redis = new Redis\(process\.env\.REDIS_URL!, \{\n([\s\S]*?)\n\}\)/.exec(
      readme.slice(readme.indexOf('**Redis in production**')),
    )?.[1]
    expect(block).toBeDefined()
    const shown = Object.fromEntries(
      (block ?? '').split('\n').map((line) => {
        const [, name, value] = /^\s*(\w+): ([^,]+),?(?:\s*\/\/.*)?$/.exec(line) ?? []
        return [name, JSON.parse(value ?? 'null')]
      }),
    )
    expect(shown).toEqual(README_CLIENT_OPTIONS)
  })

  it('admit exactly the limit when the event loop stalls until long after Redis answered', async ({
    annotate,
  }) => {
    const client = new Redis({ host: '127.0.0.1', port: server.port, ...README_CLIENT_OPTIONS })
    client.on('error', () => {})
    try {
      await waitForReady(client)
      const events: GateEvent[] = []
      const keyPrefix = nextPrefix()
      const limiter = createTenantLimiter(
        normalizeRateLimitOptions({
          keyPrefix,
          windows: [{ points: 50, durationSeconds: 60 }],
          // Roomy, so that Redis itself, starved of CPU on a shared machine, is never late: the
          // stall below is what this tests, and it lasts twice as long.
          storeTimeoutMs: ROOMY_TIMEOUT_MS,
          store: { redis: client },
        }),
        { emit: (event) => events.push(event) },
      )
      const key = `${keyPrefix}:{acme}:default:60`
      expect(
        countByStatus(await Promise.all(Array.from({ length: 30 }, () => attempt(limiter)))),
      ).toEqual({ 200: 30 })
      const burst = Promise.all(Array.from({ length: 100 }, () => attempt(limiter)))
      // A deterministic stall: the event loop is held until Redis has run all 100 commands and
      // at least twice the deadline has passed (the stimulus, never asserted). Every timer is
      // overdue when the loop is free again, and every answer waits unread in the socket.
      const started = performance.now()
      let counted = 0
      while (
        (counted < 130 || performance.now() - started < 2 * ROOMY_TIMEOUT_MS) &&
        performance.now() - started < 10_000
      ) {
        const reply = execFileSync('redis-cli', ['-p', String(server.port), 'GET', key])
        counted = Number(reply.toString().trim()) || 0
      }
      const statuses = countByStatus(await burst)
      await annotate(
        `limit 50, 30 spent, then 100 concurrent requests with the loop held ${(performance.now() - started).toFixed(0)} ms: ${JSON.stringify(statuses)}`,
      )
      // 20 points were left: Redis's answers decide, none falls back to a fresh memory window.
      expect(statuses).toEqual({ 200: 20, 429: 80 })
      expect(events.filter(({ type }) => type !== 'rate_limited')).toEqual([])
      expect(await admin.get(key)).toBe('130')
    } finally {
      client.disconnect()
    }
  })

  it.each([
    [
      'a client with commandTimeout',
      () => new Redis({ lazyConnect: true, commandTimeout: 200 }),
      /"rateLimit.store.redis" must be a client without ioredis's "commandTimeout" \(got commandTimeout: 200\)\. .*redis\.duplicate\(\{ commandTimeout: undefined \}\)$/,
    ],
    [
      'a client with socketTimeout',
      () => new Redis({ lazyConnect: true, socketTimeout: 1000 }),
      /"rateLimit.store.redis" must be a client without ioredis's "socketTimeout" \(got socketTimeout: 1000\)\. .*redis\.duplicate\(\{ socketTimeout: undefined \}\)$/,
    ],
    [
      'a Cluster whose nodes have commandTimeout',
      () =>
        new Cluster([{ host: '127.0.0.1', port: server.port }], {
          lazyConnect: true,
          redisOptions: { commandTimeout: 200 },
        }),
      /"rateLimit.store.redis" must be a client without ioredis's "commandTimeout" \(got redisOptions\.commandTimeout: 200\)\. .*a second Cluster whose redisOptions leave out commandTimeout$/,
    ],
  ])(
    'refuses at creation %s, which gives up on commands Redis has counted',
    (_name, client, message) => {
      const create = () =>
        normalizeRateLimitOptions({
          windows: [{ points: 50, durationSeconds: 60 }],
          store: { redis: client() },
        })
      expect(create).toThrow(TypeError)
      expect(create).toThrow(message)
    },
  )

  it('accepts a duplicate of such a client without the option', () => {
    const shared = new Redis({ lazyConnect: true, commandTimeout: 200 })
    const own = shared.duplicate({ commandTimeout: undefined })
    expect(() =>
      normalizeRateLimitOptions({
        windows: [{ points: 1, durationSeconds: 1 }],
        store: { redis: own },
      }),
    ).not.toThrow()
  })
})
