/**
 * The keys a key set holds: by fingerprint (their identity across refreshes) and by `kid` (how
 * tokens name them), replaced as a whole by each good fetch.
 *
 * @module
 */
import type { JWSAlgorithm } from './algorithms.js'
import { fingerprintOf, type PreparedKey, prepareKey } from './jwk.js'

export const NO_KEYS: readonly PreparedKey[] = Object.freeze([])
/** Tokens without `kid` may be tried against this many keys at most. */
const MAX_KEYLESS_CANDIDATES = 4

/** What {@link KeyTable.replace} changed. */
export interface KeyTableChange {
  /** Whether keys held before are gone (what they verified must be verified again). */
  readonly retired: boolean
  /** The kids of the keys now held. */
  readonly kids: string[]
}

export class KeyTable {
  private byKid = new Map<string | undefined, PreparedKey[]>()
  private byFingerprint = new Map<string, PreparedKey>()

  /** How many keys are held. */
  get size(): number {
    return this.byFingerprint.size
  }

  /** Whether a key with this `kid` is held. */
  has(kid: string | undefined): boolean {
    return this.byKid.has(kid)
  }

  /** Keys that may verify a token with this `kid` and `alg`. */
  match(kid: string | undefined, alg: JWSAlgorithm): readonly PreparedKey[] {
    if (kid === undefined) {
      const candidates: PreparedKey[] = []
      for (const key of this.byFingerprint.values()) {
        if (key.verifiers[alg] !== undefined) candidates.push(key)
      }
      return candidates.length <= MAX_KEYLESS_CANDIDATES ? candidates : NO_KEYS
    }
    const keys = this.byKid.get(kid)
    if (keys === undefined) return NO_KEYS
    if (keys.length === 1) return keys[0]?.verifiers[alg] !== undefined ? keys : NO_KEYS
    return keys.filter((key) => key.verifiers[alg] !== undefined)
  }

  /**
   * Holds the usable keys among `jwks` instead of those held (keys held before are reused, not
   * imported again; those gone are marked retired). `undefined`, and nothing changed, when none
   * is usable with `algorithms`.
   */
  replace(
    jwks: readonly unknown[],
    algorithms: readonly JWSAlgorithm[],
  ): KeyTableChange | undefined {
    const byFingerprint = new Map<string, PreparedKey>()
    for (const jwk of jwks) {
      const fingerprint = fingerprintOf(jwk)
      if (fingerprint === undefined || byFingerprint.has(fingerprint)) continue
      const prepared =
        this.byFingerprint.get(fingerprint) ??
        prepareKey(jwk as Record<string, unknown>, algorithms)
      if (prepared !== undefined) byFingerprint.set(fingerprint, prepared)
    }
    if (byFingerprint.size === 0) return undefined
    let retired = false
    for (const [fingerprint, key] of this.byFingerprint) {
      if (!byFingerprint.has(fingerprint)) key.retired = retired = true
    }
    const byKid = new Map<string | undefined, PreparedKey[]>()
    for (const key of byFingerprint.values()) {
      const sameKid = byKid.get(key.kid)
      if (sameKid === undefined) byKid.set(key.kid, [key])
      else sameKid.push(key)
    }
    this.byFingerprint = byFingerprint
    this.byKid = byKid
    const kids = [...byFingerprint.values()].flatMap((key) =>
      key.kid === undefined ? [] : [key.kid],
    )
    return { retired, kids }
  }
}
