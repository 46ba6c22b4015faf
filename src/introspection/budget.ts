/**
 * The call budget of one introspecting issuer: a token bucket holding `calls`, refilled at
 * `calls / perSeconds`. Tokens nobody has seen cost a provider call each; a flood of random
 * strings therefore meets this bound instead of the provider's.
 *
 * @module
 */

/** A token bucket over an injected clock (milliseconds). */
export class CallBudget {
  readonly calls: number
  readonly perSeconds: number
  private available: number
  private updatedAt: number
  private readonly refillPerMs: number
  /** When the last refusal was reported: one report per budget period, not one per refusal. */
  private reportedAt = Number.NEGATIVE_INFINITY

  constructor(calls: number, perSeconds: number, nowMs: number) {
    this.calls = calls
    this.perSeconds = perSeconds
    this.available = calls
    this.updatedAt = nowMs
    this.refillPerMs = calls / (perSeconds * 1000)
  }

  /** Takes one call from the budget; `false` when it is spent. */
  take(nowMs: number): boolean {
    if (nowMs > this.updatedAt) {
      this.available = Math.min(
        this.calls,
        this.available + (nowMs - this.updatedAt) * this.refillPerMs,
      )
      this.updatedAt = nowMs
    }
    if (this.available < 1) return false
    this.available -= 1
    return true
  }

  /** `true` at most once per budget period: whether a refusal now should be reported. */
  shouldReport(nowMs: number): boolean {
    if (nowMs - this.reportedAt < this.perSeconds * 1000) return false
    this.reportedAt = nowMs
    return true
  }
}
