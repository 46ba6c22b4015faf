/**
 * Claim checks that run after the signature is verified, and the read-outs of scopes and roles.
 *
 * @module
 */
import { InvalidTokenError, type RefusalReason, TokenExpiredError } from '../errors.js'
import type { TokenClaims, TokenHeader, TokenRoles } from '../types.js'

/** Validated claim rules (see `GateOptions` for meanings and defaults). */
export interface ClaimRules {
  readonly audiences: ReadonlySet<string>
  readonly clockToleranceSeconds: number
  readonly maxTokenAgeSeconds: number | undefined
  readonly maxTokenLifetimeSeconds: number | undefined
  readonly requiredClaims: readonly string[]
  readonly tokenProfile: 'access' | 'keycloak' | 'rfc9068'
  readonly allowedClientIds: ReadonlySet<string> | undefined
  /** `true` when the gate's DPoP step judges `cnf` (DPoP on); otherwise a `cnf` refuses the token. */
  readonly confirmationChecked?: boolean
  /** How scopes, roles and the client id are read. Default {@link DEFAULT_READERS}. */
  readonly readers?: ClaimReaders
  /**
   * Client ids whose tokens may carry no `aud` at all (Amazon Cognito access tokens). Every token
   * of such an issuer must name one of them as its client, `aud` or not; one that has an `aud`
   * is also held to `audiences` (a gate-level audience must not open the pool to other clients).
   */
  readonly withoutAudience?: ReadonlySet<string>
  /**
   * Claims that mark this issuer's access tokens, with their exact values (Cognito `token_use`,
   * Entra `tid`): checked on every token of the issuer, `aud` or not.
   */
  readonly accessTokenClaims?: readonly (readonly [name: string, value: string])[]
  /** Rules of issuers whose tokens are laid out differently (a provider profile's), by exact `iss`. */
  readonly byIssuer?: ReadonlyMap<string, ClaimRules>
}

/**
 * Where an issuer's tokens keep what the gate reads out of them, by claim name. Providers differ:
 * Auth0 grants API permissions in `permissions`, Okta names the client `cid`, Entra ID puts app
 * permissions in `roles`, Cognito groups in `cognito:groups`. The provider profiles set this;
 * an `{ issuer }` entry may set it too.
 */
export interface ClaimMapping {
  /**
   * Claims whose values are granted scopes, merged: each a space-separated string or an array of
   * strings. Default: `scope`, or `scp` when there is no `scope`.
   */
  readonly scopes?: readonly string[]
  /**
   * Claims whose values (arrays or space-separated strings) are the issuer-wide roles, merged into
   * `auth.roles.realm` (what `requireRealmRoles()` checks); `auth.roles.clients` stays empty.
   * Default: Keycloak's `realm_access.roles` and `resource_access[client].roles`.
   */
  readonly roles?: readonly string[]
  /**
   * Claims that name the OAuth client, the first present one wins: `auth.clientId`, events and
   * `allowedClientIds` use it. Default `azp`, then `client_id`.
   */
  readonly clientId?: readonly string[]
}

/** The read-outs of one issuer, picked once when the gate is built, never per request. */
export interface ClaimReaders {
  readonly scopes: (claims: TokenClaims) => readonly string[]
  readonly roles: (claims: TokenClaims) => TokenRoles
  readonly clientId: (claims: Readonly<Record<string, unknown>>) => string | undefined
}

const ACCESS_TOKEN_MEDIA_TYPES = new Set(['at+jwt', 'application/at+jwt'])
const GENERIC_MEDIA_TYPES = new Set(['jwt', 'application/jwt'])
const RFC9068_REQUIRED = ['sub', 'client_id', 'iat', 'jti'] as const
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
/** Claims OpenID Connect Core §2, §3.1.3.6, §3.3.2.11 define for ID tokens and no access-token profile needs. */
const ID_TOKEN_CLAIMS = ['nonce', 'at_hash', 'c_hash', 's_hash', 'auth_time'] as const
/** Claims that, when present, must be non-empty strings: an empty one would merge principals or clients. */
const IDENTIFIER_CLAIMS = ['sub', 'azp', 'client_id', 'jti'] as const

const refuse = (reason: RefusalReason, detail?: Readonly<Record<string, unknown>>) =>
  new InvalidTokenError(detail === undefined ? { reason } : { reason, detail })

