/**
 * A fixed window per tenant in process memory, synchronous: the memory store, and the fallback
 * while Redis is unreachable. Same semantics as rate-limiter-flexible's `RateLimiterMemory`
 * (which it replaces): a window opens at a tenant's first request and lasts `durationSeconds`,
 * every request adds its cost (refused ones too), and the tenant's count is forgotten when its
 * window ends (one unref'd timer per window opened, as there). Issue 14's profile of a cached
 * token through the Koa adapter found the asynchronous limiter (a promise, a result object and a
 * key string per request and window) costing several times the verdict lookup.
 *
 * @module
 */

/** One tenant's window: mutated in place, read right after {@link MemoryWindow.consume}. */
export interface WindowCount {
  consumed: number
  /** When the window ends, ms since epoch. */
  resetAt: number
  timer: ReturnType<typeof setTimeout> | undefined
}

/** The fixed windows of one duration, keyed by tenant. */
export class MemoryWindow {
  private readonly counts = new Map<string, WindowCount>()
  private readonly durationMs: number

  constructor(durationSeconds: number) {
    this.durationMs = durationSeconds * 1000
  }

  /** Adds `points` to the tenant's current window, opening a new one when it ended. */
  consume(tenant: string, points: number, nowMs: number): WindowCount {
    const count = this.counts.get(tenant)
    if (count !== undefined && count.resetAt - nowMs > 0) {
      count.consumed += points
      return count
    }
    if (count?.timer !== undefined) clearTimeout(count.timer)
    const opened: WindowCount = {
      consumed: points,
      resetAt: nowMs + this.durationMs,
      timer: undefined,
    }
    this.counts.set(tenant, opened)
    const timer = setTimeout(() => {
      if (this.counts.get(tenant) === opened) this.counts.delete(tenant)
    }, this.durationMs)
    timer.unref?.()
    opened.timer = timer
    return opened
  }
}
