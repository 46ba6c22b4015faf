/**
 * Issue 23: what a request costs on each limiter store, in one run. `gate.check` on cached tokens
 * (the signature is checked once, the limiter every time) without a limiter, then with one window
 * counted by each store: tollgate's memory store, tollgate's Redis script, and through
 * `rateLimit.store: { flexible }` rate-limiter-flexible's RateLimiterRedis, RateLimiterPostgres
 * and RateLimiterMemcache. The suite starts its own redis-server, PostgreSQL and memcached on free
 * loopback ports (`../store-servers.ts`) and stops them after; a store whose server or client is
 * missing is reported as not measured. Each row's note gives the consume (the difference with the
 * no-limiter row) and the request's cost as a multiple of the memory store's, same run.
 */
import { Redis } from 'ioredis'
import Memcached from 'memcached'
import pg from 'pg'
import { RateLimiterMemcache, RateLimiterPostgres, RateLimiterRedis } from 'rate-limiter-flexible'
import { isMain } from '../config.ts'
import { bearer, mintPool } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { type StoreServer, startMemcached, startPostgres, startRedis } from '../store-servers.ts'
import {
  closeGate,
  type Gate,
  type GateOptions,
  gateOptions,
  hasRateLimit,
  isBuilt,
  loadCore,
} from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const STORES_CASE = 'limiter store (gate.check, cache hit, one window)'
export const NO_LIMITER = 'no limiter'
export const MEMORY = "memory (tollgate's)"
export const REDIS_SCRIPT = "Redis (tollgate's Lua script, ioredis)"
export const FLEXIBLE_REDIS = 'flexible: RateLimiterRedis (ioredis)'
export const FLEXIBLE_POSTGRES = 'flexible: RateLimiterPostgres (pg)'
export const FLEXIBLE_MEMCACHE = 'flexible: RateLimiterMemcache (memcached)'

const TABLE = 'tollgate_limits'

interface Window {
  points: number
  durationSeconds: number
  keyPrefix: string
}

