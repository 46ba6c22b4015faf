/**
 * The key set at one address (a JWKS URI, or the one an issuer's discovery document names): when
 * a lookup may use the keys held, must wait for a fetch, or is answered 503 (see `jwks.ts`). Its
 * state is in its two parts: {@link KeyRefresh} (the keys and their fetches) and
 * {@link UnknownKids} (the backoff of refetches for kids it does not have). It answers 503
 * (`ServiceUnavailableError`) when no usable keys can be had, never 401.
 *
 * @module
 */
import type { JWSAlgorithm } from './algorithms.js'
import type { PreparedKey } from './jwk.js'
import { KeyRefresh, type KeySetHooks } from './jwks-refresh.js'
import { keysStatus, keysUnavailable } from './jwks-status.js'
import { NO_KEYS } from './jwks-table.js'
import type { IssuerKeysStatus, KeySetIssuer, NormalizedJWKSOptions } from './jwks-types.js'
import { UnknownKids } from './jwks-unknown-kids.js'

const NOTHING = (): void => undefined

/**
 * Issuers of one gate that name the same `jwksUri` share one (`KeySets` in `jwks.ts`): one fetch,
 * one cache, one unknown-kid backoff (a kid unknown to one of them is unknown to all, since they
 * read the same keys), and one series of `jwks_*` events, named after the first of those issuers.
 */
export class KeySet {
  /** The issuer its events name, and the one a discovery document must name. */
  readonly issuer: string
  private readonly options: NormalizedJWKSOptions
  private readonly keys: KeyRefresh
  private readonly unknownKids: UnknownKids

  constructor(
    issuer: KeySetIssuer,
    algorithms: readonly JWSAlgorithm[],
    options: NormalizedJWKSOptions,
    hooks: KeySetHooks,
  ) {
    this.issuer = issuer.issuer
    this.options = options
    this.keys = new KeyRefresh(issuer, algorithms, options, hooks)
    this.unknownKids = new UnknownKids(this.keys, options)
  }

  /**
   * Fetches the key set now, whatever the cooldown, after any fetch already under way (which may
   * have started before the provider changed its keys). Keys that are gone stop verifying, and the
   * verdicts they made are purged, as soon as it resolves.
   */
  async refreshNow(): Promise<void> {
    if (this.keys.pending !== undefined) await this.keys.pending
    await this.keys.refresh()
  }

  /** Aborts a fetch under way and starts no other; keys already fetched keep verifying. */
  close(): void {
    this.keys.close()
  }

  /**
   * Keys that may verify a token with this `kid` and `alg`; empty when none match even after the
   * refetch the cooldown allows.
   *
   * @param beforeFetch Called before the key set is fetched or a fetch awaited for this lookup,
   * and not when the answer is known without one; what it throws rejects the lookup (the
   * verifier refuses another issuer's token there, which must never make the gate fetch).
   *
   * @param issuer The issuer of the token, named in the 503's detail.
   * @throws ServiceUnavailableError `ERR_JWKS_UNAVAILABLE` when no usable keys can be had.
   */
  async resolve(
    kid: string | undefined,
    alg: JWSAlgorithm,
    beforeFetch: () => void = NOTHING,
    issuer: string = this.issuer,
  ): Promise<readonly PreparedKey[]> {
    const { keys } = this
    const now = Date.now()
    const age = now - keys.fetchedAt
    const { maxAgeMs } = this.options
    if (age < maxAgeMs) {
      if (age >= maxAgeMs * 0.8 && keys.mayAttempt(now)) {
        beforeFetch()
        void keys.refresh()
      }
      const found = keys.table.match(kid, alg)
      if (found.length > 0) return found
      return this.unknownKids.refetch(kid, alg, now, beforeFetch)
    }
    beforeFetch()
    if (keys.pending !== undefined || keys.mayAttempt(now)) await keys.refresh()
    if (Date.now() - keys.fetchedAt < maxAgeMs + this.options.staleIfErrorMs) {
      return keys.table.match(kid, alg)
    }
    throw keysUnavailable(this.keys, issuer)
  }

  /**
   * `resolve()` without waiting, when it would not have to: the matching keys while the key set
   * is fresh and has some; none for an unknown kid while refetches back off (no fetch is made or
   * awaited for it); else `undefined` (then `resolve()` decides: refetch, stale keys, 503). A
   * cache miss with known keys (a promise per miss was measured as a large part of a miss's cost
   * through an adapter), and an unknown kid in a flood of forged tokens, are then decided without
   * a promise.
   */
  resolveNow(kid: string | undefined, alg: JWSAlgorithm): readonly PreparedKey[] | undefined {
    const { keys } = this
    const now = Date.now()
    const age = now - keys.fetchedAt
    const { maxAgeMs } = this.options
    if (age >= maxAgeMs) return undefined
    const found = keys.table.match(kid, alg)
    if (found.length === 0) {
      // An unknown kid while refetches back off is refused as `resolve()` would, without its
      // promises (a flood of such tokens would make one each); short of the background refresh,
      // which it decides.
      return age < maxAgeMs * 0.8 && this.unknownKids.refusedBackedOff(now) ? NO_KEYS : undefined
    }
    if (age >= maxAgeMs * 0.8 && keys.mayAttempt(now)) void keys.refresh()
    return found
  }

  /**
   * For a cached verdict: `false` once the keys are past the stale bound (the verdict must not
   * outlive the keys that made it). Also starts the background refresh a hit would otherwise
   * never trigger, so traffic served from the cache still keeps keys fresh.
   */
  stillUsable(now: number): boolean {
    const age = now - this.keys.fetchedAt
    if (age < this.options.maxAgeMs * 0.8) return true
    if (this.keys.mayAttempt(now)) void this.keys.refresh()
    return age < this.options.maxAgeMs + this.options.staleIfErrorMs
  }

  /**
   * For `gate.ready()`: nothing while the keys are fresh (within `maxAgeMs`: a readiness probe
   * must not refetch every key set on every call, a thousand of them in a large deployment); else fetches unless backing
   * off after a failure, or waits for the fetch under way. Resolves when settled.
   */
  async warm(): Promise<void> {
    const now = Date.now()
    if (now - this.keys.fetchedAt < this.options.maxAgeMs) return
    if (this.keys.pending !== undefined || this.keys.mayAttempt(now)) await this.keys.refresh()
  }

  /** How the keys stand, reported for `issuer` (one of those sharing them). */
  status(issuer: string = this.issuer): IssuerKeysStatus {
    return keysStatus(this.keys, this.options, issuer)
  }
}