/**
 * RFC 7519 §2: a NumericDate is any JSON number of seconds, fractions included, and issuers that
 * write `Date.now() / 1000` send them. Only the absurd is refused: non-finite values and anything
 * beyond ±2^53 s (an `exp` of 1e300 would never expire).
 */
function isNumericDate(value: unknown): value is number {
  return (
    typeof value === 'number' &&
    Number.isFinite(value) &&
    Math.abs(value) <= Number.MAX_SAFE_INTEGER
  )
}

const isMissing = (value: unknown) => value === undefined || value === null || value === ''

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
  const now = nowMs / 1000
  const tolerance = rules.clockToleranceSeconds
  const { exp, nbf, iat } = claims
  if (!isNumericDate(exp)) {
    throw exp === undefined
      ? refuse('missing_claim', { claim: 'exp' })
      : refuse('malformed_claim', { claim: 'exp' })
  }
  if (nbf !== undefined) {
    if (!isNumericDate(nbf)) throw refuse('malformed_claim', { claim: 'nbf' })
    if (nbf > now + tolerance) throw refuse('not_yet_valid', { nbf })
  }
  if (iat !== undefined) {
    if (!isNumericDate(iat)) throw refuse('malformed_claim', { claim: 'iat' })
    if (iat > now + tolerance) throw refuse('issued_in_future', { iat })
  }
  // The issuer's own marks (Cognito `token_use`, Entra `tid`) before audience and client, on
  // every token, `aud` or not: they say what the token is (an ID token of the pool has the app
  // client as `aud` and no `client_id`), and the refusal names the claim.
  if (rules.accessTokenClaims !== undefined) {
    for (const [name, value] of rules.accessTokenClaims) {
      if (claims[name] !== value) {
        const found = claims[name]
        throw refuse('token_type', {
          claim: name,
          expected: value,
          found: typeof found === 'string' ? found.slice(0, 64) : typeof found,
        })
      }
    }
  }
  if (rules.withoutAudience !== undefined) {
    // Cognito access tokens carry no `aud`: the client they were issued to stands in for it. It
    // is checked whether or not the token has an `aud`: a token of another app client of the pool
    // that carries the gate's audience is still another client's.
    const clientId = (rules.readers ?? DEFAULT_READERS).clientId(claims)
    if (clientId === undefined || !rules.withoutAudience.has(clientId)) {
      throw refuse('client', {
        aud: audienceForOperators(claims.aud),
        clientId: clientId?.slice(0, 128),
        expected: [...rules.withoutAudience],
      })
    }
  }
  if (
    (claims.aud !== undefined || rules.withoutAudience === undefined) &&
    !hasAudience(claims.aud, rules.audiences)
  ) {
    // The one claim value shown to operators (in `detail`, never in the response): a verified
    // token sent to the wrong service is the most common misconfiguration, and its `aud` says why.
    throw refuse('audience', {
      aud: audienceForOperators(claims.aud),
      expected: [...rules.audiences],
    })
  }
  for (const name of IDENTIFIER_CLAIMS) {
    const value = claims[name]
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      throw refuse('malformed_claim', { claim: name })
    }
  }
  // RFC 9068 §2.2.3, RFC 8693 §4.2: `scope` is one space-separated string (`scp` is the
  // provider-specific spelling that may be an array).
  if (claims.scope !== undefined && typeof claims.scope !== 'string') {
    throw refuse('malformed_claim', { claim: 'scope' })
  }
  const typeProblem = accessTokenProblem(
    header,
    claims,
    rules.tokenProfile,
    rules.confirmationChecked === true,
  )
  if (typeProblem !== undefined) throw refuse(typeProblem)
  for (const name of rules.requiredClaims) {
    if (isMissing(claims[name])) throw refuse('missing_claim', { claim: name })
  }
  if (rules.allowedClientIds !== undefined) {
    const clientId = (rules.readers ?? DEFAULT_READERS).clientId(claims)
    if (clientId === undefined || !rules.allowedClientIds.has(clientId)) {
      throw refuse('client', {
        clientId: clientId?.slice(0, 128),
      })
    }
  }
  if (rules.maxTokenLifetimeSeconds !== undefined) {
    if (!isNumericDate(iat)) throw refuse('missing_claim', { claim: 'iat' })
    if (exp - iat > rules.maxTokenLifetimeSeconds) {
      throw refuse('lifetime', { lifetimeSeconds: exp - iat })
    }
  }

  let validUntil = (exp + tolerance) * 1000
  let reason: RefusalReason = 'expired'
  if (rules.maxTokenAgeSeconds !== undefined) {
    if (!isNumericDate(iat)) throw refuse('missing_claim', { claim: 'iat' })
    const ageBound = (iat + rules.maxTokenAgeSeconds + tolerance) * 1000
    if (ageBound < validUntil) {
      validUntil = ageBound
      reason = 'too_old'
    }
  }
  if (nowMs >= validUntil) throw new TokenExpiredError({ reason, detail: { exp, iat } })
  const start = Math.max(
    isNumericDate(nbf) ? nbf : Number.NEGATIVE_INFINITY,
    isNumericDate(iat) ? iat : Number.NEGATIVE_INFINITY,
  )
  return { validFrom: (start - tolerance) * 1000, validUntil }
}