const isServer = (server: StoreServer | { error: string }): server is StoreServer =>
  'port' in server

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-stores')
  if (!isBuilt() || !hasRateLimit()) {
    result.skipped.push({
      what: 'limiter stores',
      why: 'dist/src/limits/rate-limit.js is not built',
    })
    console.log('\nlimiter stores: not measured (dist/src/limits/rate-limit.js is not built)')
    return result
  }
  const issuer = await startIssuer()
  const gates: Gate[] = []
  const servers: StoreServer[] = []
  const closers: (() => Promise<unknown> | unknown)[] = []
  const verifiers: (() => void)[] = []
  try {
    const core = await loadCore()
    // 1,000 cached tokens over 100 tenants, as in rate-limit.bench.ts.
    const requests = mintPool(issuer, 1000, 'ES256', 100).map(bearer)
    const start = async (
      name: string,
      store?: NonNullable<GateOptions['rateLimit']>['store'] | 'off',
    ) => {
      const options = gateOptions(core, {
        authUrl: issuer.url,
        cacheEntries: 10_000,
        limiter: store === 'off' ? 'off' : 'memory',
      })
      if (store !== undefined && store !== 'off' && options.rateLimit) {
        options.rateLimit.store = store
        // The default 50 ms would hand a slow commit to the fallback: time the store, however slow.
        options.rateLimit.storeTimeoutMs = 5000
      }
      // A store that fails hands the request to the failure policy (the memory fallback), which
      // would be timed instead of the store: any store error or fallback aborts the suite.
      const failures: string[] = []
      const onEvent = (event: { type: string; error?: unknown }) => {
        if (event.type === 'limiter_store_error' || event.type === 'limiter_fallback') {
          failures.push(`${event.type}${event.error ? `: ${String(event.error)}` : ''}`)
        }
      }
      const gate = core.createGate({ ...options, onEvent } as GateOptions)
      gates.push(gate)
      await gate.ready()
      for (const request of requests) await gate.check(request)
      let i = 0
      const check = () => {
        if (failures.length > 0) throw new Error(`${name}: limiter store failed: ${failures[0]}`)
        return gate.check(requests[i++ % requests.length]!)
      }
      verifiers.push(() => {
        if (failures.length > 0) throw new Error(`${name}: limiter store failed: ${failures[0]}`)
      })
      return check
    }
    const contenders: Contender[] = [
      [NO_LIMITER, await start(NO_LIMITER, 'off')],
      [MEMORY, await start(MEMORY)],
    ]

    const redisServer = await startRedis()
    if (isServer(redisServer)) {
      servers.push(redisServer)
      const redis = new Redis({ host: '127.0.0.1', port: redisServer.port, lazyConnect: true })
      redis.on('error', () => {})
      await redis.connect()
      closers.push(() => redis.disconnect())
      contenders.push([REDIS_SCRIPT, await start(REDIS_SCRIPT, { redis })])
      contenders.push([
        FLEXIBLE_REDIS,
        await start(FLEXIBLE_REDIS, {
          flexible: (w: Window) =>
            new RateLimiterRedis({
              storeClient: redis,
              points: w.points,
              duration: w.durationSeconds,
              keyPrefix: `${w.keyPrefix}:flexible`,
            }),
        }),
      ])
    } else {
      for (const what of [REDIS_SCRIPT, FLEXIBLE_REDIS]) {
        result.skipped.push({ what, why: redisServer.error })
      }
    }

    const postgresConfig = (port: number) => ({
      host: '127.0.0.1',
      port,
      user: 'tollgate',
      database: 'postgres',
    })
    const postgresServer = await startPostgres(async (port) => {
      const probe = new pg.Client(postgresConfig(port))
      probe.on('error', () => {})
      try {
        await probe.connect()
        await probe.query('SELECT 1')
        return true
      } catch {
        return false
      } finally {
        await probe.end().catch(() => {})
      }
    })
    if (isServer(postgresServer)) {
      servers.push(postgresServer)
      const pool = new pg.Pool({ ...postgresConfig(postgresServer.port), max: 10 })
      pool.on('error', () => {})
      closers.push(() => pool.end())
      // rate-limiter-flexible's schema, created once as docs/stores.md says.
      await pool.query(
        `CREATE TABLE ${TABLE} (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`,
      )
      contenders.push([
        FLEXIBLE_POSTGRES,
        await start(FLEXIBLE_POSTGRES, {
          flexible: (w: Window) =>
            new RateLimiterPostgres({
              storeClient: pool,
              tableName: TABLE,
              tableCreated: true,
              points: w.points,
              duration: w.durationSeconds,
              keyPrefix: w.keyPrefix,
            }),
        }),
      ])
    } else {
      result.skipped.push({ what: FLEXIBLE_POSTGRES, why: postgresServer.error })
    }

    const memcachedServer = await startMemcached()
    if (isServer(memcachedServer)) {
      servers.push(memcachedServer)
      const memcached = new Memcached(`127.0.0.1:${memcachedServer.port}`)
      closers.push(() => memcached.end())
      contenders.push([
        FLEXIBLE_MEMCACHE,
        await start(FLEXIBLE_MEMCACHE, {
          flexible: (w: Window) =>
            new RateLimiterMemcache({
              storeClient: memcached,
              points: w.points,
              duration: w.durationSeconds,
              keyPrefix: w.keyPrefix,
            }),
        }),
      ])
    } else {
      result.skipped.push({ what: FLEXIBLE_MEMCACHE, why: memcachedServer.error })
    }

    const rows = await measureCase(STORES_CASE, contenders)
    for (const verify of verifiers) verify()
    const base = rows.find((row) => row.contender === NO_LIMITER)!
    const memory = rows.find((row) => row.contender === MEMORY)!
    for (const row of rows) {
      if (row === base) continue
      const consume = (row.nsPerOp - base.nsPerOp) / 1000
      row.note = `consume ≈ ${consume.toFixed(2)} µs; ${(row.nsPerOp / memory.nsPerOp).toFixed(1)}× the memory store's request`
      console.log(`  ${row.contender}: ${row.note}`)
    }
    result.rows.push(...rows)
  } finally {
    for (const gate of gates) await closeGate(gate)
    for (const close of closers) await close()
    for (const server of servers) await server.stop()
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
