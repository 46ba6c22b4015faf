/**
 * The limiter's store over rate-limiter-flexible limiters (`RateLimiterPostgres`,
 * `RateLimiterMemcache`, `RateLimiterCluster`, `RateLimiterRedis`, …), one per window of each
 * plan, built by the application's factory. tollgate never imports rate-limiter-flexible: the
 * factory brings it, and this module knows a limiter only by {@link FlexibleLimiterLike}.
 *
 * @module
 */
import type { LimiterClock } from './clock.js'
import type { StoreCount, StoreWindow } from './redis.js'
import { LimiterStoreError } from './redis.js'

/**
 * What tollgate uses of a rate-limiter-flexible limiter (`RateLimiterAbstract`): its `points`
 * and `duration` (checked against the window at creation) and `consume(key, points)`, which
 * resolves with a `RateLimiterRes` when the key stays within its points and rejects with one
 * (not an Error) when it goes over, or with an Error when the store fails.
 */
export interface FlexibleLimiterLike {
  readonly points: number
  readonly duration: number
  consume(key: string, points?: number): Promise<unknown>
}

/** The window a {@link FlexibleLimiterFactory} builds a limiter for. */
export interface FlexibleWindow {
  /** The plan the window belongs to. */
  readonly plan: string
  /** The limiter's `points` must equal it. */
  readonly points: number
  /** The limiter's `duration` (seconds) must equal it. */
  readonly durationSeconds: number
  /**
   * `rateLimit.keyPrefix` (default `'tollgate:rl'`): give it as the limiter's `keyPrefix`, and a
   * tenant's keys are `<keyPrefix>:{<tenant>}:<plan>:<seconds>`, the keys tollgate's own Redis
   * script uses, so counters carry over between the two Redis stores.
   */
  readonly keyPrefix: string
}

/**
 * Builds the limiter of one window, for example
 * `(w) => new RateLimiterPostgres({ storeClient: pool, tableName: 'tollgate_limits', tableCreated: true, points: w.points, duration: w.durationSeconds, keyPrefix: w.keyPrefix })`.
 * Called once per window of every plan, at creation.
 */
export type FlexibleLimiterFactory = (window: FlexibleWindow) => FlexibleLimiterLike

/** A window of the store: the script's view plus the limiter that counts it and its key. */
export interface FlexibleStoreWindow extends StoreWindow {
  readonly limiter: FlexibleLimiterLike
  /** `:<plan>:<seconds>`, after the tenant's `{<id>}`. */
  readonly keySuffix: string
}

/** The rate-limiter-flexible side of a tenant limiter. */
export interface FlexibleStore {
  /**
   * Consumes `points` in each window's limiter, one after the other, shortest window first, up
   * to and including the first that goes over its points. Rejects with a
   * {@link LimiterStoreError} `ERR_STORE_TIMEOUT` when the windows have not all answered within
   * `timeoutMs`, or with the error a limiter rejected with.
   */
  consume(
    tenant: string,
    windows: readonly FlexibleStoreWindow[],
    points: number,
  ): Promise<StoreCount[]>
}

/**
 * Returns the store, with a deadline of `timeoutMs` on `clock`.
 *
 * A later window that refuses after an earlier one consumed does not refund the earlier one
 * (no `reward()`): the order makes it safe instead. Windows are consumed shortest first, as the
 * Redis script and the memory store do, so a refused request is charged in the window that
 * refused it and the shorter ones (which reset first), never in the longer ones, and every store
 * counts refused requests the same way. A refund
 * would be a second command per window that can itself fail or come late, leaving a count
 * neither this process nor the store knows; a charge that stays is at least the same on every
 * store, and it ends with the shorter window.
 *
 * Unlike the Redis script, these stores cannot be told a deadline: a command that answers after
 * `timeoutMs` still counts in the store, though the fallback decided the request.
 */
export function createFlexibleStore(options: {
  readonly timeoutMs: number
  readonly clock: LimiterClock
}): FlexibleStore {
  const { timeoutMs, clock } = options

  async function consumeAll(
    tenant: string,
    windows: readonly FlexibleStoreWindow[],
    points: number,
    state: { timedOut: boolean },
  ): Promise<StoreCount[]> {
    const counts: StoreCount[] = []
    for (const window of windows) {
      // Past the deadline the request is decided: asking the next window would only count more.
      if (state.timedOut) break
      const count = await consumeOne(window, `{${tenant}}${window.keySuffix}`, points)
      counts.push(count)
      if (count.consumed > window.points) break
    }
    return counts
  }

  function consume(
    tenant: string,
    windows: readonly FlexibleStoreWindow[],
    points: number,
  ): Promise<StoreCount[]> {
    return new Promise<StoreCount[]>((resolve, reject) => {
      const state = { timedOut: false }
      let settled = false
      const finish = (error: unknown, counts?: StoreCount[]) => {
        if (settled) return
        settled = true
        cancelTimer()
        if (error === undefined) resolve(counts as StoreCount[])
        else reject(error)
      }
      // As with Redis: a timer that fires after a busy event loop yields once, so that an answer
      // already waiting in the socket is read before the store is called late.
      const cancelTimer = clock.setTimer(() => {
        setImmediate(() => {
          if (settled) return
          state.timedOut = true
          finish(
            new LimiterStoreError(
              'ERR_STORE_TIMEOUT',
              `rate-limit store did not answer within ${timeoutMs} ms`,
            ),
          )
        })
      }, timeoutMs)
      consumeAll(tenant, windows, points, state).then(
        (counts) => finish(undefined, counts),
        (error: unknown) => finish(error ?? new Error('rate-limit store failed')),
      )
    })
  }

  return { consume }
}

/** One window's count: the limiter's `RateLimiterRes`, whether it resolved or rejected with it. */
async function consumeOne(
  window: FlexibleStoreWindow,
  key: string,
  points: number,
): Promise<StoreCount> {
  try {
    return countOf(await window.limiter.consume(key, points))
  } catch (rejection) {
    // rate-limiter-flexible rejects with its result (not an Error) when the key goes over.
    if (!(rejection instanceof Error) && isResult(rejection)) return countOf(rejection)
    throw rejection
  }
}

function isResult(value: unknown): value is { consumedPoints: number; msBeforeNext: number } {
  if (typeof value !== 'object' || value === null) return false
  const { consumedPoints, msBeforeNext } = value as Record<string, unknown>
  return typeof consumedPoints === 'number' && typeof msBeforeNext === 'number'
}

function countOf(result: unknown): StoreCount {
  if (!isResult(result)) {
    throw new TypeError('a rate-limiter-flexible limiter resolved without a RateLimiterRes')
  }
  return { consumed: result.consumedPoints, msBeforeReset: result.msBeforeNext }
}
