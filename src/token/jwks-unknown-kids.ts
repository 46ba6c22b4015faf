/**
 * Refetching a key set for a `kid` it does not have, with backoff. A request with an unknown kid
 * waits for the next refetch when it is due within `minCooldownMs` (a key the provider rotated in
 * is accepted on the token's first request), else is refused at once. Each refetch that does not
 * find a kid it was made for doubles the interval, up to `cooldownMs`; one that finds one, or a
 * cooldown without unknown kids, resets it to `minCooldownMs`.
 *
 * @module
 */
import type { JWSAlgorithm } from './algorithms.js'
import type { PreparedKey } from './jwk.js'
import type { KeyRefresh } from './jwks-refresh.js'
import { NO_KEYS } from './jwks-table.js'
import type { NormalizedJWKSOptions } from './jwks-types.js'

const MAX_REQUESTED_KIDS = 64

export class UnknownKids {
  /** Current interval between refetches: `minCooldownMs`, doubling up to `cooldownMs`. */
  private intervalMs: number
  /** When a lookup last found no key for its `kid` (the backoff resets after a quiet cooldown). */
  private seenAt = Number.NEGATIVE_INFINITY
  /** The refetch waiting for its slot or under way, and the kids it was made for. */
  private fetch: Promise<void> | undefined
  private readonly requestedKids = new Set<string | undefined>()
  private readonly keys: KeyRefresh
  private readonly options: NormalizedJWKSOptions

  constructor(keys: KeyRefresh, options: NormalizedJWKSOptions) {
    this.keys = keys
    this.options = options
    this.intervalMs = options.minCooldownMs
  }

  /**
   * A `kid` the key set does not have: wait for the next refetch if it is due within
   * `minCooldownMs`, else refuse now (no keys).
   */
  async refetch(
    kid: string | undefined,
    alg: JWSAlgorithm,
    now: number,
    beforeFetch: () => void,
  ): Promise<readonly PreparedKey[]> {
    const { cooldownMs, minCooldownMs } = this.options
    if (this.refusedBackedOff(now)) return NO_KEYS
    beforeFetch()
    if (now - this.seenAt >= cooldownMs) this.intervalMs = minCooldownMs
    this.seenAt = now
    let fetch = this.fetch
    if (fetch === undefined) {
      // A fetch already under way may have started before the provider published this key: it
      // is awaited, then this kid still gets its own refetch once the interval allows.
      if (this.keys.pending !== undefined) await this.keys.pending
      const found = this.keys.table.match(kid, alg)
      if (found.length > 0) return found
      const waitMs = this.keys.lastAttemptAt + this.intervalMs - Date.now()
      if (waitMs > minCooldownMs) return NO_KEYS
      fetch = this.fetch ??= this.fetchFor(waitMs)
    }
    // Bounded: the set only decides whether the backoff resets.
    if (this.requestedKids.size < MAX_REQUESTED_KIDS) this.requestedKids.add(kid)
    await fetch
    return this.keys.table.match(kid, alg)
  }

  /**
   * Whether an unknown kid is refused at once: refetches back off (the next is more than
   * `minCooldownMs` away, and no quiet cooldown reset the interval) and no fetch is under way or
   * waiting for its slot. Then the kid counts as seen, whoever the token claims as issuer (the
   * key set decides before the verifier reads the payload); a token can claim any issuer, so
   * this gives a flood nothing it could not have by naming this one.
   */
  refusedBackedOff(now: number): boolean {
    const { cooldownMs, minCooldownMs } = this.options
    if (
      now - this.seenAt >= cooldownMs ||
      this.fetch !== undefined ||
      this.keys.pending !== undefined ||
      this.keys.lastAttemptAt + this.intervalMs - now <= minCooldownMs
    ) {
      return false
    }
    this.seenAt = now
    return true
  }

  private async fetchFor(waitMs: number): Promise<void> {
    try {
      if (waitMs > 0) await this.keys.sleep(waitMs)
      await this.keys.refresh()
      if (this.keys.lastFailure !== undefined) return
      const { cooldownMs, minCooldownMs } = this.options
      let found = false
      for (const kid of this.requestedKids) found ||= this.keys.table.has(kid)
      this.intervalMs = found
        ? minCooldownMs
        : Math.min(Math.max(this.intervalMs * 2, 1), cooldownMs)
    } finally {
      this.requestedKids.clear()
      this.fetch = undefined
    }
  }
}
