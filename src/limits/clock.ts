/**
 * The limiter's time: `now()` for windows, blocks and deadlines, and the deadline timer. The
 * gate uses the system clock; tests of the Redis store inject a manual one, so that what a
 * request waits for is decided by the time the test lets pass, never by how loaded the machine is
 * (fake timers would also stop ioredis's own timers).
 *
 * @module
 */

/** Time as the limiter reads it. */
export interface LimiterClock {
  /** Milliseconds since the epoch. */
  now(): number
  /** Calls `callback` once `ms` have passed, without keeping the process alive; returns a cancel. */
  setTimer(callback: () => void, ms: number): () => void
}

/** `Date.now()` and unref'd `setTimeout`, looked up at each call (so fake timers reach them). */
export const systemClock: LimiterClock = {
  now: () => Date.now(),
  setTimer(callback, ms) {
    const timer = setTimeout(callback, ms)
    timer.unref()
    return () => clearTimeout(timer)
  },
}
