/**
 * The limiter's store over rate-limiter-flexible limiters (`RateLimiterPostgres`,
 * `RateLimiterMemcache`, `RateLimiterCluster`, `RateLimiterRedis`, …), one per window of each
 * plan, built by the application's factory. tollgate never imports rate-limiter-flexible: the
 * factory brings it, and this module knows a limiter only by {@link FlexibleLimiterLike}.
 *
 * @module
 */
import type { LimiterClock } from './clock.js'
import {
  createSequentialStore,
  type SequentialStore,
  type SequentialStoreWindow,
} from './sequential.js'
import type { StoreWindow } from './store.js'
import { LimiterStoreError, type StoreCount } from './store.js'

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
export interface FlexibleStoreWindow extends SequentialStoreWindow {
  readonly limiter: FlexibleLimiterLike
}

/**
 * The rate-limiter-flexible side of a tenant limiter: each window's limiter, one after the
 * other, under one deadline of `timeoutMs` on `clock` (see {@link createSequentialStore}, which
 * also says why a refusal by a longer window refunds nothing).
 */
export function createFlexibleStore(options: {
  readonly timeoutMs: number
  readonly clock: LimiterClock
}): SequentialStore<FlexibleStoreWindow> {
  return createSequentialStore<FlexibleStoreWindow>({
    ...options,
    count: (window, key, points) => consumeOne(window, key, points),
  })
}

/** One window's count: the limiter's `RateLimiterRes`, whether it resolved or rejected with it. */
async function consumeOne(
  window: FlexibleStoreWindow,
  key: string,
  points: number,
): Promise<StoreCount> {
  let result: unknown
  try {
    result = await window.limiter.consume(key, points)
  } catch (rejection) {
    // rate-limiter-flexible rejects with its result (not an Error) when the key goes over.
    if (rejection instanceof Error || !isResult(rejection)) throw rejection
    result = rejection
  }
  return countOf(result, window, points)
}

function isResult(value: unknown): value is { consumedPoints: number; msBeforeNext: number } {
  if (typeof value !== 'object' || value === null) return false
  const { consumedPoints, msBeforeNext } = value as Record<string, unknown>
  return typeof consumedPoints === 'number' && typeof msBeforeNext === 'number'
}

/**
 * The count a `RateLimiterRes` gives, or an `ERR_STORE_ANSWER` (which fails this request, not the
 * store) when it is no count of this window: consumed points that are not a whole number at
 * least the points just added, or no finite `msBeforeNext`. A reset later than the window's end
 * is the window's end: neither `Retry-After` nor the memory of spent tenants outlasts a window.
 */
function countOf(result: unknown, window: StoreWindow, points: number): StoreCount {
  if (!isResult(result)) {
    throw new LimiterStoreError(
      'ERR_STORE_ANSWER',
      'a rate-limiter-flexible limiter resolved without a RateLimiterRes',
    )
  }
  const { consumedPoints, msBeforeNext } = result
  if (!Number.isSafeInteger(consumedPoints) || consumedPoints < points) {
    throw new LimiterStoreError(
      'ERR_STORE_ANSWER',
      `a rate-limiter-flexible limiter answered consumedPoints ${consumedPoints}, not a whole number ≥ the ${points} points added`,
    )
  }
  if (!Number.isFinite(msBeforeNext)) {
    throw new LimiterStoreError(
      'ERR_STORE_ANSWER',
      `a rate-limiter-flexible limiter answered msBeforeNext ${msBeforeNext}, not a number of ms`,
    )
  }
  return {
    consumed: consumedPoints,
    msBeforeReset: Math.min(msBeforeNext, window.durationSeconds * 1000),
  }
}
