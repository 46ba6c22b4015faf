/**
 * Claim checks that run after the signature is verified, and the read-outs of scopes and roles.
 *
 * @module
 */
import { InvalidTokenError, TokenExpiredError } from './errors.js'
import type { TokenClaims, TokenHeader, TokenRoles } from './types.js'

/** Validated claim rules (see `GateOptions` for meanings and defaults). */
export interface ClaimRules {
  readonly audiences: ReadonlySet<string>
  readonly clockToleranceSeconds: number
  readonly maxTokenAgeSeconds: number | undefined
  readonly requiredClaims: readonly string[]
  readonly tokenProfile: 'access' | 'rfc9068'
  readonly realm: string
}

const ACCESS_TOKEN_MEDIA_TYPES = new Set(['at+jwt', 'application/at+jwt'])
const GENERIC_MEDIA_TYPES = new Set(['jwt', 'application/jwt'])
const RFC9068_REQUIRED = ['sub', 'client_id', 'iat', 'jti'] as const
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** The one description every refusal of a token shares, apart from expiry. */
export const INVALID_TOKEN = 'invalid token'

function isNumericDate(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value)
}

/**
 * Checks `exp`, `nbf`, `iat`, `aud`, the token type and required claims of a token whose
 * signature and issuer were verified. Returns when (ms) the verdict holds: from `nbf`/`iat` minus
 * the tolerance, until `exp` or the maximum age plus the tolerance, so a cache never answers
 * outside that span even when the clock moves back.
 *
 * @throws InvalidTokenError (401) — `TokenExpiredError` for an `exp` or age in the past.
 */
export function checkClaims(
  header: TokenHeader,
  claims: Record<string, unknown>,
  rules: ClaimRules,
  nowMs: number,
): { validFrom: number; validUntil: number } {
  const realm = rules.realm
  const now = nowMs / 1000
  const tolerance = rules.clockToleranceSeconds
  const { exp, nbf, iat } = claims
  if (!isNumericDate(exp)) throw new InvalidTokenError(INVALID_TOKEN, { realm })
  if (nbf !== undefined && (!isNumericDate(nbf) || nbf > now + tolerance)) {
    throw new InvalidTokenError(INVALID_TOKEN, { realm })
  }
  if (iat !== undefined && (!isNumericDate(iat) || iat > now + tolerance)) {
    throw new InvalidTokenError(INVALID_TOKEN, { realm })
  }
  if (!hasAudience(claims.aud, rules.audiences))
    throw new InvalidTokenError(INVALID_TOKEN, { realm })
  if (!isAccessToken(header, claims, rules.tokenProfile)) {
    throw new InvalidTokenError(INVALID_TOKEN, { realm })
  }
  if (claims.sub !== undefined && typeof claims.sub !== 'string') {
    throw new InvalidTokenError(INVALID_TOKEN, { realm })
  }
  for (const name of rules.requiredClaims) {
    if (claims[name] === undefined || claims[name] === null) {
      throw new InvalidTokenError(INVALID_TOKEN, { realm })
    }
  }

  let validUntil = (exp + tolerance) * 1000
  if (rules.maxTokenAgeSeconds !== undefined) {
    if (!isNumericDate(iat)) throw new InvalidTokenError(INVALID_TOKEN, { realm })
    validUntil = Math.min(validUntil, (iat + rules.maxTokenAgeSeconds + tolerance) * 1000)
  }
  if (nowMs >= validUntil) throw new TokenExpiredError({ realm })
  const start = Math.max(
    isNumericDate(nbf) ? nbf : Number.NEGATIVE_INFINITY,
    isNumericDate(iat) ? iat : Number.NEGATIVE_INFINITY,
  )
  return { validFrom: (start - tolerance) * 1000, validUntil }
}

