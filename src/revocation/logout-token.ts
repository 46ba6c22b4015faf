/**
 * Verification of an OpenID Connect Back-Channel Logout token (Back-Channel Logout 1.0 §2.4,
 * §2.6): the same compact JWS parser, algorithm allow-list and issuer keys as access tokens, then
 * the logout token's own claims. Replay (`jti` seen before) is checked by the caller, which owns
 * the store.
 *
 * @module
 */

import { isTollgateError, ServiceUnavailableError } from '../errors.js'
import type { LogoutRefusalReason } from '../events.js'
import type { JWSAlgorithm } from '../token/algorithms.js'
import type { IssuerKeys } from '../token/jwks.js'
import { parseCompactJWS } from '../token/jws.js'
import { findSigner } from '../token/verify.js'

export type { LogoutRefusalReason } from '../events.js'

/** A logout token that passed every check but the replay check. */
export interface VerifiedLogoutToken {
  readonly issuer: string
  readonly jti: string
  readonly sid: string | undefined
  readonly sub: string | undefined
  readonly iat: number
  /** Absent only when the rules accept a token without one (`requireExp: false`). */
  readonly exp: number | undefined
}

/** Everything logout token verification needs, built once by the gate. */
export interface LogoutTokenRules {
  readonly keys: ReadonlyMap<string, { readonly keys: IssuerKeys }>
  readonly algorithms: ReadonlySet<string>
  readonly maxTokenBytes: number
  readonly clockToleranceSeconds: number
  /** The gateway's client ids at the provider; `aud` must hold one. */
  readonly audiences: ReadonlySet<string>
  /** The `iat` window, in seconds. */
  readonly maxAgeSeconds: number
  /**
   * `false` accepts a token without `exp` (drafts of Back-Channel Logout before the final 1.0
   * made it required): the `iat` window bounds it instead, and the caller's replay memory of its
   * `jti` lasts that window.
   */
  readonly requireExp: boolean
}

/**
 * How long a provider should wait before sending again a token refused for want of keys, when
 * the key set gave no time of its own: the longest unknown-kid refetches back off by default
 * (`jwks.cooldownMs`).
 */
const KEYS_RETRY_AFTER_SECONDS = 30

/** A refused logout token; `reason` is for operators only. */
export class LogoutRefusal extends Error {
  readonly reason: LogoutRefusalReason
  readonly issuer: string | undefined
  /**
   * Set when the refusal is temporary (`keys_unavailable`): the signing keys could not be had
   * now, so the token was not judged, and the same token may be accepted later. Callbacks answer
   * 503 with `Retry-After` in seconds, so that providers which retry do.
   */
  readonly retryAfterSeconds: number | undefined

  constructor(reason: LogoutRefusalReason, issuer?: string, cause?: unknown) {
    super('invalid logout token', cause === undefined ? undefined : { cause })
    this.name = 'LogoutRefusal'
    this.reason = reason
    this.issuer = issuer
    this.retryAfterSeconds =
      reason !== 'keys_unavailable'
        ? undefined
        : cause instanceof ServiceUnavailableError
          ? cause.retryAfterSeconds
          : KEYS_RETRY_AFTER_SECONDS
  }
}

/**
 * Whether the key set answered a lookup that found nothing with keys fetched while the lookup ran
 * (`since`): only then is the `kid` known to be absent. A refetch refused (unknown kids back off
 * after a flood) or failed leaves the token unjudged: the provider may have just rotated to a
 * key this gate has not fetched yet.
 */
function fetchedSince(keys: IssuerKeys, since: number): boolean {
  const { fetchedAt, lastFailure } = keys.status()
  return lastFailure === undefined && fetchedAt !== undefined && fetchedAt >= since
}

export const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
/** §2.4: explicit typing is `logout+jwt`; providers that predate it send `JWT` or nothing. */
const LOGOUT_MEDIA_TYPES = new Set([
  'logout+jwt',
  'application/logout+jwt',
  'jwt',
  'application/jwt',
])
const MAX_KID_LENGTH = 256
const MAX_ID_LENGTH = 1024

const isNumericDate = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value)

function optionalId(value: unknown, issuer: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID_LENGTH) {
    throw new LogoutRefusal('malformed_claim', issuer)
  }
  return value
}

function hasAudience(aud: unknown, accepted: ReadonlySet<string>): boolean {
  if (typeof aud === 'string') return accepted.has(aud)
  if (!Array.isArray(aud)) return false
  return aud.every((item) => typeof item === 'string') && aud.some((item) => accepted.has(item))
}

/** A provider's JWS whose signature verified with one configured issuer's keys. */
export interface SignedByIssuer {
  readonly issuer: string
  readonly header: Readonly<Record<string, unknown>>
  readonly payload: Record<string, unknown>
}

/**
 * Verifies a JWS a provider sent (logout token, Keycloak admin action) with the keys of the
 * issuer it names in `iss`, or, with `issuers: 'any'` (Keycloak's admin actions carry no `iss`),
 * of the configured issuer whose keys verify it.
 *
 * @throws LogoutRefusal for every refusal.
 */
