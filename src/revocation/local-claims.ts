/**
 * This instance's own memory of logout-token ids (`claimOnce`), beside Redis's: a replay to this
 * instance is refused even while Redis does not answer. Bounded: past `MAX_SEEN` ids it forgets
 * the oldest rather than grow (the logout token's `iat` window bounds what a replay can do).
 *
 * @module
 */

const MAX_SEEN = 100_000

export class LocalClaims {
  private readonly seen = new Map<string, number>()

  /** `true` the first time `key` is seen within `ttlMs`. */
  claim(key: string, ttlMs: number): boolean {
    const now = Date.now()
    const until = this.seen.get(key)
    if (until !== undefined && until > now) return false
    if (this.seen.size >= MAX_SEEN) this.sweep(now)
    if (this.seen.size >= MAX_SEEN) this.seen.delete(this.seen.keys().next().value as string)
    this.seen.set(key, now + ttlMs)
    return true
  }

  /** Forgets the ids whose time has passed. */
  sweep(now: number): void {
    for (const [key, until] of this.seen) if (until <= now) this.seen.delete(key)
  }
}
