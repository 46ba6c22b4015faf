/**
 * A fixed window per tenant in process memory, synchronous: the memory store, and the fallback
 * while a shared store fails. A window opens at a tenant's first request and lasts
 * `durationSeconds`, and every request adds its cost. A profile of a cached token
 * through the Koa adapter found the asynchronous limiter (a promise, a result object and a key
 * string per request and window) costing several times the verdict lookup, hence synchronous.
 *
 * The windows live in a {@link TenantTable} of at most `maxTenants` tenants, without a timer
 * (rate-limiter-flexible's `RateLimiterMemory`, and this file when it followed it, held one timer
 * per tenant window: 387 bytes a tenant at a million tenants, and no bound but time). A window that
 * ended is forgotten lazily. When the table holds `maxTenants` windows that have not ended, a
 * tenant without one is not counted: {@link MemoryWindow.consume} answers -1 and the limiter
 * refuses the request (503) rather than forget a window that has not ended, which would let its
 * tenant start over within it.
 *
 * @module
 */
import { TenantTable } from './tenant-table.js'

/** The fixed windows of one duration, keyed by tenant. */
export class MemoryWindow {
  private readonly table: TenantTable
  private readonly durationMs: number

  constructor(durationSeconds: number, maxTenants: number) {
    this.durationMs = durationSeconds * 1000
    this.table = new TenantTable(maxTenants)
  }

  /**
   * Adds `points` to the tenant's current window, opening a new one when it has none; answers
   * the window's slot (read it with {@link consumed} and {@link resetAt}), or -1 when a new
   * window was needed and `maxTenants` windows that have not ended are held.
   */
  consume(tenant: string, points: number, nowMs: number): number {
    const slot = this.table.find(tenant, nowMs)
    if (slot !== -1) {
      this.table.add(slot, points)
      return slot
    }
    return this.table.open(tenant, points, nowMs + this.durationMs, nowMs, false)
  }

  /** The tenant's window if it has one that has not ended, else -1; counts nothing. */
  find(tenant: string, nowMs: number): number {
    return this.table.find(tenant, nowMs)
  }

  /** Takes back `points` a {@link consume} added, when a later window could not count them. */
  refund(slot: number, points: number): void {
    this.table.add(slot, -points)
  }

  /** Points consumed in the window of `slot`. */
  consumed(slot: number): number {
    return this.table.count(slot)
  }

  /** When the window of `slot` ends, ms since the epoch. */
  resetAt(slot: number): number {
    return this.table.expiresAt(slot)
  }

  /** Ms until the oldest window ends: when a full table counts a new tenant again. */
  msUntilRoom(nowMs: number): number {
    return this.table.msUntilRoom(nowMs)
  }

  /** Windows held that have not been forgotten yet (ended ones go lazily). */
  get size(): number {
    return this.table.size
  }
}