export async function verifyProviderJWS(
  token: string,
  rules: Pick<LogoutTokenRules, 'keys' | 'algorithms' | 'maxTokenBytes'>,
  issuers: 'iss' | 'any',
  mediaTypes: ReadonlySet<string>,
): Promise<SignedByIssuer> {
  if (token.length > rules.maxTokenBytes) throw new LogoutRefusal('too_large')
  const parsed = parseCompactJWS(token)
  if (parsed === undefined) throw new LogoutRefusal('malformed')
  const { header, payload } = parsed
  const alg = header.alg
  // RFC 8725 §3.1: the gate's allow-list decides, as for access tokens.
  if (typeof alg !== 'string' || !rules.algorithms.has(alg)) throw new LogoutRefusal('algorithm')
  if (header.crit !== undefined || header.b64 !== undefined) throw new LogoutRefusal('header')
  const kid = header.kid
  if (kid !== undefined && (typeof kid !== 'string' || kid === '' || kid.length > MAX_KID_LENGTH)) {
    throw new LogoutRefusal('header')
  }
  const typ = header.typ
  if (typ !== undefined && (typeof typ !== 'string' || !mediaTypes.has(typ.toLowerCase()))) {
    // An access token (`at+jwt`) or anything else typed for another use (RFC 8725 §3.11).
    throw new LogoutRefusal('token_type')
  }
  let names: string[]
  if (issuers === 'iss') {
    const iss = payload.iss
    if (typeof iss !== 'string' || !rules.keys.has(iss)) throw new LogoutRefusal('unknown_issuer')
    names = [iss]
  } else {
    // Without `iss` the key decides: a `kid` only ever selects among one issuer's keys.
    if (kid === undefined) throw new LogoutRefusal('header')
    names = [...rules.keys.keys()]
  }
  let tried = 0
  // The first issuer whose keys could not be had: another issuer may still verify the token (a
  // push names none), so the loop goes on; if no key could be tried, the refusal is temporary.
  let unavailable: LogoutRefusal | undefined
  for (const name of names) {
    const keys = (rules.keys.get(name) as { keys: IssuerKeys }).keys
    const startedAt = Date.now()
    let candidates: Awaited<ReturnType<IssuerKeys['resolve']>>
    try {
      candidates = await keys.resolve(kid as string | undefined, alg as JWSAlgorithm)
    } catch (error) {
      if (!isTollgateError(error)) throw error
      unavailable ??= new LogoutRefusal('keys_unavailable', undefined, error)
      continue
    }
    tried += candidates.length
    if (findSigner(parsed, candidates, alg as JWSAlgorithm) !== undefined) {
      return { issuer: name, header, payload }
    }
    if (candidates.length === 0 && !fetchedSince(keys, startedAt)) {
      unavailable ??= new LogoutRefusal('keys_unavailable')
    }
  }
  // A key that was tried and failed is a verdict (its kid selects among one issuer's keys).
  if (tried > 0) throw new LogoutRefusal('signature')
  throw unavailable ?? new LogoutRefusal('unknown_kid')
}

/**
 * Verifies a logout token's signature with its issuer's keys and checks its claims (§2.6 steps
 * 1–6; step 7, the `jti` replay check, is the caller's).
 *
 * @throws LogoutRefusal for every refusal.
 */
export async function verifyLogoutToken(
  token: string,
  rules: LogoutTokenRules,
  nowMs: number,
): Promise<VerifiedLogoutToken> {
  const { issuer, payload } = await verifyProviderJWS(token, rules, 'iss', LOGOUT_MEDIA_TYPES)
  return checkLogoutClaims(payload, issuer, rules, nowMs)
}

/** §2.6 steps 3–6 on a token whose signature and issuer were verified. */
function checkLogoutClaims(
  claims: Record<string, unknown>,
  issuer: string,
  rules: LogoutTokenRules,
  nowMs: number,
): VerifiedLogoutToken {
  const now = nowMs / 1000
  const tolerance = rules.clockToleranceSeconds
  const refuse = (reason: LogoutRefusalReason) => new LogoutRefusal(reason, issuer)
  if (!hasAudience(claims.aud, rules.audiences)) throw refuse('audience')
  const { iat, exp, nbf } = claims
  if (iat === undefined) throw refuse('missing_claim')
  // §2.4 of the final spec requires exp; earlier drafts' providers send none (a reason of its own,
  // so that an operator sees what to change).
  if (exp === undefined && rules.requireExp) throw refuse('missing_exp')
  if (!isNumericDate(iat) || (exp !== undefined && !isNumericDate(exp))) {
    throw refuse('malformed_claim')
  }
  if (iat > now + tolerance) throw refuse('issued_in_future')
  // §2.6 step 5: "the iat … within an acceptable range": bounds how long a captured token is worth replaying.
  if (iat < now - rules.maxAgeSeconds - tolerance) throw refuse('too_old')
  if (exp !== undefined && exp + tolerance <= now) throw refuse('expired')
  if (nbf !== undefined && (!isNumericDate(nbf) || nbf > now + tolerance)) {
    throw refuse('not_yet_valid')
  }
  // §2.4: the events member must name the back-channel logout event, with a JSON object value.
  const events = claims.events
  const event =
    typeof events === 'object' && events !== null && !Array.isArray(events)
      ? Object.hasOwn(events, LOGOUT_EVENT)
        ? (events as Record<string, unknown>)[LOGOUT_EVENT]
        : undefined
      : undefined
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw refuse('events')
  // §2.4: a nonce would let an ID token pass for a logout token.
  if (claims.nonce !== undefined) throw refuse('nonce')
  const sid = optionalId(claims.sid, issuer)
  const sub = optionalId(claims.sub, issuer)
  if (sid === undefined && sub === undefined) throw refuse('missing_claim')
  const jti = optionalId(claims.jti, issuer)
  if (jti === undefined) throw refuse('missing_claim')
  return { issuer, jti, sid, sub, iat, exp }
}
