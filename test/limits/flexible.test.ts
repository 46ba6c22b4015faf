/**
 * `rateLimit.store: { flexible }`: rate-limiter-flexible limiters built by the application's
 * factory, against real stores started by the tests (PostgreSQL from initdb, memcached, and
 * redis-server for `RateLimiterRedis` beside tollgate's own script). Never mocks.
 */
import Memcached from 'memcached'
import {
  RateLimiterMemcache,
  RateLimiterPostgres,
  RateLimiterRedis,
  type RateLimiterRes,
} from 'rate-limiter-flexible'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import type {
  FlexibleLimiterFactory,
  FlexibleWindow,
  RateLimitOptions,
  TenantLimiter,
} from '../../src/limits/rate-limit.js'
import { createTenantLimiter } from '../../src/limits/rate-limit.js'
import type { ResolvedTenant } from '../../src/limits/tenant.js'
import type { RequestLike } from '../../src/types.js'
import { POSTGRES_TABLE } from '../helpers/gateway-process.js'
import { get, ManualClock, token } from '../helpers/limiter-fixtures.js'
import type { MemcachedServer } from '../helpers/memcached.js'
import { startMemcachedServer } from '../helpers/memcached.js'
import type { PostgresServer } from '../helpers/postgres.js'
import { startPostgresServer } from '../helpers/postgres.js'
import type { RedisServer } from '../helpers/redis.js'
import { startRedisServer } from '../helpers/redis.js'

const tenant = (id: string, plan?: string): ResolvedTenant => ({ id, plan })
/** Generous: a shared 2-core machine must not turn a slow answer into a fallback here. */
const ROOMY_TIMEOUT_MS = 5000
let prefixes = 0
const nextPrefix = () => `flex${++prefixes}`

/** A request that costs 2 points (`bigCost`); every other costs 1. */
const BIG: RequestLike = { ...get, url: '/big' }
const bigCost = (request: RequestLike) => (request.url === '/big' ? 2 : 1)

type Status = number
async function statusOf(limiter: TenantLimiter, id: string, request = get): Promise<Status> {
  return limiter.consume(tenant(id), request, token).then(
    () => 200,
    (error: { status?: number }) => error.status ?? 500,
  )
}

