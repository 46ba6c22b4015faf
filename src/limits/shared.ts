/**
 * The limiter's store over an application's {@link SharedStore}: each window of the plan is one
 * `increment` of the tenant's key for that window, the key tollgate's Redis script uses
 * (`<keyPrefix>:{<tenant>}:<plan>:<seconds>`), one after the other under the request's deadline.
 *
 * @module
 */
import { checkedIncrement, type SharedStore } from '../shared-store.js'
import type { LimiterClock } from './clock.js'
import { LimiterStoreError } from './redis.js'
import {
  createSequentialStore,
  type SequentialStore,
  type SequentialStoreWindow,
} from './sequential.js'

/** Returns the store; `keyPrefix` starts every key, `timeoutMs` bounds one request's windows. */
export function createSharedLimiterStore(
  shared: SharedStore,
  options: { readonly keyPrefix: string; readonly timeoutMs: number; readonly clock: LimiterClock },
): SequentialStore<SequentialStoreWindow> {
  const { keyPrefix } = options
  return createSequentialStore({
    ...options,
    async count(window, tenantKey, points) {
      const ttlMs = window.durationSeconds * 1000
      const answer: unknown = await shared.increment(`${keyPrefix}:${tenantKey}`, points, ttlMs)
      let checked: { readonly count: number; readonly msBeforeReset: number }
      try {
        checked = checkedIncrement(answer, points, ttlMs)
      } catch (error) {
        throw new LimiterStoreError('ERR_STORE_ANSWER', (error as Error).message)
      }
      return { consumed: checked.count, msBeforeReset: checked.msBeforeReset }
    },
  })
}
