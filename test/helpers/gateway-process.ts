/**
 * One gateway process for the limiter tests: a child (`node --import tsx`) with its own event
 * loop, ioredis client and tenant limiter, driven over IPC by {@link startGatewayProcess}. Two of
 * them stand for two gateway replicas behind a load balancer, sharing one Redis, or one
 * PostgreSQL through rate-limiter-flexible's `RateLimiterPostgres` (`store: 'postgres'`).
 *
 * A burst starts its requests' store commands, then keeps the event loop busy with CPU work
 * (key derivations, as a busy gateway verifying tokens would) until Redis has executed every
 * command of the burst, across all processes, and the store deadline has long passed. So when
 * the loop is free again the replies are already waiting in the socket and every deadline timer
 * is overdue: the state a gateway is in after a CPU-saturating burst, made certain instead of
 * likely.
 *
 * @module
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process'
import cluster from 'node:cluster'
import { pbkdf2Sync } from 'node:crypto'
import { fileURLToPath } from 'node:url'

import { Redis } from 'ioredis'
import pg from 'pg'
import {
  RateLimiterCluster,
  RateLimiterClusterMaster,
  RateLimiterPostgres,
} from 'rate-limiter-flexible'

import type { GateEvent } from '../../src/events.js'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import type { FlexibleWindow, RateLimitOptions } from '../../src/limits/rate-limit.js'
import { createTenantLimiter } from '../../src/limits/rate-limit.js'
import { get, README_CLIENT_OPTIONS, token } from './limiter-fixtures.js'
import { waitForReady } from './redis.js'

/** What a burst asks of one gateway process. */
export interface BurstOrder {
  readonly tenant: string
  readonly requests: number
  /**
   * With Redis: the key that counts the tenant's points, the count meaning "every command ran",
   * and how long the event loop stays busy at least, in ms (wall clock: the stimulus, not a
   * check). Without them (Postgres), the burst's requests are simply sent together.
   */
  readonly counterKey?: string
  readonly commandsInBurst?: number
  readonly busyAtLeastMs?: number
}

/** The store the gateway processes share. */
export type GatewayStore = 'redis' | 'postgres'

/** The table the Postgres gateways share (rate-limiter-flexible's schema, created by the test). */
export const POSTGRES_TABLE = 'tollgate_limits'

/** What one gateway process saw in a burst. */
export interface BurstReport {
  readonly admitted: number
  readonly refused: number
  readonly unavailable: number
  /** `limiter_store_error` (with the error's code) and `limiter_fallback` events in the burst. */
  readonly storeEvents: readonly string[]
  /** How long the event loop was held, in ms (for the report, never asserted). */
  readonly busyMs: number
}

type Order =
  | {
      readonly type: 'start'
      readonly port: number
      readonly store: GatewayStore
      readonly options: RateLimitOptions
    }
  | ({ readonly type: 'burst' } & BurstOrder)

/** The parent's handle on one gateway process. */
export interface GatewayProcess {
  burst(order: BurstOrder): Promise<BurstReport>
  stop(): void
}

const HERE = fileURLToPath(import.meta.url)

/** Forks a gateway process whose limiter uses the Redis (or Postgres) on `port` with `options`. */
export async function startGatewayProcess(
  port: number,
  options: Omit<RateLimitOptions, 'store'>,
  store: GatewayStore = 'redis',
): Promise<GatewayProcess> {
  const child: ChildProcess = fork(HERE, ['--gateway-process'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = () =>
    new Promise<unknown>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`gateway process exited (${code})`))
      child.once('exit', onExit)
      child.once('message', (message) => {
        child.off('exit', onExit)
        resolve(message)
      })
    })
  const ready = next()
  child.send({ type: 'start', port, store, options } satisfies Order)
  await ready
  return {
    async burst(order) {
      const report = next()
      child.send({ type: 'burst', ...order } satisfies Order)
      return (await report) as BurstReport
    },
    stop: () => child.kill('SIGKILL'),
  }
}

