/**
 * Options of `createSignIn()`: their types and their schema (validation once, at construction,
 * defaults, the reference table). The provider and client options are the token source's (same
 * names, same checks).
 *
 * @module
 */
import {
  type ClientAuthenticationOptions,
  isLoopback,
  type NormalizedTokenSourceOptions,
  normalizeClientPart,
  tokenSourceSchema,
} from '../client/options.js'
import {
  type NormalizedParameters,
  parametersOption,
  type TokenParameters,
} from '../client/parameters.js'
import { describeSecret, isEnvReference, type SecretInput } from '../client/secrets.js'
import { any, custom, flag, fn, group, int, type Normalized, passed } from '../options-kit.js'
import type { IssuerOptions } from '../token/issuers.js'
import { fail, integer, isRecord, record, validateFor } from '../validate.js'
import type { SignInEventListener } from './events.js'
import type { SignInKey } from './key-ring.js'
import { createMemorySessionStore, type SessionStore } from './store.js'

/** The routes sign-in answers, as paths on this site. */
export interface SignInRoutes {
  /** Starts a sign-in (GET; `?returnTo=/path`). Default `/auth/login`. */
  readonly login?: string
  /** The redirect URI's path, where the provider sends the code. Default `/auth/callback`. */
  readonly callback?: string
  /** Ends the session and signs out at the provider (POST). Default `/auth/logout`. */
  readonly logout?: string
  /** OpenID Connect Back-Channel Logout endpoint (POST from the provider). Default `/auth/backchannel-logout`. */
  readonly backChannelLogout?: string
  /**
   * OpenID Connect Front-Channel Logout endpoint (GET `?iss=…&sid=…`, in an iframe of the
   * provider's logout page). Default `/auth/frontchannel-logout`.
   */
  readonly frontChannelLogout?: string
}

/** The session: its cookie and its lifetime. */
export interface SessionOptions {
  /** The cookie's name. Default `tollgate.sid`, sent as `__Host-tollgate.sid` when `Secure`. */
  readonly cookieName?: string
  /** The session ends after this long without a request, in seconds. Default 1800 (30 min). */
  readonly idleTimeoutSeconds?: number
  /** The session ends this long after sign-in, whatever happens, in seconds. Default 28800 (8 h). */
  readonly absoluteTimeoutSeconds?: number
  /**
   * `false` drops the cookie's `Secure` attribute, for a `baseUrl` of plain http on loopback (local
   * development) only; refused anywhere else. Default `true`.
   */
  readonly secureCookie?: boolean
}

/** When a session's access tokens are refreshed. */
export interface SessionRefreshOptions {
  /** An access token is refreshed once it has less than this left, in seconds. Default 60. */
  readonly beforeExpirySeconds?: number
  /**
   * How long one instance may hold a session's refresh lock, in ms. It must outlast a refresh
   * (up to three provider requests, each up to `timeoutMs`: discovery, the token request, and the
   * keys that verify the refreshed ID token): a refresh that outlived its lock could not store the
   * rotated refresh token. Must exceed `3 × timeoutMs`. Default `3 × timeoutMs + 5000`.
   */
  readonly lockMs?: number
}

