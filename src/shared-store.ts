/**
 * The store that gateway instances share when the runtime has no socket for Redis (Workers) or
 * the deployment has another place for shared state: two atomic operations, reached however the
 * application likes (HTTP, a Durable Object, …). The rate limiter counts with `increment`, the
 * DPoP replay cache remembers proofs with `claimOnce`. A base file: `limits/` and `dpop/` both
 * import it.
 *
 * @module
 */
import { fail, isRecord, summarize } from './validate.js'

/**
 * A store several gateway instances share, reached however the runtime allows (HTTP, a platform
 * binding such as a Durable Object, …): two atomic operations. tollgate bounds every call with
 * the option's `storeTimeoutMs` and checks every answer; a call that rejects, throws, answers
 * late or answers something else is a store failure (see `docs/stores.md`, "A store of your own").
 */
export interface SharedStore {
  /**
   * Atomically adds `amount` to counter `key`. A counter that is absent or expired starts from 0
   * and expires `ttlMs` from now; an existing counter's expiry does not move. Resolves to the
   * count after the addition and the ms before the counter expires.
   */
  increment(
    key: string,
    amount: number,
    ttlMs: number,
  ): Promise<{ readonly count: number; readonly msBeforeReset: number }>
  /**
   * Atomically records `key` for `ttlMs` unless it is recorded. Resolves `true` when this call
   * recorded it, `false` when it already was.
   */
  claimOnce(key: string, ttlMs: number): Promise<boolean>
}

/**
 * The `{ shared }` form of a store option, validated: `store` must be an object with `shared`
 * alone, and `shared` must have `operation` as a function (the one this option calls).
 */
export function sharedStoreOption(
  store: Record<string, unknown>,
  path: string,
  operation: keyof SharedStore,
): SharedStore {
  const shared = store['shared']
  if (!isRecord(shared) || typeof shared[operation] !== 'function') {
    fail(
      `${path}.shared`,
      `must be a SharedStore, an object with ${operation}(${operation === 'increment' ? 'key, amount, ttlMs' : 'key, ttlMs'}) ` +
        'returning a promise (see docs/stores.md, "A store of your own")',
      shared,
    )
  }
  return shared as unknown as SharedStore
}

/**
 * The count an `increment` resolved to, or a `TypeError` naming what was wrong with it: a store
 * that answers something else is failing, whatever it meant.
 */
export function checkedIncrement(
  answer: unknown,
  amount: number,
  ttlMs: number,
): { readonly count: number; readonly msBeforeReset: number } {
  if (!isRecord(answer)) {
    throw new TypeError(
      `SharedStore.increment() resolved ${summarize(answer)}, not { count, msBeforeReset }`,
    )
  }
  const { count, msBeforeReset } = answer
  // The counter holds at least what this call added: a smaller count was not this call's.
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < amount) {
    throw new TypeError(
      `SharedStore.increment() resolved a count that is not a whole number ≥ the amount added (${amount}) (got ${summarize(count)})`,
    )
  }
  if (typeof msBeforeReset !== 'number' || !Number.isFinite(msBeforeReset) || msBeforeReset < 0) {
    throw new TypeError(
      `SharedStore.increment() resolved an msBeforeReset that is not a number of ms ≥ 0 (got ${summarize(msBeforeReset)})`,
    )
  }
  // A counter expires at most `ttlMs` after it opened; a store whose clock runs ahead may say
  // a little more, which must not stretch a `Retry-After` past the window.
  return { count, msBeforeReset: Math.min(msBeforeReset, ttlMs) }
}

/** Whether a `claimOnce` recorded the key, or a `TypeError` when it resolved something else. */
export function checkedClaim(answer: unknown): boolean {
  if (typeof answer !== 'boolean') {
    throw new TypeError(`SharedStore.claimOnce() resolved ${summarize(answer)}, not a boolean`)
  }
  return answer
}