/** Bounded, so that a token with a huge `aud` cannot flood logs. */
function audienceForOperators(aud: unknown): unknown {
  const clip = (value: unknown) => (typeof value === 'string' ? value.slice(0, 128) : typeof value)
  return Array.isArray(aud) ? aud.slice(0, 8).map(clip) : aud === undefined ? undefined : clip(aud)
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
 * Refuses ID, refresh and logout tokens presented as access tokens (RFC 8725 §3.11, RFC 9068 §4).
 * Keycloak marks them in the payload `typ` (`ID`, `Refresh`, `Logout`; access tokens say `Bearer`),
 * others in the header `typ` (`logout+jwt`, `id_token+jwt`…). Most providers mark ID tokens with
 * nothing at all, so a token that carries a claim only ID tokens have (`nonce`, `at_hash`…) and no
 * access-token marker (header `at+jwt`, payload `typ: Bearer`, `scope`, `scp`, `client_id`) is an
 * ID token: otherwise a service whose audience equals an OIDC client id would accept that
 * client's ID tokens. The `keycloak` profile requires Keycloak's access-token shape, `rfc9068`
 * the RFC 9068 one. Sender-constrained tokens (`cnf`) are refused too.
 */
function accessTokenProblem(
  header: TokenHeader,
  claims: Record<string, unknown>,
  profile: ClaimRules['tokenProfile'],
  // With DPoP on, the gate's DPoP step judges `cnf` on every request instead.
  confirmationChecked: boolean,
): RefusalReason | undefined {
  const headerType = header.typ
  if (headerType !== undefined && typeof headerType !== 'string') return 'token_type'
  const mediaType = headerType?.toLowerCase()
  const declaredAccessToken = mediaType !== undefined && ACCESS_TOKEN_MEDIA_TYPES.has(mediaType)
  if (profile === 'rfc9068') {
    if (!declaredAccessToken) return 'token_type'
    if (RFC9068_REQUIRED.some((name) => isMissing(claims[name]))) return 'missing_claim'
  } else if (
    mediaType !== undefined &&
    !declaredAccessToken &&
    !GENERIC_MEDIA_TYPES.has(mediaType)
  ) {
    return 'token_type'
  }
  const payloadType = claims.typ
  if (payloadType !== undefined) {
    if (typeof payloadType !== 'string' || payloadType.toLowerCase() !== 'bearer') {
      return 'token_type'
    }
  }
  if (profile === 'keycloak') {
    if (payloadType === undefined) return 'token_type'
    if (claims.azp === undefined) return 'missing_claim'
  }
  // A sender-constrained token (DPoP, RFC 9449; mTLS, RFC 8705) presented as a plain bearer token:
  // tollgate cannot check the binding, and accepting it would make a stolen bound token usable.
  if (claims.cnf !== undefined && !confirmationChecked) return 'sender_constrained'
  const events = claims.events
  if (typeof events === 'object' && events !== null && Object.hasOwn(events, LOGOUT_EVENT)) {
    return 'token_type'
  }
  const accessMarked =
    declaredAccessToken ||
    payloadType !== undefined ||
    claims.scope !== undefined ||
    claims.scp !== undefined ||
    claims.client_id !== undefined
  if (!accessMarked && ID_TOKEN_CLAIMS.some((name) => claims[name] !== undefined)) {
    return 'token_type'
  }
  return undefined
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
    for (let index = 0; index < value.length; index++) {
      if (typeof value[index] !== 'string') {
        return Object.freeze(value.filter((item) => typeof item === 'string'))
      }
    }
    // Claims are frozen before they are read: an all-string array is shared as it is (freezing a
    // frozen array again is not free).
    return Object.isFrozen(value) ? value : Object.freeze(value)
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

/**
 * Records keyed by names from a token (client ids): no `Object.prototype` in their chain, so a
 * client named `__proto__`, `constructor` or `toString` is an own key like any other and nothing
 * is inherited. Made by a constructor whose prototype has a null prototype rather than by
 * `Object.create(null)`, whose objects V8 keeps as hash tables, several times dearer to fill and
 * freeze on every verified token.
 */
const ClientRoles = function ClientRoles() {} as unknown as new () => Record<
  string,
  readonly string[]
>
ClientRoles.prototype = Object.freeze(Object.create(null))
const NO_CLIENTS: Readonly<Record<string, readonly string[]>> = Object.freeze(new ClientRoles())

/** Keycloak roles: `realm_access.roles` and `resource_access[client].roles`. */
export function readRoles(claims: TokenClaims): TokenRoles {
  const realmAccess = ownRecord(claims.realm_access)
  const realm =
    realmAccess && Object.hasOwn(realmAccess, 'roles') ? stringList(realmAccess.roles) : NO_STRINGS
  const resourceAccess = ownRecord(claims.resource_access)
  let clients = NO_CLIENTS
  if (resourceAccess !== undefined) {
    const names = Object.keys(resourceAccess)
    if (names.length > 0) {
      const own = new ClientRoles()
      for (let index = 0; index < names.length; index++) {
        const client = names[index] as string
        const access = ownRecord(resourceAccess[client])
        if (access !== undefined && Object.hasOwn(access, 'roles')) {
          own[client] = stringList(access.roles)
        }
      }
      clients = Object.freeze(own)
    }
  }
  return Object.freeze({ realm, clients })
}

/** The OAuth client: `azp` (OpenID Connect Core §2), else `client_id` (RFC 9068 §2.2). */
export function readClientId(claims: Readonly<Record<string, unknown>>): string | undefined {
  const azp = claims.azp
  if (typeof azp === 'string' && azp !== '') return azp
  const clientId = claims.client_id
  return typeof clientId === 'string' && clientId !== '' ? clientId : undefined
}

/** Keycloak's and RFC 9068's layout: what a gate reads unless an issuer names other claims. */
export const DEFAULT_READERS: ClaimReaders = Object.freeze({
  scopes: readScopes,
  roles: readRoles,
  clientId: readClientId,
})

const NO_CLIENT_ROLES: Readonly<Record<string, readonly string[]>> = Object.freeze(
  Object.create(null),
)

/** Every string of the named claims, in order, without repeats. */
function mergedList(claims: TokenClaims, names: readonly string[]): readonly string[] {
  if (names.length === 1) return stringList(claims[names[0] as string])
  const merged = new Set<string>()
  for (const name of names) for (const item of stringList(claims[name])) merged.add(item)
  return merged.size === 0 ? NO_STRINGS : Object.freeze([...merged])
}

/**
 * The read-outs for a mapping: each one the default unless the mapping names its claims, so a
 * gate whose issuers use the defaults runs exactly the code it ran before mappings existed.
 */
export function createClaimReaders(mapping: ClaimMapping | undefined): ClaimReaders {
  if (mapping === undefined) return DEFAULT_READERS
  const { scopes, roles, clientId } = mapping
  return Object.freeze({
    scopes: scopes === undefined ? readScopes : (claims: TokenClaims) => mergedList(claims, scopes),
    roles:
      roles === undefined
        ? readRoles
        : (claims: TokenClaims) =>
            Object.freeze({ realm: mergedList(claims, roles), clients: NO_CLIENT_ROLES }),
    clientId:
      clientId === undefined
        ? readClientId
        : (claims: Readonly<Record<string, unknown>>) => {
            for (const name of clientId) {
              const value = claims[name]
              if (typeof value === 'string' && value !== '') return value
            }
            return undefined
          },
  })
}