/** Options of `createSignIn()` (and of `signIn()` in every adapter: Express, Koa, Fastify, Hono, Fetch). */
export interface SignInOptions extends ClientAuthenticationOptions {
  /** The provider: `keycloak({ authUrl, realm })`, or an issuer URL with `discovery: true`. */
  readonly issuer: string | IssuerOptions | readonly IssuerOptions[]
  /** Read the provider's endpoints from its discovery document. Default false (Keycloak paths). */
  readonly discovery?: boolean
  /** This application's public origin (`https://office.example.com`); the redirect URI is built on it. */
  readonly baseUrl: string
  /** The routes sign-in answers, as paths on this site. */
  readonly routes?: SignInRoutes
  /** Scopes of the sign-in. Default `openid profile email` (the spec's); `openid` is required. */
  readonly scope?: string | readonly string[]
  /**
   * The products this application calls for the user, by name: each a resource indicator
   * (RFC 8707) or audience and the scopes its token needs. `accessToken('office')` returns the
   * user's token for that product. The first one is the token of the code exchange.
   */
  readonly products?: Readonly<Record<string, TokenParameters>>
  /**
   * The key ring that encrypts tokens at rest and signs the cookie: `fromEnv('SIGNIN_KEYS')`
   * (text `id=base64secret,…`, newest first), an array of `{ id, secret }`, or a function returning
   * either. Each secret at least 32 random bytes.
   */
  readonly keys: SecretInput<string | readonly SignInKey[]>
  /** Where sessions live. Default: in this process's memory ({@link createMemorySessionStore}). */
  readonly store?: SessionStore
  /** The session: its cookie and its lifetime. */
  readonly session?: SessionOptions
  /** When a session's access tokens are refreshed. */
  readonly refresh?: SessionRefreshOptions
  /** Where the provider sends the user after signing out. Default `{baseUrl}/`. */
  readonly postLogoutRedirectUri?: string
  /**
   * The JWS algorithms an ID token may be signed with. Default: the asymmetric ones (`RS256`,
   * `RS384`, `RS512`, `PS256`, `PS384`, `PS512`, `ES256`, `ES384`, `ES512`, `EdDSA`, `Ed25519`),
   * verified against the provider's keys. `HS256`, `HS384` and `HS512` (keyed by the client
   * secret, OpenID Connect Core §10.1) only when listed here, alone (a client's ID tokens are
   * signed one way), and only with a `clientSecret`. An ID token in another of these algorithms
   * ends the callback with `ERR_CLIENT_REFUSED` (500), naming the algorithm and this option; an
   * unsigned one (`alg: none`) or one in an algorithm outside them, which no configuration can
   * accept, with `ERR_SIGNIN_CALLBACK_INVALID` (400, reason `id_token_unsigned` or
   * `id_token_algorithm_unsupported`).
   */
  readonly idTokenAlgorithms?: readonly string[]
  /**
   * Allowed clock skew between this machine and the provider, in seconds; default 5. It is how far
   * the ID token's `exp` and `iat` and a logout token's `iat` and `exp` may be off, and how much
   * older than a step-up's `maxAge` the ID token's `auth_time` may be: a step-up with `maxAge: 60`
   * admits a sign-in at most 65 s old by default. The gate's `clockToleranceSeconds` has the same
   * default; openid-client's own (30) is not used.
   */
  readonly clockToleranceSeconds?: number
  /**
   * Back-channel logout tokens. `requireExp` (default `true`): a logout token without `exp` is
   * refused, as Back-Channel Logout 1.0 final requires; `false` accepts one while its `iat` is at
   * most 120 s old (providers built on earlier drafts), its `jti` accepted once in that window.
   */
  readonly logoutToken?: { readonly requireExp?: boolean }
  /** Receives sign-in events (never a token, a code or a cookie). Exceptions it throws are ignored. */
  readonly onEvent?: SignInEventListener
  /** Deadline of one request to the provider, in ms. Default 10000. */
  readonly timeoutMs?: number
  /** Allow `http:` to a provider not on loopback. Default false. */
  readonly allowInsecureHttp?: boolean
  /** A fetch implementation (proxies, custom CAs). Default: the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch
  /** Milliseconds since the epoch. Default `Date.now`. For tests and demos that move time. */
  readonly clock?: { now(): number }
}

