/**
 * Options of the development provider: their types, defaults and validation (the kit of
 * `src/validate.ts`, messages starting `createDevProvider(options):`).
 *
 * @module
 */
import { boolean, fail, integer, isRecord, oneOf, record, validateFor } from '../validate.js'
import type { TestTransmitter } from './ssf-transmitter.js'

/** A person who can sign in at the development provider. */
export interface DevUser {
  /** Subject identifier: the `sub` of their ID and access tokens. Letters, digits, `.`, `_`, `@`, `-`. */
  readonly sub: string
  /** Full name, released in the ID token with the `profile` scope. */
  readonly name?: string | undefined
  /** Released (with `email_verified: true`) in the ID token with the `email` scope. */
  readonly email?: string | undefined
  /**
   * Further OpenID Connect claims of the user (`given_name`, `preferred_username`, `locale`, …),
   * released in the ID token and at userinfo with the scope that carries them (`profile`, `email`).
   */
  readonly claims?: Readonly<Record<string, unknown>> | undefined
  /** Added to every access token issued to this user: the platform's `tenant`, for example. */
  readonly tokenClaims?: Readonly<Record<string, unknown>> | undefined
}

/** How a client authenticates at the token endpoint. */
export type DevClientAuth = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'

/** The grants a client may use. */
export type DevGrantType = 'authorization_code' | 'refresh_token' | 'client_credentials'

/** A client registered at the development provider. */
export interface DevClient {
  readonly clientId: string
  /** The shared secret of a confidential client (`client_secret_basic` or `client_secret_post`). */
  readonly clientSecret?: string | undefined
  /** Public keys of a `private_key_jwt` client (RFC 7523): `{ keys: [publicJwk] }`. */
  readonly jwks?: { readonly keys: readonly Readonly<Record<string, unknown>>[] } | undefined
  /**
   * Default: `client_secret_basic` with `clientSecret`, `private_key_jwt` with `jwks`. A client
   * authenticating another way is refused with `invalid_client`, as a real provider does.
   */
  readonly clientAuth?: DevClientAuth | undefined
  /**
   * Default: `client_credentials`, plus `authorization_code` and `refresh_token` when the client
   * has `redirectUris`.
   */
  readonly grantTypes?: readonly DevGrantType[] | undefined
  /** Where the authorization endpoint may send the browser back (sign-in's callback). */
  readonly redirectUris?: readonly string[] | undefined
  /**
   * Where the end-session endpoint may send the browser after sign-out. Default: the origin of
   * each of `redirectUris` with `/` (`http://127.0.0.1:3000/` for a redirect URI
   * `http://127.0.0.1:3000/auth/callback`), which is where `tollgate/signin` sends it by default
   * (`{baseUrl}/`); `[]` registers none. A sign-out asking for another one is refused with
   * `post_logout_redirect_uri not registered`, and the provider session stays.
   */
  readonly postLogoutRedirectUris?: readonly string[] | undefined
  /** OpenID Connect Back-Channel Logout 1.0: where logout tokens are POSTed. */
  readonly backchannelLogoutUri?: string | undefined
  /**
   * The resource scopes the client may ask for (`openid`, `profile`, `email` and
   * `offline_access` always). Default: every scope of its `audiences`. Another scope: `invalid_scope`.
   */
  readonly scopes?: readonly string[] | undefined
  /**
   * The resource indicators (keys of `resources`) the client may ask tokens for; the first is
   * used when a request names none. Default: every resource. Another one: `invalid_target`.
   */
  readonly audiences?: readonly string[] | undefined
  /** Added to every access token the client gets by `client_credentials`. */
  readonly tokenClaims?: Readonly<Record<string, unknown>> | undefined
  /**
   * Token exchange (RFC 8693, and Entra's on-behalf-of shape): the client may trade a user's
   * token for one scoped to another product, on the user's behalf. Without it, an exchange is
   * refused with `unauthorized_client`.
   */
  readonly exchange?: DevExchangePolicy | undefined
}

/** Which tokens a client may exchange, for which products, and how it is named as the actor. */
export interface DevExchangePolicy {
  /**
   * Resource indicators (keys of `resources`) whose tokens the client may exchange: a subject
   * token for another audience is refused with `invalid_grant`.
   */
  readonly from: readonly string[]
  /** Resource indicators the client may obtain tokens for; another one: `invalid_target`. */
  readonly to: readonly string[]
  /** `act.sub` of the tokens it obtains. Default: its client id. */
  readonly actor?: string | undefined
}