async function burst(limiters: readonly TenantLimiter[], id: string, requests: number) {
  const statuses = await Promise.all(
    Array.from({ length: requests }, (_, index) =>
      statusOf(limiters[index % limiters.length] as TenantLimiter, id),
    ),
  )
  return {
    admitted: statuses.filter((status) => status === 200).length,
    refused: statuses.filter((status) => status === 429).length,
    other: statuses.filter((status) => status !== 200 && status !== 429),
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

async function createTable(server: PostgresServer): Promise<void> {
  const pool = server.pool()
  await new Promise<void>((resolve, reject) => {
    new RateLimiterPostgres(
      { storeClient: pool, tableName: POSTGRES_TABLE, points: 1, duration: 1 },
      (error?: unknown) => (error === undefined || error === null ? resolve() : reject(error)),
    )
  })
}

function postgresFactory(pool: unknown): FlexibleLimiterFactory {
  return (window) =>
    new RateLimiterPostgres({
      storeClient: pool,
      tableName: POSTGRES_TABLE,
      tableCreated: true,
      points: window.points,
      duration: window.durationSeconds,
      keyPrefix: window.keyPrefix,
    })
}

describe('rateLimit.store: { flexible } (options)', () => {
  const windows = [{ points: 5, durationSeconds: 60 }]

  it('refuses a store.flexible that is not a function, naming the option', () => {
    expect(() => normalizeRateLimitOptions({ windows, store: { flexible: 'postgres' } })).toThrow(
      /"rateLimit\.store\.flexible" must be a function \(window\) => a rate-limiter-flexible limiter \(got a string of length 8\)/,
    )
  })

  it('refuses a factory whose limiter counts other points than the window', () => {
    const factory = () => ({ points: 10, duration: 60, consume: async () => ({}) })
    expect(() => normalizeRateLimitOptions({ windows, store: { flexible: factory } })).toThrow(
      /"rateLimit\.store\.flexible\(default, 60s\)" must return a limiter of this window: points 5, duration 60 \(got points number 10, duration number 60\)/,
    )
  })

  it('refuses a factory that returns something without consume()', () => {
    expect(() =>
      normalizeRateLimitOptions({ windows, store: { flexible: () => ({ points: 5 }) } }),
    ).toThrow(/must return a rate-limiter-flexible limiter \(with consume\(key, points\)\)/)
  })

  it('refuses a factory that returns the same limiter for two windows', () => {
    const one = { points: 5, durationSeconds: 60 }
    const shared = { points: 5, duration: 60, consume: async () => ({}) }
    expect(() =>
      normalizeRateLimitOptions({
        plans: { free: [one], pro: [one] },
        defaultPlan: 'free',
        store: { flexible: () => shared },
      }),
    ).toThrow(/"rateLimit\.store\.flexible\(pro, 60s\)" must return a new limiter for each window/)
  })

  it('refuses two RateLimiterCluster limiters under one keyPrefix (the primary would merge their windows)', () => {
    // The name rate-limiter-flexible's RateLimiterCluster has; constructing the real one needs a
    // cluster worker's IPC channel (test/limits/flexible-cluster.test.ts runs it for real).
    class RateLimiterClusterWorker {
      readonly points: number
      readonly duration: number
      readonly keyPrefix: string
      constructor(points: number, duration: number, keyPrefix: string) {
        this.points = points
        this.duration = duration
        this.keyPrefix = keyPrefix
      }
      consume = async () => ({})
    }
    expect(() =>
      normalizeRateLimitOptions({
        windows: [
          { points: 5, durationSeconds: 1 },
          { points: 50, durationSeconds: 60 },
        ],
        store: {
          flexible: (window: FlexibleWindow) =>
            new RateLimiterClusterWorker(window.points, window.durationSeconds, window.keyPrefix),
        },
      }),
    ).toThrow(
      /must give each RateLimiterCluster its own keyPrefix \(got a string of length 11 twice\)/,
    )
  })

  it('calls the factory once per window of every plan, with the key prefix', () => {
    const seen: unknown[] = []
    normalizeRateLimitOptions({
      plans: {
        free: [{ points: 5, durationSeconds: 60 }],
        pro: windows.concat({ points: 9, durationSeconds: 1 }),
      },
      keyPrefix: 'gw',
      store: {
        flexible: (window: FlexibleWindow) => {
          seen.push(window)
          return {
            points: window.points,
            duration: window.durationSeconds,
            consume: async () => ({}),
          }
        },
      },
      defaultPlan: 'free',
    })
    expect(seen).toEqual([
      { plan: 'free', points: 5, durationSeconds: 60, keyPrefix: 'gw' },
      { plan: 'pro', points: 9, durationSeconds: 1, keyPrefix: 'gw' },
      { plan: 'pro', points: 5, durationSeconds: 60, keyPrefix: 'gw' },
    ])
  })
})

/**
 * A limiter of the window that answers `odd` for tenant acme's key, and a well-formed
 * `RateLimiterRes` (1 point consumed, the whole window left) for anyone else's.
 */
function oddLimiter(window: FlexibleWindow, odd: unknown, calls: string[]) {
  return {
    points: window.points,
    duration: window.durationSeconds,
    consume(key: string, points = 1) {
      calls.push(key)
      if (key.includes('{acme}')) return Promise.resolve(odd)
      return Promise.resolve({
        consumedPoints: points,
        msBeforeNext: window.durationSeconds * 1000,
      })
    },
  }
}

describe('rateLimit.store: { flexible } answering what no window can', () => {
  it('caps an msBeforeNext past the window at the window: Retry-After 60, not 3600', async () => {
    const calls: string[] = []
    const limiter = limiterWith({
      windows: [{ points: 1, durationSeconds: 60 }],
      store: {
        flexible: (window) =>
          oddLimiter(window, { consumedPoints: 2, msBeforeNext: 3_600_000 }, calls),
      },
    })
    const refused = await limiter.consume(tenant('acme'), get, token).catch((error) => error)
    expect(refused).toMatchObject({ status: 429, headers: { 'Retry-After': '60' } })
  })

  it.each<[string, unknown]>([
    ['no RateLimiterRes', undefined],
    ['consumedPoints that are NaN', { consumedPoints: Number.NaN, msBeforeNext: 1000 }],
    ['consumedPoints below the points added', { consumedPoints: 0, msBeforeNext: 1000 }],
    ['an infinite msBeforeNext', { consumedPoints: 1, msBeforeNext: Number.POSITIVE_INFINITY }],
  ])(
    'fails only the request whose limiter answered %s: the fallback decides it, the store stays in use',
    async (_name, odd) => {
      const events: GateEvent[] = []
      const calls: string[] = []
      const limiter = limiterWith(
        {
          windows: [{ points: 5, durationSeconds: 60 }],
          store: { flexible: (window) => oddLimiter(window, odd, calls) },
          onStoreError: 'deny',
        },
        { events },
      )
      expect(await statusOf(limiter, 'acme')).toBe(503)
      expect(events).toContainEqual({
        type: 'limiter_store_error',
        error: expect.objectContaining({ name: 'LimiterStoreError', code: 'ERR_STORE_ANSWER' }),
      })
      expect(await statusOf(limiter, 'globex')).toBe(200)
      expect(calls).toEqual(['{acme}:default:60', '{globex}:default:60'])
      expect(events.filter((event) => event.type === 'limiter_fallback')).toEqual([])
    },
  )
})

describe('rateLimit.store: { flexible } on PostgreSQL (RateLimiterPostgres)', () => {
  let server: PostgresServer

  beforeAll(async () => {
    server = await startPostgresServer()
    await createTable(server)
  }, 60_000)
  afterAll(async () => {
    await server?.stop()
  })

  it('admits exactly the limit across two limiters sharing one Postgres', async () => {
    const options = {
      windows: [{ points: 10, durationSeconds: 60 }],
      keyPrefix: nextPrefix(),
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
    }
    const limiters = [server.pool(), server.pool()].map((pool) =>
      limiterWith({ ...options, store: { flexible: postgresFactory(pool) } }),
    )
    expect(await burst(limiters, 'acme', 40)).toEqual({ admitted: 10, refused: 30, other: [] })
  })

  it('answers 429 with Retry-After from msBeforeNext and the RateLimit fields', async () => {
    const limiter = limiterWith({
      windows: [{ points: 1, durationSeconds: 60 }],
      keyPrefix: nextPrefix(),
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
      store: { flexible: postgresFactory(server.pool()) },
    })
    const admitted = await limiter.consume(tenant('acme'), get, token)
    expect(admitted).toMatchObject({
      'RateLimit-Policy': '"default";q=1;w=60',
      RateLimit: expect.stringMatching(/^"default";r=0;t=(59|60)$/),
    })
    const refusal = await limiter.consume(tenant('acme'), get, token).catch((error) => error)
    expect(refusal).toMatchObject({ code: 'ERR_RATE_LIMITED', status: 429 })
    expect(Number(refusal.headers['Retry-After'])).toBeGreaterThanOrEqual(59)
    expect(Number(refusal.headers['Retry-After'])).toBeLessThanOrEqual(60)
  })

  it('consumes the windows shortest first: a request the short window refuses costs nothing in the long one', async () => {
    const keyPrefix = nextPrefix()
    const built: Record<number, RateLimiterPostgres> = {}
    const factory = postgresFactory(server.pool())
    const limiter = limiterWith({
      windows: [
        { points: 2, durationSeconds: 60 },
        { points: 100, durationSeconds: 3600 },
      ],
      cost: bigCost,
      keyPrefix,
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
      store: {
        flexible: (window) => {
          const made = factory(window) as RateLimiterPostgres
          built[window.durationSeconds] = made
          return made
        },
      },
    })
    expect([await statusOf(limiter, 'acme'), await statusOf(limiter, 'acme', BIG)]).toEqual([
      200, 429,
    ])
    const key = '{acme}:default'
    const short = (await built[60]?.get(`${key}:60`)) as RateLimiterRes
    const long = (await built[3600]?.get(`${key}:3600`)) as RateLimiterRes
    expect([short.consumedPoints, long.consumedPoints]).toEqual([3, 1])
  })

  it('refuses with the long window after the short one consumed, without refunding the short one', async () => {
    const built: Record<number, RateLimiterPostgres> = {}
    const factory = postgresFactory(server.pool())
    const limiter = limiterWith({
      windows: [
        { points: 5, durationSeconds: 60 },
        { points: 2, durationSeconds: 3600 },
      ],
      cost: bigCost,
      keyPrefix: nextPrefix(),
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
      store: {
        flexible: (window) => {
          const made = factory(window) as RateLimiterPostgres
          built[window.durationSeconds] = made
          return made
        },
      },
    })
    const refusal = await statusOf(limiter, 'acme')
      .then(() => limiter.consume(tenant('acme'), BIG, token))
      .catch((error) => error)
    expect(refusal).toMatchObject({ status: 429, headers: { 'Retry-After': expect.any(String) } })
    // Retry-After and the RateLimit field name the long window, the one that refused.
    expect(Number(refusal.headers['Retry-After'])).toBeGreaterThan(60)
    const short = (await built[60]?.get('{acme}:default:60')) as RateLimiterRes
    const long = (await built[3600]?.get('{acme}:default:3600')) as RateLimiterRes
    expect([short.consumedPoints, long.consumedPoints]).toEqual([3, 3])
  })

  it('counts a command that outlives the deadline, though the fallback decided its request', async () => {
    const keyPrefix = nextPrefix()
    const clock = new ManualClock()
    const events: GateEvent[] = []
    const pool = server.pool({ max: 12 })
    const limiter = limiterWith(
      {
        windows: [{ points: 100, durationSeconds: 60 }],
        keyPrefix,
        storeTimeoutMs: 50,
        fallbackDivisor: 1,
        store: { flexible: postgresFactory(pool) },
      },
      { events, clock },
    )
    expect(await statusOf(limiter, 'acme')).toBe(200)
    // A transaction holding the tenant's row: every limiter command on it waits, as behind a
    // slow disk or a long lock, until the test commits.
    const holder = await server.pool().connect()
    await holder.query('BEGIN')
    await holder.query(`SELECT * FROM ${POSTGRES_TABLE} WHERE key = $1 FOR UPDATE`, [
      `${keyPrefix}:{acme}:default:60`,
    ])
    const LATE = 5
    const pending = Array.from({ length: LATE }, () => statusOf(limiter, 'acme'))
    // Asked outside the holder's transaction: pg_stat_activity is a snapshot per transaction.
    const observer = server.pool()
    const waiting = async () =>
      Number(
        (
          await observer.query(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
          )
        ).rows[0].n,
      )
    while ((await waiting()) < LATE) await new Promise((resolve) => setTimeout(resolve, 10))
    clock.advance(50)
    expect(await Promise.all(pending)).toEqual(Array(LATE).fill(200))
    expect(events.map((event) => event.type)).toContain('limiter_fallback')
    await holder.query('COMMIT')
    holder.release()
    // Every late command still ran: the store counts the request it decided plus all LATE that
    // the fallback decided (these stores cannot be told a deadline, unlike tollgate's script).
    let points = 0
    for (let tries = 0; tries < 200 && points < 1 + LATE; tries++) {
      const { rows } = await pool.query(`SELECT points FROM ${POSTGRES_TABLE} WHERE key = $1`, [
        `${keyPrefix}:{acme}:default:60`,
      ])
      points = Number(rows[0]?.points)
      if (points < 1 + LATE) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(points).toBe(1 + LATE)
  })
})

describe('rateLimit.store: { flexible } on a stopped PostgreSQL', () => {
  let server: PostgresServer

  beforeAll(async () => {
    server = await startPostgresServer()
    await createTable(server)
  }, 60_000)
  afterAll(async () => {
    await server?.stop()
  })

  it.each([
    ['memory', [200, 200, 429]],
    ['allow', [200, 200, 200]],
    ['deny', [503, 503, 503]],
  ] as const)(
    'falls back per onStoreError %s, never a 5xx of its own',
    async (policy, expected) => {
      const events: GateEvent[] = []
      const limiter = limiterWith(
        {
          windows: [{ points: 2, durationSeconds: 60 }],
          keyPrefix: nextPrefix(),
          storeTimeoutMs: ROOMY_TIMEOUT_MS,
          onStoreError: policy,
          fallbackDivisor: 1,
          store: { flexible: postgresFactory(server.pool()) },
        },
        { events },
      )
      await server.kill()
      const statuses = []
      for (let index = 0; index < 3; index++) statuses.push(await statusOf(limiter, 'acme'))
      expect(statuses).toEqual(expected)
      expect(events.filter((event) => event.type === 'limiter_fallback')).toEqual([
        { type: 'limiter_fallback', engaged: true, policy },
      ])
    },
  )
})

describe('rateLimit.store: { flexible } on memcached (RateLimiterMemcache)', () => {
  let server: MemcachedServer
  const clients: Memcached[] = []

  beforeAll(async () => {
    server = await startMemcachedServer()
  }, 30_000)
  afterAll(async () => {
    for (const client of clients) client.end()
    await server?.stop()
  })

  it('admits exactly the limit across two limiters sharing one memcached', async () => {
    const options = {
      windows: [{ points: 10, durationSeconds: 60 }],
      keyPrefix: nextPrefix(),
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
    }
    const limiters = [0, 1].map(() => {
      const client = new Memcached(server.location)
      clients.push(client)
      return limiterWith({
        ...options,
        store: {
          flexible: (window) =>
            new RateLimiterMemcache({
              storeClient: client,
              points: window.points,
              duration: window.durationSeconds,
              keyPrefix: window.keyPrefix,
            }),
        },
      })
    })
    expect(await burst(limiters, 'acme', 40)).toEqual({ admitted: 10, refused: 30, other: [] })
  })
})

describe('rateLimit.store: { flexible } on a stopped memcached', () => {
  it('answers by the fallback policy (deny: 503), never a 5xx of its own', async () => {
    const server = await startMemcachedServer()
    const client = new Memcached(server.location, { retries: 0, timeout: 200 })
    const events: GateEvent[] = []
    try {
      const limiter = limiterWith(
        {
          windows: [{ points: 10, durationSeconds: 60 }],
          keyPrefix: nextPrefix(),
          // Whether the client fails first or the deadline does, the request is the fallback's.
          storeTimeoutMs: 300,
          onStoreError: 'deny',
          store: {
            flexible: (window) =>
              new RateLimiterMemcache({
                storeClient: client,
                points: window.points,
                duration: window.durationSeconds,
                keyPrefix: window.keyPrefix,
              }),
          },
        },
        { events },
      )
      expect(await statusOf(limiter, 'acme')).toBe(200)
      await server.stop()
      expect(await statusOf(limiter, 'acme')).toBe(503)
      expect(events.filter((event) => event.type === 'limiter_fallback')).toEqual([
        { type: 'limiter_fallback', engaged: true, policy: 'deny' },
      ])
    } finally {
      client.end()
      await server.stop()
    }
  })
})

describe("RateLimiterRedis beside tollgate's own Redis script", () => {
  let server: RedisServer

  beforeAll(async () => {
    server = await startRedisServer()
  }, 30_000)
  afterAll(async () => {
    await server?.stop()
  })

  const redisFactory =
    (client: unknown): FlexibleLimiterFactory =>
    (window) =>
      new RateLimiterRedis({
        storeClient: client,
        points: window.points,
        duration: window.durationSeconds,
        keyPrefix: window.keyPrefix,
      })

  it('admits the same count with the same limits', async () => {
    const windows = [
      { points: 7, durationSeconds: 1 },
      { points: 20, durationSeconds: 60 },
    ]
    const script = [0, 1].map(async () =>
      limiterWith({
        windows,
        keyPrefix: 'script',
        storeTimeoutMs: ROOMY_TIMEOUT_MS,
        store: { redis: await server.client() },
      }),
    )
    const flexible = [0, 1].map(async () =>
      limiterWith({
        windows,
        keyPrefix: 'flexible',
        storeTimeoutMs: ROOMY_TIMEOUT_MS,
        store: { flexible: redisFactory(await server.client()) },
      }),
    )
    const [byScript, byFlexible] = await Promise.all([
      burst(await Promise.all(script), 'acme', 30),
      burst(await Promise.all(flexible), 'acme', 30),
    ])
    expect(byScript).toEqual({ admitted: 7, refused: 23, other: [] })
    expect(byFlexible).toEqual(byScript)
  })

  it("keeps rate-limiter-flexible's key layout: counters carry over from the script to RateLimiterRedis and back", async () => {
    const options = {
      windows: [{ points: 10, durationSeconds: 60 }],
      keyPrefix: nextPrefix(),
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
    }
    const client = await server.client()
    const script = limiterWith({ ...options, store: { redis: client } })
    const flexible = limiterWith({ ...options, store: { flexible: redisFactory(client) } })
    expect((await burst([script], 'acme', 4)).admitted).toBe(4)
    // Same keys, same value: rate-limiter-flexible reads the 4 points tollgate's script counted.
    expect((await burst([flexible], 'acme', 4)).admitted).toBe(4)
    expect(await burst([script], 'acme', 4)).toEqual({ admitted: 2, refused: 2, other: [] })
    expect(await client.get(`${options.keyPrefix}:{acme}:default:60`)).toBe('12')
  })
})

describe('moving counters from Redis to PostgreSQL (docs/stores.md)', () => {
  let redisServer: RedisServer
  let postgres: PostgresServer

  beforeAll(async () => {
    ;[redisServer, postgres] = await Promise.all([startRedisServer(), startPostgresServer()])
    await createTable(postgres)
  }, 60_000)
  afterAll(async () => {
    await Promise.all([redisServer?.stop(), postgres?.stop()])
  })

  it("carries a tenant's consumed points from tollgate's Redis keys into RateLimiterPostgres rows", async () => {
    const options = {
      windows: [{ points: 10, durationSeconds: 60 }],
      storeTimeoutMs: ROOMY_TIMEOUT_MS,
    }
    const redis = await redisServer.client()
    const onRedis = limiterWith({ ...options, store: { redis } })
    expect((await burst([onRedis], 'acme', 4)).admitted).toBe(4)

    // The copy, as docs/stores.md gives it.
    const pool = postgres.pool()
    for await (const keys of redis.scanStream({ match: 'tollgate:rl:*', count: 500 })) {
      for (const key of keys as string[]) {
        if (key.endsWith(':instances')) continue
        const [points, ttl] = await Promise.all([redis.get(key), redis.pttl(key)])
        if (points === null || ttl <= 0) continue
        await pool.query(
          `INSERT INTO tollgate_limits (key, points, expire) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET points = excluded.points, expire = excluded.expire`,
          [key, Number(points), Date.now() + ttl],
        )
      }
    }

    const onPostgres = limiterWith({ ...options, store: { flexible: postgresFactory(pool) } })
    expect(await burst([onPostgres], 'acme', 8)).toEqual({ admitted: 6, refused: 2, other: [] })
  })
})