const CLIENT_KEYS = [
  'issuer',
  'discovery',
  'clientId',
  'clientAuth',
  'clientSecret',
  'privateKey',
  'privateKeyId',
  'privateKeyAlgorithm',
  'timeoutMs',
  'allowInsecureHttp',
  'fetch',
  'clock',
] as const
const ROUTE = /^\/[A-Za-z0-9._~!$&'()*+,;=:@/-]{0,200}$/
const COOKIE_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/
const PRODUCT_NAME = /^[A-Za-z0-9_.-]{1,64}$/
const STORE_METHODS = ['read', 'create', 'replace', 'delete', 'lock', 'unlock', 'indexed']

const client = tokenSourceSchema.fields
const route = (fallback: string) =>
  custom(
    (value = fallback, path) => {
      if (typeof value !== 'string' || !ROUTE.test(value) || value.startsWith('//')) {
        fail(path, 'must be a path starting with /, without a query', value)
      }
      return value
    },
    { accepts: 'path', default: `\`${fallback}\`` },
  )

/** The schema of {@link SignInOptions}: rules, defaults and the reference table. */
export const signInSchema = group<SignInOptions>()(
  {
    issuer: passed(client.issuer),
    discovery: passed(client.discovery),
    clientId: passed(client.clientId),
    clientAuth: passed(client.clientAuth),
    clientSecret: passed(client.clientSecret),
    privateKey: passed(client.privateKey),
    privateKeyId: passed(client.privateKeyId),
    privateKeyAlgorithm: passed(client.privateKeyAlgorithm),
    timeoutMs: passed(client.timeoutMs),
    allowInsecureHttp: passed(client.allowInsecureHttp),
    fetch: passed(client.fetch),
    clock: passed(client.clock),
    baseUrl: custom(baseUrlOption, { accepts: 'https origin', default: 'required' }),
    routes: group<SignInRoutes>()(
      {
        login: route('/auth/login'),
        callback: route('/auth/callback'),
        logout: route('/auth/logout'),
        backChannelLogout: route('/auth/backchannel-logout'),
        frontChannelLogout: route('/auth/frontchannel-logout'),
      },
      {
        doc: { type: 'SignInRoutes' },
        finish: (routes, path) => {
          if (new Set(Object.values(routes)).size !== 5) fail(path, 'must be five different paths')
          return Object.freeze(routes)
        },
      },
    ),
    scope: custom(scopeOption, { accepts: 'string or strings', default: "'openid profile email'" }),
    products: custom(productsOption, { accepts: '{ [name]: { resource, audience, scope } }' }),
    keys: custom(keysOption, {
      accepts: "fromEnv('NAME'), [{ id, secret }] or a function",
      default: 'required',
    }),
    store: any<SessionStore>({ accepts: 'session store', default: 'in memory' }),
    session: group<SessionOptions>()(
      {
        cookieName: custom(
          (value = 'tollgate.sid', path) => {
            if (typeof value !== 'string' || !COOKIE_NAME.test(value)) {
              fail(path, 'must be 1 to 64 cookie-name characters (RFC 6265 token)', value)
            }
            return value
          },
          { accepts: 'cookie name', default: "'tollgate.sid'" },
        ),
        idleTimeoutSeconds: int({ min: 60, max: 30 * 86_400, fallback: 1800 }),
        absoluteTimeoutSeconds: custom(
          (value, path, { idleTimeoutSeconds }) => {
            const seconds = integer(value, path, { fallback: 28_800, min: 60, max: 90 * 86_400 })
            if (seconds < (idleTimeoutSeconds as number)) {
              fail(path, 'must not be below session.idleTimeoutSeconds')
            }
            return seconds
          },
          { accepts: 'integer idleTimeoutSeconds–7 776 000', default: '28800' },
        ),
        secureCookie: flag(true),
      },
      { doc: { type: 'SessionOptions' } },
    ),
    refresh: group<SessionRefreshOptions>()(
      {
        beforeExpirySeconds: int({ min: 0, max: 3600, fallback: 60 }),
        lockMs: custom(
          (value, _path, seen) =>
            refreshLockMs(value, (seen['client'] as NormalizedTokenSourceOptions).timeoutMs),
          { accepts: 'integer above 3 × timeoutMs, to 300 000', default: '3 × timeoutMs + 5000' },
        ),
      },
      { doc: { type: 'SessionRefreshOptions' } },
    ),
    postLogoutRedirectUri: custom(
      (value, path, { baseUrl }) =>
        value === undefined ? `${baseUrl}/` : absoluteUrl(value, path),
      { accepts: 'http(s) URL', default: '`{baseUrl}/`' },
    ),
    idTokenAlgorithms: custom(
      (value, _path, seen) =>
        idTokenAlgorithmsOption(value, (seen['client'] as NormalizedTokenSourceOptions).clientAuth),
      { accepts: 'JWS algorithm names', default: 'the asymmetric ones' },
    ),
    clockToleranceSeconds: int({ min: 0, max: 300, fallback: 5 }),
    logoutToken: group<{ readonly requireExp?: boolean }>()(
      { requireExp: flag(true) },
      { doc: { accepts: '{ requireExp }', default: '{ requireExp: true }' } },
    ),
    onEvent: fn<SignInEventListener>('(event) => void'),
  },
  {
    absent: 'required',
    // Sign-in's own hint for a provider that is not Keycloak comes before the client options'.
    before: (input) => {
      issuerNeedsDiscovery(input)
      const clientPart: Record<string, unknown> = {}
      for (const key of CLIENT_KEYS) if (input[key] !== undefined) clientPart[key] = input[key]
      return { client: normalizeClientPart(clientPart) }
    },
    finish: (options, _path, seen) => {
      const client = seen['client'] as NormalizedTokenSourceOptions
      const { routes, scope, products, keys, session, refresh, idTokenAlgorithms } = options
      const secureCookie = session.secureCookie
      const base = new URL(options.baseUrl)
      if (!secureCookie && !(base.protocol === 'http:' && isLoopback(base.hostname))) {
        fail(
          'session.secureCookie',
          'may be false only for a baseUrl of http on loopback (local development)',
        )
      }
      const store = options.store ?? createMemorySessionStore({ clock: { now: client.now } })
      if (!isRecord(store) || !STORE_METHODS.every((name) => typeof store[name] === 'function')) {
        fail(
          'store',
          'must be a session store (createMemorySessionStore() or createRedisSessionStore())',
          store,
        )
      }
      const cookieName = session.cookieName
      return Object.freeze({
        client,
        baseUrl: options.baseUrl,
        redirectUri: `${options.baseUrl}${routes.callback}`,
        routes,
        scope,
        /**
         * The authorization request's `scope`: `scope` and every product's scopes, deduplicated
         * and sorted, so that the grant covers what each product's token will be asked for.
         */
        authorizationScope: authorizationScopeOf(scope, products),
        products,
        defaultProduct: products.keys().next().value,
        keys,
        keysSource: describeSecret(keys, 'keys'),
        store: store as unknown as SessionStore,
        cookieName: secureCookie ? `__Host-${cookieName}` : cookieName,
        transactionCookieName: secureCookie ? `__Host-${cookieName}.tx` : `${cookieName}.tx`,
        secureCookie,
        idleTimeoutMs: session.idleTimeoutSeconds * 1000,
        absoluteTimeoutMs: session.absoluteTimeoutSeconds * 1000,
        refreshBeforeExpiryMs: refresh.beforeExpirySeconds * 1000,
        lockMs: refresh.lockMs,
        postLogoutRedirectUri: options.postLogoutRedirectUri,
        /** The accepted ID token algorithms: asymmetric ones, or HMAC ones alone (`idTokenHmac`). */
        idTokenAlgorithms,
        /** `true` when `idTokenAlgorithms` are HS256/HS384/HS512, verified with the client secret. */
        idTokenHmac: idTokenAlgorithms.every((algorithm) =>
          HMAC_ID_TOKEN_ALGORITHMS.includes(algorithm),
        ),
        logoutTokenRequireExp: options.logoutToken.requireExp,
        /** Seconds of clock skew allowed on the ID token's and logout tokens' times. */
        clockToleranceSeconds: options.clockToleranceSeconds,
        onEvent: options.onEvent,
        now: client.now,
      })
    },
  },
)

/** {@link SignInOptions}, validated, defaulted, frozen. */
export type NormalizedSignInOptions = Normalized<typeof signInSchema>

/**
 * Validates {@link SignInOptions} once, at construction.
 *
 * @throws TypeError `createSignIn(options): "<option>" …`, naming the option, never a secret.
 */
export function normalizeSignInOptions(input: unknown): NormalizedSignInOptions {
  return validateFor('createSignIn(options):', () => signInSchema.read(input, 'options', {}))
}

function keysOption(keys: unknown, path: string): SecretInput<string | readonly SignInKey[]> {
  if (
    !(
      (typeof keys === 'string' && keys !== '') ||
      typeof keys === 'function' ||
      isEnvReference(keys) ||
      (Array.isArray(keys) && keys.length > 0)
    )
  ) {
    fail(
      path,
      "must be fromEnv('NAME'), an array of { id, secret }, or a function returning one",
      keys,
    )
  }
  if (typeof keys === 'string') {
    fail(path, "must not be written in code: use fromEnv('NAME') or a function (secrets manager)")
  }
  return keys as SecretInput<string | readonly SignInKey[]>
}

/** The asymmetric JWS algorithms openid-client verifies an ID token with, against the provider's keys. */
export const ASYMMETRIC_ID_TOKEN_ALGORITHMS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]
/** OpenID Connect Core §10.1: an HMAC over the client secret's UTF-8 octets. */
export const HMAC_ID_TOKEN_ALGORITHMS: readonly string[] = ['HS256', 'HS384', 'HS512']