/** An API tokens are issued for, named by its resource indicator (RFC 8707). */
export interface DevResource {
  /** `aud` of its access tokens. Default: the resource indicator itself. */
  readonly audience?: string | undefined
  /** The scopes it knows; a token for it carries those requested and granted among them. */
  readonly scopes?: readonly string[] | undefined
  /**
   * `jwt` (default): its access tokens are signed JWTs. `opaque`: random strings the API checks
   * at the provider's introspection endpoint (`{issuer}/protocol/openid-connect/token/introspect`,
   * RFC 7662, with RFC 9701 JWT responses on request), as reference tokens are.
   */
  readonly accessTokenFormat?: 'jwt' | 'opaque' | undefined
}

/** Options of {@link createDevProvider}. */
export interface DevProviderOptions {
  /** Realm name: the issuer is `{url}/realms/{realm}`. Default `'dev'`. */
  readonly realm?: string | undefined
  /** Port on 127.0.0.1. Default `0`: a free port. */
  readonly port?: number | undefined
  /** The people who can sign in (at least one); the sign-in page lists them. */
  readonly users: readonly DevUser[]
  /** The registered clients. */
  readonly clients: readonly DevClient[]
  /**
   * The APIs, by resource indicator (an absolute URI such as `https://office.example` or
   * `urn:platform:office`): access tokens are JWTs for one of them. At least one.
   */
  readonly resources: Readonly<Record<string, DevResource>>
  /**
   * Sign this user (a `sub`) in at every authorization request, without showing the page: for
   * tests. A `login_hint` naming a configured user does the same for one request.
   */
  readonly autoLogin?: string | undefined
  /** Lifetime of access tokens, seconds. Default 300 (Keycloak's). */
  readonly accessTokenTtlSeconds?: number | undefined
  /** Lifetime of refresh tokens, seconds. Default 1800 (Keycloak's SSO idle). */
  readonly refreshTokenTtlSeconds?: number | undefined
  /**
   * Start even where `NODE_ENV` is `production` (a demo deployment). Default `false`: the
   * provider signs in anyone, and refuses to start there.
   */
  readonly allowInProduction?: boolean | undefined
  /**
   * The authentication context classes (`acr`) users sign in with, published as
   * `acr_values_supported`, weakest first (`['urn:example:pwd', 'urn:example:mfa']`). A sign-in
   * gets the first of the authorization request's `acr_values` listed here (the user is taken to
   * have completed that method), else the first of these; a session signed in with an `acr` the
   * request's `acr_values` do not list signs in again. ID and access tokens carry `acr` and
   * `auth_time`. Default: none, and no `acr` in tokens (`auth_time` and `max_age` work either way).
   */
  readonly acrValues?: readonly string[] | undefined
  /**
   * A Shared Signals transmitter (`createTestTransmitter()`) the provider sends through, as a
   * provider with SSF does: CAEP `session-revoked` for the user when a user signs out at its
   * end-session page, RISC `account-disabled` from `disableAccount(sub)`. Subjects are
   * `iss_sub` identifiers with the provider's `issuer`. A list: one transmitter per receiver's
   * stream (each its own audience and delivery, push or poll), every signal sent through each.
   * Default: none, and nothing is sent.
   */
  readonly ssf?: TestTransmitter | readonly TestTransmitter[] | undefined
  /**
   * Issue access tokens with a Token Status List reference (draft-ietf-oauth-status-list):
   * every JWT access token carries `status: { status_list: { idx, uri } }` with a fresh `idx`,
   * the list is served at `{issuer}/statuslists/access-tokens` (a Status List Token signed with
   * the provider's current key, `ttl` 60 seconds), and `revokeToken(accessToken)` sets the
   * token's status to INVALID. Default `false`.
   */
  readonly statusList?: boolean | undefined
}

export interface NormalizedDevClient {
  readonly clientId: string
  readonly clientSecret: string | undefined
  readonly jwks: { readonly keys: readonly Readonly<Record<string, unknown>>[] } | undefined
  readonly clientAuth: DevClientAuth
  readonly grantTypes: readonly DevGrantType[]
  readonly redirectUris: readonly string[]
  readonly postLogoutRedirectUris: readonly string[]
  readonly backchannelLogoutUri: string | undefined
  readonly scopes: readonly string[]
  readonly audiences: readonly string[]
  readonly tokenClaims: Readonly<Record<string, unknown>>
  readonly exchange: DevExchangePolicy | undefined
}

export interface NormalizedDevResource {
  readonly audience: string
  readonly scopes: readonly string[]
  readonly accessTokenFormat: 'jwt' | 'opaque'
}