async function serve(): Promise<void> {
  let limiter: ReturnType<typeof createTenantLimiter> | undefined
  let port = 0
  let storeTimeoutMs = 50
  const events: GateEvent[] = []

  process.on('message', async (order: Order) => {
    if (order.type === 'start') {
      port = order.port
      storeTimeoutMs = order.options.storeTimeoutMs ?? 50
      limiter = createTenantLimiter(
        normalizeRateLimitOptions({ ...order.options, store: await storeOf(order.store, port) }),
        { emit: (event) => events.push(event) },
      )
      // Loads the script into Redis, so that the burst's commands run without a round trip more.
      await limiter.consume({ id: 'warm-up', plan: undefined }, get, token)
      process.send?.({ type: 'ready' })
      return
    }
    if (limiter === undefined) throw new Error('burst before start')
    events.length = 0
    const pending = Array.from({ length: order.requests }, () =>
      (limiter as NonNullable<typeof limiter>)
        .consume({ id: order.tenant, plan: undefined }, get, token)
        .then(
          () => 200,
          (error: { status?: number }) => error.status ?? 500,
        ),
    )
    const busyMs = order.counterKey === undefined ? 0 : keepBusy(port, order, storeTimeoutMs)
    const statuses = await Promise.all(pending)
    process.send?.({
      admitted: statuses.filter((status) => status === 200).length,
      refused: statuses.filter((status) => status === 429).length,
      unavailable: statuses.filter((status) => status !== 200 && status !== 429).length,
      storeEvents: events.flatMap((event) => {
        if (event.type === 'limiter_fallback') return [`${event.type} engaged: ${event.engaged}`]
        if (event.type !== 'limiter_store_error') return []
        const { code, message } = event.error as { code?: string; message?: string }
        return [`${event.type}: ${code ?? message}`]
      }),
      busyMs,
    } satisfies BurstReport)
  })
}

async function storeOf(store: GatewayStore, port: number): Promise<RateLimitOptions['store']> {
  if (store === 'postgres') {
    // As docs/stores.md shows it: one pool, one limiter per window, the table created beforehand.
    const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'tollgate', database: 'postgres' })
    pool.on('error', () => {})
    return {
      flexible: (window) =>
        new RateLimiterPostgres({
          storeClient: pool,
          tableName: POSTGRES_TABLE,
          tableCreated: true,
          points: window.points,
          duration: window.durationSeconds,
          keyPrefix: window.keyPrefix,
        }),
    }
  }
  // Exactly the client settings the README recommends.
  const redis = new Redis({ host: '127.0.0.1', port, ...README_CLIENT_OPTIONS })
  redis.on('error', () => {})
  await waitForReady(redis)
  return { redis }
}

/**
 * CPU work on the event loop until Redis has run every command of the burst (asked synchronously,
 * through redis-cli) and at least `busyAtLeastMs` has passed; gives up after 3 s, and the burst's
 * counts then show whatever the limiter made of it.
 */
function keepBusy(port: number, order: BurstOrder, storeTimeoutMs: number): number {
  const started = performance.now()
  const minimum = Math.max(order.busyAtLeastMs ?? 0, 2 * storeTimeoutMs)
  const commands = order.commandsInBurst ?? 0
  let counted = 0
  while (performance.now() - started < 3000) {
    for (let index = 0; index < 5; index++) pbkdf2Sync('password', 'salt', 1000, 32, 'sha256')
    if (counted < commands) {
      const reply = execFileSync('redis-cli', ['-p', String(port), 'GET', String(order.counterKey)])
      counted = Number(reply.toString().trim()) || 0
    }
    if (counted >= commands && performance.now() - started >= minimum) break
  }
  return performance.now() - started
}

if (process.argv.includes('--gateway-process')) void serve()