/**
 * `idTokenAlgorithms`: asymmetric algorithms, or HMAC ones alone and only with a client secret
 * (they are keyed by it). Mixed, one kind could stand in for the other (an ID token "signed"
 * with HS256 over a public key, RFC 8725 §2.1), and a client's ID tokens are signed one way.
 */
function idTokenAlgorithmsOption(value: unknown, clientAuth: string): readonly string[] {
  if (value === undefined) return ASYMMETRIC_ID_TOKEN_ALGORITHMS
  const known = [...ASYMMETRIC_ID_TOKEN_ALGORITHMS, ...HMAC_ID_TOKEN_ALGORITHMS]
  if (!Array.isArray(value) || value.length === 0) {
    fail('idTokenAlgorithms', `must be a non-empty array of ${known.join(', ')}`, value)
  }
  for (const [index, algorithm] of value.entries()) {
    if (typeof algorithm === 'string' && known.includes(algorithm)) continue
    const path = `idTokenAlgorithms[${index}]`
    const expectation = `must be one of ${known.join(', ')}`
    // An algorithm name is no secret: shown when it is short enough to be one.
    if (typeof algorithm === 'string' && algorithm.length <= 16) {
      fail(path, expectation, algorithm, { show: true })
    }
    fail(path, expectation, algorithm)
  }
  const hmac = value.filter((algorithm: string) => HMAC_ID_TOKEN_ALGORITHMS.includes(algorithm))
  if (hmac.length > 0 && hmac.length < value.length) {
    fail(
      'idTokenAlgorithms',
      'must list HS256, HS384 and HS512 alone or not at all: a client’s ID tokens are signed one way (its id_token_signed_response_alg), and a list of both kinds would let one stand in for the other',
    )
  }
  if (hmac.length > 0 && clientAuth === 'private_key_jwt') {
    fail(
      'idTokenAlgorithms',
      'may list HS256, HS384 or HS512 only with a clientSecret: they are keyed by the client secret (OpenID Connect Core §10.1), and this client authenticates with privateKey',
    )
  }
  return Object.freeze([...new Set(value as string[])])
}

