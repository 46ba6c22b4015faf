/**
 * A store that counts a plan's windows one call at a time (rate-limiter-flexible limiters, an
 * application's `SharedStore`), under one deadline for the request: shortest window first, up to
 * and including the first that goes over its points.
 *
 * @module
 */
import type { LimiterClock } from './clock.js'
import type { StoreCount, StoreWindow } from './redis.js'
import { LimiterStoreError } from './redis.js'

/** A window of such a store: its points and length, and its key after the tenant's `{<id>}`. */
export interface SequentialStoreWindow extends StoreWindow {
  /** `:<plan>:<seconds>`. */
  readonly keySuffix: string
}

/** Counts `points` in one window, for the tenant key `{<tenant>}<keySuffix>`. */
export type CountWindow<W extends SequentialStoreWindow> = (
  window: W,
  tenantKey: string,
  points: number,
) => Promise<StoreCount>

/** The store side of a tenant limiter whose windows are counted one after the other. */
export interface SequentialStore<W extends SequentialStoreWindow> {
  /**
   * Counts `points` in each window, one after the other, shortest window first, up to and
   * including the first that goes over its points. Rejects with a {@link LimiterStoreError}
   * `ERR_STORE_TIMEOUT` when the windows have not all answered within `timeoutMs`, or with the
   * error a count rejected with.
   */
  consume(tenant: string, windows: readonly W[], points: number): Promise<StoreCount[]>
}

/**
 * Returns the store, with a deadline of `timeoutMs` on `clock`.
 *
 * A later window that refuses after an earlier one consumed does not refund the earlier one: the
 * order makes it safe instead. Windows are consumed shortest first, as the Redis script and the
 * memory store do, so a refused request is charged in the window that refused it and the shorter
 * ones (which reset first), never in the longer ones, and every store counts refused requests the
 * same way. A refund would be a second command per window that can itself fail or come late,
 * leaving a count neither this process nor the store knows; a charge that stays is at least the
 * same on every store, and it ends with the shorter window.
 *
 * Unlike the Redis script, these stores cannot be told a deadline: a call that answers after
 * `timeoutMs` still counts in the store, though the fallback decided the request.
 */
export function createSequentialStore<W extends SequentialStoreWindow>(options: {
  readonly timeoutMs: number
  readonly clock: LimiterClock
  readonly count: CountWindow<W>
}): SequentialStore<W> {
  const { timeoutMs, clock, count } = options

  async function consumeAll(
    tenant: string,
    windows: readonly W[],
    points: number,
    state: { timedOut: boolean },
  ): Promise<StoreCount[]> {
    const counts: StoreCount[] = []
    for (const window of windows) {
      // Past the deadline the request is decided: asking the next window would only count more.
      if (state.timedOut) break
      const counted = await count(window, `{${tenant}}${window.keySuffix}`, points)
      counts.push(counted)
      if (counted.consumed > window.points) break
    }
    return counts
  }

  function consume(tenant: string, windows: readonly W[], points: number): Promise<StoreCount[]> {
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
      // A count that throws instead of rejecting is a store failure too.
      Promise.resolve()
        .then(() => consumeAll(tenant, windows, points, state))
        .then(
          (counts) => finish(undefined, counts),
          (error: unknown) => finish(error ?? new Error('rate-limit store failed')),
        )
    })
  }

  return { consume }
}
