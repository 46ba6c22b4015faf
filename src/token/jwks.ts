/**
 * Signing keys of the configured issuers: fetched from each JWKS URI (or found through OpenID
 * discovery), filtered to keys that may verify the allowed algorithms, imported once per refresh,
 * and kept fresh without making requests wait on the provider. Issuers of a gate that name the
 * same JWKS URI share one key set (one fetch, one cache, one cooldown).
 *
 * - Concurrent misses share one fetch (single flight).
 * - An unknown `kid` refetches after a short interval (`minCooldownMs`, which such a request waits
 *   for rather than being refused): a key the provider rotated in is accepted well within a second.
 *   Each such fetch that does not find the `kid` it was made for doubles the interval, up to
 *   `cooldownMs`; one that finds it, or a cooldown without unknown kids, resets it. So a flood of
 *   random kids costs a handful of fetches while it ramps up, then one per cooldown.
 * - Keys older than 80% of `maxAgeMs` are refreshed in the background; past `maxAgeMs` a request
 *   waits for the refresh; when it fails, the last good keys are served for at most
 *   `staleIfErrorMs` more (stale-if-error). A bad response never replaces good keys.
 * - No usable keys at all: `ServiceUnavailableError` (503), never a 401.
 *
 * The parts, each with its state: `jwks-set.ts` (when a lookup may use the keys held),
 * `jwks-refresh.ts` (the keys and their fetches), `jwks-unknown-kids.ts` (the unknown-kid
 * backoff), `jwks-table.ts` (the keys by kid), `jwks-source.ts` (the URL, through discovery),
 * `jwks-failure.ts` (the warning for a key set that cannot work as configured).
 *
 * @module
 */

import type { JWSAlgorithm } from './algorithms.js'
import type { PreparedKey } from './jwk.js'
import type { KeySetHooks } from './jwks-refresh.js'
import { KeySet } from './jwks-set.js'
import type { IssuerKeysStatus, KeySetIssuer, NormalizedJWKSOptions } from './jwks-types.js'

export type { PreparedKey } from './jwk.js'
export { JWKS_WARNING_CODE } from './jwks-failure.js'
export { KeySet } from './jwks-set.js'
export type { IssuerKeysStatus, NormalizedJWKSOptions } from './jwks-types.js'

/**
 * The key sets of one gate, by `jwksUri`: issuers that name the same one (Entra's multi-tenant
 * `common` keys, several realms behind one proxy) share one {@link KeySet}. An issuer found
 * through discovery keeps its own: its document must name it.
 */
export class KeySets {
  private readonly byUri = new Map<string, KeySet>()

  /** The key set at `jwksUri`, created by `create` the first time. */
  at(jwksUri: string, create: () => KeySet): KeySet {
    let keySet = this.byUri.get(jwksUri)
    if (keySet === undefined) {
      keySet = create()
      this.byUri.set(jwksUri, keySet)
    }
    return keySet
  }
}

/** The keys of one configured issuer: its {@link KeySet}, own or shared, seen as this issuer's. */
export class IssuerKeys {
  readonly issuer: string
  /** Where its keys come from; the same object for issuers sharing a `jwksUri` in one gate. */
  readonly keySet: KeySet

  /**
   * @param shared The gate's {@link KeySets}: with it, an issuer naming a `jwksUri` another issuer
   * of the gate already named shares that issuer's key set. Without it, the key set is its own.
   */
  constructor(
    issuer: KeySetIssuer,
    algorithms: readonly JWSAlgorithm[],
    options: NormalizedJWKSOptions,
    hooks: KeySetHooks,
    shared?: KeySets,
  ) {
    this.issuer = issuer.issuer
    const create = () => new KeySet(issuer, algorithms, options, hooks)
    const { jwksUri } = issuer
    this.keySet =
      shared !== undefined && jwksUri !== undefined ? shared.at(jwksUri, create) : create()
  }

  /** See {@link KeySet.refreshNow}; resolves to this issuer's status. */
  async refreshNow(): Promise<IssuerKeysStatus> {
    await this.keySet.refreshNow()
    return this.status()
  }

  /** See {@link KeySet.close}: closes the key set for every issuer sharing it. */
  close(): void {
    this.keySet.close()
  }

  /** See {@link KeySet.resolve}. */
  resolve(
    kid: string | undefined,
    alg: JWSAlgorithm,
    beforeFetch?: () => void,
  ): Promise<readonly PreparedKey[]> {
    return this.keySet.resolve(kid, alg, beforeFetch, this.issuer)
  }

  /** See {@link KeySet.resolveNow}. */
  resolveNow(kid: string | undefined, alg: JWSAlgorithm): readonly PreparedKey[] | undefined {
    return this.keySet.resolveNow(kid, alg)
  }

  /** See {@link KeySet.stillUsable}. */
  stillUsable(now: number): boolean {
    return this.keySet.stillUsable(now)
  }

  /** See {@link KeySet.warm}; resolves to this issuer's status. */
  async warm(): Promise<IssuerKeysStatus> {
    await this.keySet.warm()
    return this.status()
  }

  status(): IssuerKeysStatus {
    return this.keySet.status(this.issuer)
  }
}