export interface NormalizedDevProviderOptions {
  readonly realm: string
  readonly port: number
  readonly users: ReadonlyMap<string, DevUser>
  readonly clients: ReadonlyMap<string, NormalizedDevClient>
  readonly resources: ReadonlyMap<string, NormalizedDevResource>
  readonly autoLogin: string | undefined
  readonly accessTokenTtlSeconds: number
  readonly refreshTokenTtlSeconds: number
  readonly allowInProduction: boolean
  readonly acrValues: readonly string[]
  /** Empty: no transmitter. */
  readonly ssf: readonly TestTransmitter[]
  readonly statusList: boolean
}

const OPTIONS = [
  'realm',
  'port',
  'users',
  'clients',
  'resources',
  'autoLogin',
  'accessTokenTtlSeconds',
  'refreshTokenTtlSeconds',
  'allowInProduction',
  'acrValues',
  'ssf',
  'statusList',
]
const USER_OPTIONS = ['sub', 'name', 'email', 'claims', 'tokenClaims']
const CLIENT_OPTIONS = [
  'clientId',
  'clientSecret',
  'jwks',
  'clientAuth',
  'grantTypes',
  'redirectUris',
  'postLogoutRedirectUris',
  'backchannelLogoutUri',
  'scopes',
  'audiences',
  'tokenClaims',
  'exchange',
]
const GRANT_TYPES: readonly DevGrantType[] = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
]
const CLIENT_AUTH: readonly DevClientAuth[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
]
// RFC 3986 unreserved characters, so a realm is one path segment.
const REALM_NAME = /^(?!\.\.?$)[A-Za-z0-9._~-]{1,64}$/
const SUBJECT = /^[A-Za-z0-9._@-]{1,64}$/
// RFC 6749 §3.3 scope-token: printable ASCII without space, '"' and '\'.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

function text(value: unknown, path: string, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback
  if (typeof value !== 'string' || value === '') fail(path, 'must be a non-empty string', value)
  return value
}

function optionalText(value: unknown, path: string): string | undefined {
  return value === undefined ? undefined : text(value, path)
}

function list<T extends string>(
  value: unknown,
  path: string,
  check: (item: unknown, at: string) => T,
): readonly T[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) fail(path, 'must be an array', value)
  const items = value.map((item, index) => check(item, `${path}[${index}]`))
  if (new Set(items).size !== items.length) fail(path, 'must not repeat an entry')
  return Object.freeze(items)
}

function url(value: unknown, path: string): string {
  const href = text(value, path)
  if (!URL.canParse(href) || !/^https?:$/.test(new URL(href).protocol)) {
    fail(path, 'must be an absolute http(s) URL', value)
  }
  return href
}

function claims(value: unknown, path: string): Readonly<Record<string, unknown>> {
  if (value === undefined) return {}
  if (!isRecord(value)) fail(path, 'must be an object of claims', value)
  return Object.freeze({ ...value })
}

function scope(value: unknown, path: string): string {
  if (typeof value !== 'string' || !SCOPE_TOKEN.test(value)) {
    fail(path, 'must be a scope (printable ASCII without spaces or quotes)', value)
  }
  return value
}

function acrValue(value: unknown, path: string): string {
  if (typeof value !== 'string' || !SCOPE_TOKEN.test(value)) {
    fail(path, 'must be an acr value (printable ASCII without spaces or quotes)', value)
  }
  return value
}

function normalizeUser(value: unknown, path: string): DevUser {
  const user = record(value, path, USER_OPTIONS)
  const sub = text(user['sub'], `${path}.sub`)
  if (!SUBJECT.test(sub)) {
    fail(`${path}.sub`, 'must be 1 to 64 letters, digits, ".", "_", "@" or "-"', sub)
  }
  return Object.freeze({
    sub,
    name: optionalText(user['name'], `${path}.name`),
    email: optionalText(user['email'], `${path}.email`),
    claims: claims(user['claims'], `${path}.claims`),
    tokenClaims: claims(user['tokenClaims'], `${path}.tokenClaims`),
  })
}

function normalizeResource(indicator: string, value: unknown): NormalizedDevResource {
  const path = `resources["${indicator}"]`
  // RFC 8707 §2: an absolute URI without a fragment.
  if (!URL.canParse(indicator) || indicator.includes('#')) {
    fail(path, 'must be named by an absolute URI without a fragment (RFC 8707 §2)')
  }
  const resource = record(value, path, ['audience', 'scopes', 'accessTokenFormat'])
  return Object.freeze({
    audience: text(resource['audience'], `${path}.audience`, indicator),
    scopes: list(resource['scopes'], `${path}.scopes`, scope) ?? [],
    accessTokenFormat: oneOf(resource['accessTokenFormat'], `${path}.accessTokenFormat`, [
      'jwt',
      'opaque',
    ] as const),
  })
}