const REALM_IN_ISSUER = /\/realms\/[^/?#]+\/?$/

/**
 * Sign-in needs the authorization and end-session endpoints as well as the token endpoint: a
 * Keycloak realm has them at fixed paths, any other provider names them in its discovery
 * document. Checked before the client options, whose hint for the same mistake names
 * `tokenEndpoint`, an option sign-in does not take.
 */
function issuerNeedsDiscovery(options: Record<string, unknown>): void {
  let entry: unknown = options['issuer']
  if (Array.isArray(entry) && entry.length === 1) entry = entry[0]
  const issuer = isRecord(entry) ? entry['issuer'] : entry
  const discovery =
    options['discovery'] === true || (isRecord(entry) && entry['discovery'] === true)
  if (discovery || typeof issuer !== 'string' || !URL.canParse(issuer)) return
  if (!REALM_IN_ISSUER.test(issuer)) {
    fail(
      'issuer',
      'is not a Keycloak realm (…/realms/{realm}); give "discovery: true" to read the ' +
        "provider's endpoints from its discovery document, or keycloak({ authUrl, realm })",
    )
  }
}

function refreshLockMs(value: unknown, timeoutMs: number): number {
  // Discovery, the token request and the JWKS request for the refreshed ID token's signature.
  const longestRefreshMs = 3 * timeoutMs
  const lockMs = integer(value, 'refresh.lockMs', {
    fallback: Math.min(longestRefreshMs + 5000, 300_000),
    min: 100,
    max: 300_000,
  })
  if (lockMs <= longestRefreshMs) {
    fail(
      'refresh.lockMs',
      `must exceed 3 × timeoutMs (${longestRefreshMs}): a refresh must end within its lock`,
      lockMs,
    )
  }
  return lockMs
}

function absoluteUrl(value: unknown, path: string): string {
  if (typeof value !== 'string') fail(path, 'must be an absolute http(s) URL', value)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return fail(path, 'must be an absolute http(s) URL', value)
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    fail(path, 'must be https (http only on loopback)')
  }
  if (url.username || url.password || url.hash) fail(path, 'must carry no credentials or fragment')
  return url.href
}

