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
  /**
   * The metadata's `scopes_supported`, when set: the `scope` of a challenge whose route names no
   * scopes of its own (MCP 2025-11-25: clients fall back to it when the challenge names none).
   */
  readonly scopesSupported?: readonly string[] | undefined
  /** DPoP mode and the proof algorithms accepted, when DPoP is on. */
  readonly dpop:
    | { readonly mode: 'allowed' | 'required'; readonly algorithms: readonly string[] }
    | undefined
}

/**
 * Adds the challenge to an error that calls for one, and returns it. `scope`: the scopes the
 * route requires (space-separated), named in the challenge; without it, the gate's default.
 */
export type Challenger = <E extends TollgateError>(
  error: E,
  scheme: CredentialScheme | undefined,
  scope?: string,
) => E

function errorParameters(error: TollgateError, code: Exclude<Challenge, null | undefined>): string {
  return `, error="${code}", error_description="${challengeValue(error.message)}"${challengeDetails(error)}`
}

/** Distinct challenges a gate keeps built: refusals come in a few kinds, each with its fixed text. */
const REMEMBERED_CHALLENGES = 64

/** Challenges built, by challenge code, then by a key of what else shapes the text. */
type Built = Map<Challenge, Map<string, string | undefined>>

/**
 * Builds the challenger of one gate. Without metadata, DPoP or a scope it is exactly
 * `withChallenge`. With DPoP `allowed`, both schemes are offered (RFC 9449 §7.2) and the error goes
 * to the one the request used, or to `DPoP` for proof and nonce errors; with `required`, only
 * `DPoP`. Every challenge names `scope` (RFC 6750 §3, RFC 9449 §7.1) when the route requires scopes
 * or `scopes_supported` is set; a 403 `insufficient_scope` names the scopes that refused it.
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
  const supported = settings.scopesSupported
  const defaultScope =
    supported === undefined || supported.length === 0 ? undefined : supported.join(' ')

  function render(
    error: TollgateError,
    scheme: CredentialScheme | undefined,
    scope: string | undefined,
  ): string | undefined {
    const code = error.challenge
    if (code === undefined) return undefined
    const errorPart = code === null ? '' : errorParameters(error, code)
    // An insufficient_scope error names the scopes that refused it in its own parameters.
    const scopePart =
      scope === undefined || code === 'insufficient_scope'
        ? ''
        : `, scope="${challengeValue(scope)}"`
    const bearer = (part: string) =>
      `Bearer ${realmParameter}${part}${scopePart}${metadataParameter}`
    const dpopChallenge = (part: string) =>
      `DPoP ${realmParameter}${part}${scopePart}${algsParameter}${metadataParameter}`
    if (dpop === undefined) return bearer(errorPart)
    if (dpop.mode === 'required') return dpopChallenge(errorPart)
    const toDpop = code === 'invalid_dpop_proof' || code === 'use_dpop_nonce' || scheme === 'DPoP'
    return toDpop
      ? `${bearer('')}, ${dpopChallenge(errorPart)}`
      : `${bearer(errorPart)}, ${dpopChallenge('')}`
  }

  // Built once per kind of refusal, not per refused request (a forged-token flood must not build
  // a header per request). Found by scope, by challenge code, then by a key that is the message
  // itself whenever the scheme cannot change the challenge (no DPoP, or DPoP required) and no
  // scope, acr or max_age is named by the error: no key string is built per refusal. Scopes come
  // from the routes' guards and the options, a few fixed strings, never from the request.
  const unscoped: Built = new Map()
  const scoped = new Map<string, Built>()
  let remembered = 0
  const schemeMatters = dpop?.mode === 'allowed'
  const plain = resourceMetadataUrl === undefined && dpop === undefined
  return (error, scheme, routeScope) => {
    const scope = routeScope ?? defaultScope
    const details = challengeDetails(error)
    const key =
      details === '' && !schemeMatters ? error.message : `${scheme}\n${error.message}\n${details}`
    let built = scope === undefined ? unscoped : scoped.get(scope)
    let byKey = built?.get(error.challenge)
    let value = byKey?.get(key)
    if (value === undefined && byKey?.has(key) !== true) {
      value =
        plain && scope === undefined
          ? withChallenge(error, realm).headers['WWW-Authenticate']
          : render(error, scheme, scope)
      if (remembered < REMEMBERED_CHALLENGES) {
        if (built === undefined) {
          built = new Map()
          scoped.set(scope as string, built)
        }
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