function normalizeClient(
  value: unknown,
  path: string,
  resources: ReadonlyMap<string, NormalizedDevResource>,
): NormalizedDevClient {
  const client = record(value, path, CLIENT_OPTIONS)
  const clientId = text(client['clientId'], `${path}.clientId`)
  const clientSecret = optionalText(client['clientSecret'], `${path}.clientSecret`)
  let jwks: NormalizedDevClient['jwks']
  if (client['jwks'] !== undefined) {
    const set = record(client['jwks'], `${path}.jwks`, ['keys'])
    const keys = set['keys']
    if (!Array.isArray(keys) || keys.length === 0 || !keys.every(isRecord)) {
      fail(`${path}.jwks.keys`, 'must be a non-empty array of public JWKs', keys)
    }
    if (keys.some((key) => 'd' in key)) {
      fail(`${path}.jwks.keys`, 'must hold public keys only (a key has the private member "d")')
    }
    jwks = Object.freeze({ keys: Object.freeze(keys.map((key) => Object.freeze({ ...key }))) })
  }
  if (clientSecret === undefined && jwks === undefined) {
    fail(path, 'needs "clientSecret" (client_secret_basic or _post) or "jwks" (private_key_jwt)')
  }
  const clientAuth =
    client['clientAuth'] === undefined
      ? jwks === undefined
        ? 'client_secret_basic'
        : 'private_key_jwt'
      : (client['clientAuth'] as DevClientAuth)
  if (!CLIENT_AUTH.includes(clientAuth)) {
    fail(`${path}.clientAuth`, `must be one of ${CLIENT_AUTH.join(', ')}`, client['clientAuth'])
  }
  if (clientAuth === 'private_key_jwt' ? jwks === undefined : clientSecret === undefined) {
    fail(
      `${path}.clientAuth`,
      `${clientAuth} needs "${clientAuth === 'private_key_jwt' ? 'jwks' : 'clientSecret'}"`,
    )
  }
  const redirectUris = list(client['redirectUris'], `${path}.redirectUris`, url) ?? []
  const grantTypes =
    list(client['grantTypes'], `${path}.grantTypes`, (item, at) => {
      if (!GRANT_TYPES.includes(item as DevGrantType)) {
        fail(at, `must be one of ${GRANT_TYPES.join(', ')}`, item)
      }
      return item as DevGrantType
    }) ??
    (redirectUris.length === 0
      ? ['client_credentials']
      : ['authorization_code', 'refresh_token', 'client_credentials'])
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    fail(`${path}.redirectUris`, 'must list at least one URL for the authorization_code grant')
  }
  const audiences =
    list(client['audiences'], `${path}.audiences`, (item, at) => {
      if (typeof item !== 'string' || !resources.has(item)) {
        fail(at, `must be a key of "resources": ${[...resources.keys()].join(', ')}`, item)
      }
      return item
    }) ?? Object.freeze([...resources.keys()])
  if (audiences.length === 0) fail(`${path}.audiences`, 'must name at least one resource')
  const scopes =
    list(client['scopes'], `${path}.scopes`, scope) ??
    Object.freeze([
      ...new Set(audiences.flatMap((indicator) => resources.get(indicator)?.scopes ?? [])),
    ])
  return Object.freeze({
    clientId,
    clientSecret,
    jwks,
    clientAuth,
    grantTypes,
    redirectUris,
    postLogoutRedirectUris:
      list(client['postLogoutRedirectUris'], `${path}.postLogoutRedirectUris`, url) ??
      Object.freeze([...new Set(redirectUris.map((uri) => `${new URL(uri).origin}/`))]),
    backchannelLogoutUri:
      client['backchannelLogoutUri'] === undefined
        ? undefined
        : url(client['backchannelLogoutUri'], `${path}.backchannelLogoutUri`),
    scopes,
    audiences,
    tokenClaims: claims(client['tokenClaims'], `${path}.tokenClaims`),
    exchange: exchangePolicy(client['exchange'], `${path}.exchange`, resources),
  })
}