function hasAudience(aud: unknown, accepted: ReadonlySet<string>): boolean {
  if (typeof aud === 'string') return accepted.has(aud)
  if (!Array.isArray(aud) || aud.length === 0) return false
  let found = false
  for (const value of aud) {
    if (typeof value !== 'string') return false
    if (accepted.has(value)) found = true
  }
  return found
}

/**
 * Refuses ID, refresh and logout tokens presented as access tokens (RFC 8725 §3.11): Keycloak marks
 * them in the payload `typ` (`ID`, `Refresh`, `Logout`; access tokens say `Bearer`), others in the
 * header `typ` (`logout+jwt`, `id_token+jwt`…). The `rfc9068` profile requires `at+jwt` and the
 * claims RFC 9068 §2.2 makes mandatory. Sender-constrained tokens (`cnf`) are refused too.
 */
function isAccessToken(
  header: TokenHeader,
  claims: Record<string, unknown>,
  profile: ClaimRules['tokenProfile'],
): boolean {
  const headerType = header.typ
  if (headerType !== undefined && typeof headerType !== 'string') return false
  const mediaType = headerType?.toLowerCase()
  if (profile === 'rfc9068') {
    if (mediaType === undefined || !ACCESS_TOKEN_MEDIA_TYPES.has(mediaType)) return false
    if (RFC9068_REQUIRED.some((name) => claims[name] === undefined)) return false
  } else if (
    mediaType !== undefined &&
    !ACCESS_TOKEN_MEDIA_TYPES.has(mediaType) &&
    !GENERIC_MEDIA_TYPES.has(mediaType)
  ) {
    return false
  }
  const payloadType = claims.typ
  if (payloadType !== undefined) {
    if (typeof payloadType !== 'string' || payloadType.toLowerCase() !== 'bearer') return false
  }
  // A sender-constrained token (DPoP, RFC 9449; mTLS, RFC 8705) presented as a plain bearer token:
  // tollgate cannot check the binding, and accepting it would make a stolen bound token usable.
  if (claims.cnf !== undefined) return false
  const events = claims.events
  if (typeof events === 'object' && events !== null && Object.hasOwn(events, LOGOUT_EVENT)) {
    return false
  }
  return true
}

const NO_STRINGS: readonly string[] = Object.freeze([])

function stringList(value: unknown): readonly string[] {
  if (typeof value === 'string') {
    if (value === '') return NO_STRINGS
    const items = value.split(' ')
    // Only a doubled, leading or trailing space leaves empty items.
    return Object.freeze(items.includes('') ? items.filter((item) => item !== '') : items)
  }
  if (Array.isArray(value)) {
    // Claims are frozen before they are read: an all-string array can be shared as it is.
    return value.every((item) => typeof item === 'string')
      ? Object.freeze(value)
      : Object.freeze(value.filter((item) => typeof item === 'string'))
  }
  return NO_STRINGS
}

/** Granted scopes: `scope` (RFC 8693 §4.2, space-separated) or else `scp` (array or string). Frozen. */
export function readScopes(claims: TokenClaims): readonly string[] {
  return stringList(claims.scope !== undefined ? claims.scope : claims.scp)
}

function ownRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

/** Keycloak roles: `realm_access.roles` and `resource_access[client].roles`. */
export function readRoles(claims: TokenClaims): TokenRoles {
  const realmAccess = ownRecord(claims.realm_access)
  const realm =
    realmAccess && Object.hasOwn(realmAccess, 'roles') ? stringList(realmAccess.roles) : []
  const clients: Record<string, readonly string[]> = Object.create(null)
  const resourceAccess = ownRecord(claims.resource_access)
  if (resourceAccess !== undefined) {
    for (const client of Object.keys(resourceAccess)) {
      const access = ownRecord(resourceAccess[client])
      if (access !== undefined && Object.hasOwn(access, 'roles')) {
        clients[client] = stringList(access.roles)
      }
    }
  }
  return Object.freeze({ realm, clients: Object.freeze(clients) })
}