/** What the workers of a Node cluster admitted in one burst each, sent together. */
export interface ClusterBurstReport {
  /** Per worker: requests admitted, refused (429), anything else. */
  readonly workers: readonly { admitted: number; refused: number; other: number }[]
}

/**
 * Starts a cluster primary (a child process, so that the test runner's process stays out of
 * `node:cluster`) holding rate-limiter-flexible's `RateLimiterClusterMaster`, forks `workers`
 * workers whose limiters use `RateLimiterCluster` through `rateLimit.store: { flexible }`, has
 * each send `requestsPerWorker` concurrent requests for one tenant, and resolves with what each
 * admitted. The primary and its workers exit afterwards.
 */
export async function clusterBurst(
  options: Omit<RateLimitOptions, 'store'>,
  workers: number,
  requestsPerWorker: number,
): Promise<ClusterBurstReport> {
  const child = fork(HERE, ['--cluster-primary'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`cluster primary exited (${code})`)))
    child.once('message', (report) => {
      child.kill('SIGKILL')
      resolve(report as ClusterBurstReport)
    })
    child.send({ options, workers, requestsPerWorker })
  })
}

// Listeners are added synchronously: a message that arrives before there is one is lost.
function clusterPrimary(): void {
  process.once(
    'message',
    (order: { options: RateLimitOptions; workers: number; requestsPerWorker: number }) => {
      new RateLimiterClusterMaster()
      cluster.setupPrimary({
        exec: HERE,
        args: ['--cluster-worker'],
        execArgv: ['--import', 'tsx'],
      })
      const reports: ClusterBurstReport['workers'][number][] = []
      let ready = 0
      // The options go in the environment: a message sent before the worker listens is lost.
      const forked = Array.from({ length: order.workers }, () =>
        cluster.fork({ TOLLGATE_TEST_LIMITER_OPTIONS: JSON.stringify(order.options) }),
      )
      for (const worker of forked) {
        worker.on('message', (message: { type?: string }) => {
          if (message.type === 'ready' && ++ready === forked.length) {
            // Every worker's limiters exist: start the bursts together.
            for (const each of forked) each.send({ type: 'burst', ...order })
          } else if (message.type === 'report') {
            reports.push(message as unknown as ClusterBurstReport['workers'][number])
            if (reports.length === forked.length) {
              for (const each of forked) each.kill('SIGKILL')
              process.send?.({ workers: reports } satisfies ClusterBurstReport)
            }
          }
        })
      }
    },
  )
}

function clusterWorker(): void {
  const options = JSON.parse(
    String(process.env['TOLLGATE_TEST_LIMITER_OPTIONS']),
  ) as RateLimitOptions
  const limiter = createTenantLimiter(
    normalizeRateLimitOptions({
      ...options,
      store: {
        // As docs/stores.md shows it: the primary keeps one limiter per keyPrefix, so each
        // window needs its own.
        flexible: (window: FlexibleWindow) =>
          new RateLimiterCluster({
            points: window.points,
            duration: window.durationSeconds,
            keyPrefix: `${window.keyPrefix}:${window.plan}:${window.durationSeconds}`,
            timeoutMs: 5000,
          }),
      },
    }),
    { emit: undefined },
  )
  process.on('message', async (message: { type?: string; requestsPerWorker: number }) => {
    if (message.type !== 'burst') return
    const statuses = await Promise.all(
      Array.from({ length: message.requestsPerWorker }, () =>
        limiter.consume({ id: 'cluster', plan: undefined }, get, token).then(
          () => 200,
          (error: { status?: number }) => error.status ?? 500,
        ),
      ),
    )
    process.send?.({
      type: 'report',
      admitted: statuses.filter((status) => status === 200).length,
      refused: statuses.filter((status) => status === 429).length,
      other: statuses.filter((status) => status !== 200 && status !== 429).length,
    })
  })
  process.send?.({ type: 'ready' })
}

if (process.argv.includes('--cluster-primary')) clusterPrimary()
if (process.argv.includes('--cluster-worker')) clusterWorker()
