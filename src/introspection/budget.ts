/**
 * The call budget of one introspecting issuer: `calls` per `perSeconds`, in two token buckets.
 * Tokens nobody has seen cost a provider call each, and a flood of random strings is exactly
 * that: it meets the first bucket, the calls for tokens the gate has not seen. The second,
 * half of the budget (rounded down), is reserved for refreshing the verdicts of tokens the
 * provider has called active: only such tokens can spend it, so no string an attacker makes up
 * can keep a known user's verdict from being refreshed. A refresh that finds its share spent may
 * use the other one; a new token never uses the reserve.
 *
 * @module
 */

/** A token bucket over an injected clock (milliseconds). */
class Bucket {
  readonly capacity: number
  private available: number
  private updatedAt: number
  private readonly refillPerMs: number

  constructor(capacity: number, perSeconds: number, nowMs: number) {
    this.capacity = capacity
    this.available = capacity
    this.updatedAt = nowMs
    this.refillPerMs = capacity / (perSeconds * 1000)
  }

  private refill(nowMs: number): void {
    if (nowMs <= this.updatedAt) return
    this.available = Math.min(
      this.capacity,
      this.available + (nowMs - this.updatedAt) * this.refillPerMs,
    )
    this.updatedAt = nowMs
  }

  take(nowMs: number): boolean {
    if (this.capacity === 0) return false
    this.refill(nowMs)
    if (this.available < 1) return false
    this.available -= 1
    return true
  }

  /** Milliseconds until one call is available again. */
  waitMs(nowMs: number): number {
    this.refill(nowMs)
    return this.available >= 1 ? 0 : (1 - this.available) / this.refillPerMs
  }
}

/** The two shares of one issuer's budget. */
export class CallBudget {
  readonly calls: number
  readonly perSeconds: number
  /** Calls for tokens the gate has not seen (or whose verdict it no longer holds). */
  private readonly unknown: Bucket
  /** Calls reserved for refreshing the verdicts of tokens the provider called active. */
  private readonly known: Bucket
  /** When the last refusal was reported: one report per budget period, not one per refusal. */
  private reportedAt = Number.NEGATIVE_INFINITY

  constructor(calls: number, perSeconds: number, nowMs: number) {
    this.calls = calls
    this.perSeconds = perSeconds
    const reserved = Math.floor(calls / 2)
    this.known = new Bucket(reserved, perSeconds, nowMs)
    this.unknown = new Bucket(calls - reserved, perSeconds, nowMs)
  }

  /** Takes a call for a token the gate holds no verdict of; `false` when that share is spent. */
  takeUnknown(nowMs: number): boolean {
    return this.unknown.take(nowMs)
  }

  /** Takes a call to refresh an active token's verdict: from the reserve, else the other share. */
  takeKnown(nowMs: number): boolean {
    return this.known.take(nowMs) || this.unknown.take(nowMs)
  }

  /** Whole seconds until a token the gate has not seen may be asked about again (at least 1). */
  retryAfterSeconds(nowMs: number): number {
    return Math.max(1, Math.ceil(this.unknown.waitMs(nowMs) / 1000))
  }

  /** `true` at most once per budget period: whether a refusal now should be reported. */
  shouldReport(nowMs: number): boolean {
    if (nowMs - this.reportedAt < this.perSeconds * 1000) return false
    this.reportedAt = nowMs
    return true
  }
}