function exchangePolicy(
  value: unknown,
  path: string,
  resources: ReadonlyMap<string, NormalizedDevResource>,
): DevExchangePolicy | undefined {
  if (value === undefined) return undefined
  const policy = record(value, path, ['from', 'to', 'actor'])
  const indicators = (name: string) => {
    const items = list(policy[name], `${path}.${name}`, (item, at) => {
      if (typeof item !== 'string' || !resources.has(item)) {
        fail(at, `must be a key of "resources": ${[...resources.keys()].join(', ')}`, item)
      }
      return item
    })
    if (items === undefined || items.length === 0) {
      fail(`${path}.${name}`, 'must name at least one resource indicator (a key of "resources")')
    }
    return items
  }
  return Object.freeze({
    from: indicators('from'),
    to: indicators('to'),
    actor: optionalText(policy['actor'], `${path}.actor`),
  })
}

/** Fills in defaults; throws a `TypeError` naming the first invalid option and what to fix. */
export function normalizeDevProviderOptions(options: unknown): NormalizedDevProviderOptions {
  return validateFor('createDevProvider(options):', () => {
    const root = record(options, 'options', OPTIONS)
    const realm = text(root['realm'], 'realm', 'dev')
    if (!REALM_NAME.test(realm)) {
      fail('realm', 'must be 1 to 64 letters, digits, "-", "_", "." or "~"', realm)
    }
    if (!isRecord(root['resources']) || Object.keys(root['resources']).length === 0) {
      fail(
        'resources',
        "must name at least one API by its resource indicator, e.g. { 'urn:example:orders': { audience: 'orders', scopes: ['orders:read'] } }",
        root['resources'],
      )
    }
    const resources = new Map(
      Object.entries(root['resources']).map(([indicator, value]) => [
        indicator,
        normalizeResource(indicator, value),
      ]),
    )
    if (!Array.isArray(root['users']) || root['users'].length === 0) {
      fail(
        'users',
        "must list at least one user, e.g. [{ sub: 'alice', name: 'Alice' }]",
        root['users'],
      )
    }
    const users = new Map<string, DevUser>()
    root['users'].forEach((value, index) => {
      const user = normalizeUser(value, `users[${index}]`)
      if (users.has(user.sub)) fail(`users[${index}].sub`, `repeats "${user.sub}"`)
      users.set(user.sub, user)
    })
    if (!Array.isArray(root['clients'])) fail('clients', 'must be an array', root['clients'])
    const clients = new Map<string, NormalizedDevClient>()
    root['clients'].forEach((value, index) => {
      const client = normalizeClient(value, `clients[${index}]`, resources)
      if (clients.has(client.clientId)) {
        fail(`clients[${index}].clientId`, `repeats "${client.clientId}"`)
      }
      clients.set(client.clientId, client)
    })
    const autoLogin = optionalText(root['autoLogin'], 'autoLogin')
    if (autoLogin !== undefined && !users.has(autoLogin)) {
      fail('autoLogin', `must be the sub of a user: ${[...users.keys()].join(', ')}`)
    }
    return Object.freeze({
      realm,
      port: integer(root['port'], 'port', { min: 0, max: 65_535, fallback: 0 }),
      users,
      clients,
      resources,
      autoLogin,
      accessTokenTtlSeconds: integer(root['accessTokenTtlSeconds'], 'accessTokenTtlSeconds', {
        min: 1,
        max: 86_400,
        fallback: 300,
      }),
      refreshTokenTtlSeconds: integer(root['refreshTokenTtlSeconds'], 'refreshTokenTtlSeconds', {
        min: 1,
        max: 2_592_000,
        fallback: 1800,
      }),
      allowInProduction: boolean(root['allowInProduction'], 'allowInProduction', false),
      acrValues: list(root['acrValues'], 'acrValues', acrValue) ?? [],
      ssf: transmitterOption(root['ssf']),
      statusList: boolean(root['statusList'], 'statusList', false),
    })
  })
}

/** `ssf`: test transmitters, recognised by the calls the provider makes on them. */
function transmitterOption(value: unknown): readonly TestTransmitter[] {
  if (value === undefined) return []
  const given = Array.isArray(value) ? value : [value]
  given.forEach((transmitter: unknown, index) => {
    if (
      !isRecord(transmitter) ||
      typeof transmitter['sessionRevoked'] !== 'function' ||
      typeof transmitter['accountDisabled'] !== 'function'
    ) {
      fail(
        Array.isArray(value) ? `ssf[${index}]` : 'ssf',
        'must be a transmitter of createTestTransmitter() from tollgate/testing',
      )
    }
  })
  return given as TestTransmitter[]
}