function baseUrlOption(value: unknown): string {
  const href = absoluteUrl(value, 'baseUrl')
  const url = new URL(href)
  if (url.pathname !== '/' || url.search)
    fail('baseUrl', 'must be an origin, without a path or query')
  return url.origin
}

function scopeOption(value: unknown): string {
  const list = value === undefined ? ['openid', 'profile', 'email'] : value
  const normalized = parametersOption({ scope: list as string }).scope
  if (normalized === undefined || !normalized.split(' ').includes('openid')) {
    fail('scope', 'must include openid', value)
  }
  return normalized
}

/**
 * The sign-in's scopes with each product's: a provider that checks every `resource` of the
 * authorization request against the requested scopes (RFC 8707 §2) refuses the whole sign-in
 * when a product's scope is missing, and a refresh token can only be exchanged for scopes the
 * grant holds.
 */
function authorizationScopeOf(
  scope: string,
  products: ReadonlyMap<string, NormalizedParameters>,
): string {
  const scopes = scope.split(' ')
  for (const product of products.values()) scopes.push(...(product.scope?.split(' ') ?? []))
  return parametersOption({ scope: scopes }).scope as string
}

function productsOption(value: unknown): ReadonlyMap<string, NormalizedParameters> {
  const products = new Map<string, NormalizedParameters>()
  if (value === undefined) return products
  if (!isRecord(value))
    fail('products', 'must be an object of product name → { resource, audience, scope }', value)
  for (const [name, entry] of Object.entries(value)) {
    if (!PRODUCT_NAME.test(name))
      fail('products', `has a name that is not 1 to 64 of A-Z a-z 0-9 _ . -`)
    const parameters = record(entry, `products.${name}`, ['scope', 'resource', 'audience'])
    try {
      products.set(name, parametersOption(parameters as TokenParameters))
    } catch (error) {
      // The kit names the parameter ("resource"); the product's path says which one.
      if (error instanceof TypeError) {
        throw new TypeError(
          error.message.replace(/"(scope|resource|audience)"/, `"products.${name}.$1"`),
        )
      }
      throw error
    }
  }
  return products
}
