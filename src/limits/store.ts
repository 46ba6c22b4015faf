/**
 * What every shared limiter store (tollgate's Redis script, rate-limiter-flexible, a
 * `SharedStore`) answers for a window, and how a store fails: one file that the stores import and
 * that imports none of them.
 *
 * @module
 */

/** Why the limiter did not use the store's answer. */
export type LimiterStoreErrorCode =
  /** The client was not connected (`status` other than `'ready'`): nothing was sent. */
  | 'ERR_STORE_NOT_READY'
  /** No answer within `storeTimeoutMs`; if Redis runs the command later, it counts nothing. */
  | 'ERR_STORE_TIMEOUT'
  /** The connection closed with the command in flight. */
  | 'ERR_STORE_CLOSED'
  /** Redis ran the command after its deadline and counted nothing. */
  | 'ERR_STORE_LATE'
  /**
   * The store answered something else than its contract says (a `SharedStore`'s count below the
   * amount added, a `RateLimiterRes` without numbers…); the message names what. It fails that
   * request (by `onStoreError`), not the store: other tenants' requests still go to it.
   */
  | 'ERR_STORE_ANSWER'
  /**
   * Process memory holds `rateLimit.maxTenants` windows that have not ended: a tenant without one
   * is answered 503 until the oldest ends.
   */
  | 'ERR_STORE_FULL'

/** The `error` of a `limiter_store_error` event when the store did not answer in time or at all. */
export class LimiterStoreError extends Error {
  readonly code: LimiterStoreErrorCode

  constructor(code: LimiterStoreErrorCode, message: string) {
    super(message)
    this.name = 'LimiterStoreError'
    this.code = code
  }
}

/** A window's count after a consume: points consumed in the window, and when it resets. */
export interface StoreCount {
  readonly consumed: number
  readonly msBeforeReset: number
}

/** A window as the script sees it. */
export interface StoreWindow {
  readonly points: number
  readonly durationSeconds: number
}
