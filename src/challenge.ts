/**
 * The `WWW-Authenticate` value of a gate's refusals: the RFC 6750 `Bearer` challenge, with the
 * RFC 9728 §5.1 `resource_metadata` parameter when the gate serves its metadata, and the RFC 9449
 * §7.1 `DPoP` challenge (with `algs`) when DPoP is on. Built by the gate's one refusal point; the
 * steps only say which error code the challenge carries.
 *
 * @module
 */
import {
  type Challenge,
  challengeDetails,
  challengeValue,
  type TollgateError,
  withChallenge,
} from './errors.js'

/** The authorization scheme a request used. */
export type CredentialScheme = 'Bearer' | 'DPoP'

/** What a gate's challenges depend on, fixed at construction. */
export interface ChallengeSettings {
  readonly realm: string
  /** The RFC 9728 metadata URL, when the gate serves its metadata. */
  readonly resourceMetadataUrl: string | undefined
  /** DPoP mode and the proof algorithms accepted, when DPoP is on. */
  readonly dpop:
    | { readonly mode: 'allowed' | 'required'; readonly algorithms: readonly string[] }
    | undefined
}

/** Adds the challenge to an error that calls for one, and returns it. */
export type Challenger = <E extends TollgateError>(
  error: E,
  scheme: CredentialScheme | undefined,
) => E

function errorParameters(error: TollgateError, code: Exclude<Challenge, null | undefined>): string {
  return `, error="${code}", error_description="${challengeValue(error.message)}"${challengeDetails(error)}`
}

/** Distinct challenges a gate keeps built: refusals come in a few kinds, each with its fixed text. */
const REMEMBERED_CHALLENGES = 64

/**
 * Builds the challenger of one gate. Without metadata or DPoP it is exactly `withChallenge`.
 * With DPoP `allowed`, both schemes are offered (RFC 9449 §7.2) and the error goes to the one
 * the request used, or to `DPoP` for proof and nonce errors; with `required`, only `DPoP`.
 */

export function createChallenger(settings: ChallengeSettings): Challenger {
  const { realm, resourceMetadataUrl, dpop } = settings
  const realmParameter = `realm="${challengeValue(realm)}"`
  const metadataParameter =
    resourceMetadataUrl === undefined
      ? ''
      : `, resource_metadata="${challengeValue(resourceMetadataUrl)}"`
  const algsParameter =
    dpop === undefined ? '' : `, algs="${challengeValue(dpop.algorithms.join(' '))}"`

  const bearer = (errorPart: string) => `Bearer ${realmParameter}${errorPart}${metadataParameter}`
  const dpopChallenge = (errorPart: string) =>
    `DPoP ${realmParameter}${errorPart}${algsParameter}${metadataParameter}`

  function render(error: TollgateError, scheme: CredentialScheme | undefined): string | undefined {
    const code = error.challenge
    if (code === undefined) return undefined
    const errorPart = code === null ? '' : errorParameters(error, code)
    if (dpop === undefined) return bearer(errorPart)
    if (dpop.mode === 'required') return dpopChallenge(errorPart)
    const toDpop = code === 'invalid_dpop_proof' || code === 'use_dpop_nonce' || scheme === 'DPoP'
    return toDpop
      ? `${bearer('')}, ${dpopChallenge(errorPart)}`
      : `${bearer(errorPart)}, ${dpopChallenge('')}`
  }

  // Built once per kind of refusal, not per refused request (issue 14: a forged-token flood).
  // Found by challenge code, then by a key that is the message itself whenever the scheme cannot
  // change the challenge (no DPoP, or DPoP required) and no scope, acr or max_age is named: no
  // key string is built per refusal (issue 24).
  const built = new Map<Challenge, Map<string, string | undefined>>()
  let remembered = 0
  const schemeMatters = dpop?.mode === 'allowed'
  return (error, scheme) => {
    const details = challengeDetails(error)
    const key =
      details === '' && !schemeMatters ? error.message : `${scheme}\n${error.message}\n${details}`
    let byKey = built.get(error.challenge)
    let value = byKey?.get(key)
    if (value === undefined && byKey?.has(key) !== true) {
      value =
        resourceMetadataUrl === undefined && dpop === undefined
          ? withChallenge(error, realm).headers['WWW-Authenticate']
          : render(error, scheme)
      if (remembered < REMEMBERED_CHALLENGES) {
        if (byKey === undefined) {
          byKey = new Map()
          built.set(error.challenge, byKey)
        }
        byKey.set(key, value)
        remembered++
      }
    }
    if (value !== undefined) error.headers['WWW-Authenticate'] = value
    return error
  }
}
