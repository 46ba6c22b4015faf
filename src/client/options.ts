/**
 * Options of `createTokenSource()` and their validation: once, at construction, with the gate's
 * option-validation kit. The token source receives frozen, complete settings.
 *
 * @module
 */
import type { KeyObject, webcrypto } from 'node:crypto'
import type { RedisClientLike } from '../limits/rate-limit.js'
import { ISSUER_ENTRY_KEYS, type IssuerOptions, isLoopback } from '../token/issuers.js'
import {
  boolean,
  fail,
  integer,
  isRecord,
  oneOf,
  optionalFunction,
  record,
  redisKeyPrefix,
  validateFor,
} from '../validate.js'
import type { TokenSourceEventListener } from './events.js'
import { type NormalizedParameters, parametersOption, type TokenParameters } from './parameters.js'
import { describeSecret, isEnvReference, type SecretInput } from './secrets.js'

/** A private key for `private_key_jwt`: a PEM string, a `KeyObject`, a private JWK or a `CryptoKey`. */
export type PrivateKeyInput = string | KeyObject | webcrypto.CryptoKey | webcrypto.JsonWebKey

/** How the client authenticates at the token endpoint (RFC 6749 §2.3, RFC 7523). */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'

/** When a held token is renewed. */
export interface RenewalOptions {
  /** Renewal starts once this fraction of `expires_in` has passed. Default 0.75. */
  readonly atFraction?: number
  /**
   * Each token's renewal point is moved earlier by a random share of `expires_in` up to this, so
   * a fleet does not renew in step. Default 0.1 (renewal between 65% and 75% of the lifetime).
   */
  readonly jitterFraction?: number
  /**
   * A token is never handed out in the last `expiryMarginSeconds` of its lifetime (clock skew,
   * time in transit), nor in its last tenth when that is shorter. Default 30.
   */
  readonly expiryMarginSeconds?: number
}

/** Retries of a failing token request. Only retryable failures are retried. */
export interface RetryOptions {
  /** Attempts per token request, the first included (1 to 10). Default 3. */
  readonly attempts?: number
  /** Delay before the first retry, in ms; doubled each time, with jitter. Default 200. */
  readonly baseDelayMs?: number
  /** Longest delay between attempts, and longest pause after a failed request, in ms. Default 10000. */
  readonly maxDelayMs?: number
}

/** A cache shared by every instance through Redis, so a fleet renews one token, not one each. */
export interface SharedCacheOptions {
  /** The ioredis client (or Cluster) the rate limiter uses; the same shape. */
  readonly redis: RedisClientLike
  /** Prefix of the Redis keys. Default `'tollgate:token'`. */
  readonly keyPrefix?: string
  /**
   * How long one instance may hold the renewal lock, in ms; the others wait as long for its
   * token. Default: the longest a renewal can take (`timeoutMs` × `retry.attempts` plus the retry
   * delays), at least 10000. A smaller value must still cover one `timeoutMs`.
   */
  readonly lockMs?: number
}

/** Options of `createTokenSource()`. */
export interface TokenSourceOptions extends TokenParameters {
  /**
   * The identity provider: `keycloak({ authUrl, realm: 'acme' })` (one realm; token endpoint
   * `{issuer}/protocol/openid-connect/token`), an issuer entry with `discovery: true`, or an
   * issuer URL with `tokenEndpoint` or `discovery`.
   */
  readonly issuer: string | IssuerOptions | readonly IssuerOptions[]
  /** The token endpoint, when it is not Keycloak's path and discovery is not used. */
  readonly tokenEndpoint?: string
  /** Find the token endpoint in `{issuer}/.well-known/openid-configuration`. Default false. */
  readonly discovery?: boolean
  readonly clientId: string
  /** Default: `client_secret_basic` with `clientSecret`, `private_key_jwt` with `privateKey`. */
  readonly clientAuth?: ClientAuthMethod
  /** The client secret: a string, `fromEnv('NAME')`, or a function (secrets manager). */
  readonly clientSecret?: SecretInput
  /** The key that signs `private_key_jwt` assertions: a value, `fromEnv('NAME')` (PEM) or a function. */
  readonly privateKey?: SecretInput<PrivateKeyInput>
  /** `kid` of the private key, as registered with the provider. */
  readonly privateKeyId?: string
  /** Signature algorithm of the assertions. Default: RS256 for RSA keys, ES256 for P-256, EdDSA for Ed25519. */
  readonly privateKeyAlgorithm?: 'RS256' | 'PS256' | 'ES256' | 'EdDSA'
  /**
   * A refresh token: the source then uses the refresh_token grant (RFC 6749 §6) instead of
   * client_credentials, with each rotated refresh token replacing the previous one.
   */
  readonly refreshToken?: SecretInput
  /** Receives each rotated refresh token, to store it (encrypted at rest, per the spec). Awaited. */
  readonly onRefreshToken?: (refreshToken: string) => void | Promise<void>
  readonly renewal?: RenewalOptions
  readonly retry?: RetryOptions
  /** Deadline of one request to the provider, in ms. Default 10000. */
  readonly timeoutMs?: number
  /**
   * Allow `http:` to a provider that is not on loopback (tokens and secrets in clear text).
   * Default false: https, or http to 127.0.0.1 / ::1 / localhost only.
   */
  readonly allowInsecureHttp?: boolean
  /** Share tokens between instances through Redis (Client Credentials sources only). */
  readonly sharedCache?: SharedCacheOptions
  /** Receives token events (never a token or a secret). Exceptions it throws are ignored. */
  readonly onEvent?: TokenSourceEventListener
  /** A fetch implementation (proxies, custom CAs). Default: the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch
  /** Milliseconds since the epoch. Default `Date.now`. For tests and demos that move time. */
  readonly clock?: { now(): number }
}

/** How the provider's token endpoint is found. */
export type NormalizedServer =
  | { readonly issuer: string; readonly tokenEndpoint: string; readonly discovery: false }
  | { readonly issuer: string; readonly tokenEndpoint: undefined; readonly discovery: true }

/** {@link TokenSourceOptions}, validated, defaulted and frozen. */
export interface NormalizedTokenSourceOptions {
  readonly server: NormalizedServer
  readonly clientId: string
  readonly clientAuth: ClientAuthMethod
  /** The secret or key, unresolved. */
  readonly credential: SecretInput | SecretInput<PrivateKeyInput>
  /** Where the credential comes from, for messages. */
  readonly credentialSource: string
  readonly privateKeyId: string | undefined
  readonly privateKeyAlgorithm: 'RS256' | 'PS256' | 'ES256' | 'EdDSA' | undefined
  readonly refreshToken: SecretInput | undefined
  readonly onRefreshToken: ((refreshToken: string) => void | Promise<void>) | undefined
  readonly parameters: NormalizedParameters
  readonly renewal: {
    readonly atFraction: number
    readonly jitterFraction: number
    readonly expiryMarginMs: number
  }
  readonly retry: {
    readonly attempts: number
    readonly baseDelayMs: number
    readonly maxDelayMs: number
  }
  readonly timeoutMs: number
  readonly allowInsecureHttp: boolean
  readonly sharedCache:
    | { readonly redis: RedisClientLike; readonly keyPrefix: string; readonly lockMs: number }
    | undefined
  readonly onEvent: TokenSourceEventListener | undefined
  readonly fetch: typeof globalThis.fetch | undefined
  readonly now: () => number
}

const OPTION_KEYS = [
  'issuer',
  'tokenEndpoint',
  'discovery',
  'clientId',
  'clientAuth',
  'clientSecret',
  'privateKey',
  'privateKeyId',
  'privateKeyAlgorithm',
  'refreshToken',
  'onRefreshToken',
  'scope',
  'resource',
  'audience',
  'renewal',
  'retry',
  'timeoutMs',
  'allowInsecureHttp',
  'sharedCache',
  'onEvent',
  'fetch',
  'clock',
]
const REALM_IN_ISSUER = /\/realms\/[^/?#]+\/?$/

/**
 * Validates {@link TokenSourceOptions} once, at construction.
 *
 * @throws TypeError `createTokenSource(options): "<option>" …` naming the option, never its value.
 */
export function normalizeTokenSourceOptions(input: unknown): NormalizedTokenSourceOptions {
  return validateFor('createTokenSource(options):', () => normalize(input))
}

/**
 * The same validation without the message prefix, for factories that take a token source's client
 * options among their own (`createSignIn()`); their own `validateFor()` sets the prefix.
 */
export function normalizeClientPart(input: unknown): NormalizedTokenSourceOptions {
  return normalize(input)
}

function normalize(input: unknown): NormalizedTokenSourceOptions {
  const options = record(input, 'options', OPTION_KEYS) as unknown as TokenSourceOptions
  const allowInsecureHttp = boolean(options.allowInsecureHttp, 'allowInsecureHttp', false)
  const clientId = options.clientId as unknown
  if (typeof clientId !== 'string' || clientId === '' || clientId.length > 255) {
    fail('clientId', 'must be a non-empty string of at most 255 characters', clientId)
  }
  const server = serverOption(options, allowInsecureHttp)
  const clientAuth = clientAuthOption(options)
  const credential = clientAuth === 'private_key_jwt' ? options.privateKey : options.clientSecret
  const credentialOption = clientAuth === 'private_key_jwt' ? 'privateKey' : 'clientSecret'
  if (options.privateKeyId !== undefined && typeof options.privateKeyId !== 'string') {
    fail('privateKeyId', 'must be a string', options.privateKeyId)
  }
  const refreshToken = options.refreshToken
  if (refreshToken !== undefined) secretShape(refreshToken, 'refreshToken')
  if (options.onRefreshToken !== undefined && refreshToken === undefined) {
    fail('onRefreshToken', 'needs "refreshToken"')
  }
  const retry = retryOption(options.retry)
  const timeoutMs = integer(options.timeoutMs, 'timeoutMs', {
    fallback: 10_000,
    min: 100,
    max: 120_000,
  })
  const sharedCache = sharedCacheOption(options.sharedCache, timeoutMs, retry)
  if (sharedCache !== undefined && refreshToken !== undefined) {
    fail(
      'sharedCache',
      'works with Client Credentials sources only: a refresh token stays in the process that holds it',
    )
  }
  const clock = options.clock as unknown
  if (clock !== undefined && !(isRecord(clock) && typeof clock['now'] === 'function')) {
    fail('clock', 'must be an object with a now() method returning milliseconds', clock)
  }
  return Object.freeze({
    server,
    clientId,
    clientAuth,
    credential: credential as SecretInput,
    credentialSource: describeSecret(credential, credentialOption),
    privateKeyId: options.privateKeyId,
    privateKeyAlgorithm: privateKeyAlgorithmOption(options.privateKeyAlgorithm),
    refreshToken,
    onRefreshToken: optionalFunction<(refreshToken: string) => void | Promise<void>>(
      options.onRefreshToken,
      'onRefreshToken',
      '(refreshToken) => void | Promise<void>',
    ),
    parameters: parametersOption(options),
    renewal: renewalOption(options.renewal),
    retry,
    timeoutMs,
    allowInsecureHttp,
    sharedCache,
    onEvent: optionalFunction<TokenSourceEventListener>(
      options.onEvent,
      'onEvent',
      '(event) => void',
    ),
    fetch: optionalFunction<typeof globalThis.fetch>(
      options.fetch,
      'fetch',
      '(url, init) => Promise<Response>',
    ),
    now: clock === undefined ? Date.now : () => (clock as { now(): number }).now(),
  })
}

function serverOption(options: TokenSourceOptions, allowInsecureHttp: boolean): NormalizedServer {
  let entry: unknown = options.issuer
  if (Array.isArray(entry)) {
    if (entry.length !== 1) {
      fail(
        'issuer',
        'must name exactly one issuer (keycloak() with one realm, a profile with one tenant)',
        entry,
      )
    }
    entry = entry[0]
  }
  let issuer: unknown
  let discovery = boolean(options.discovery, 'discovery', false)
  if (typeof entry === 'string') {
    issuer = entry
  } else if (isRecord(entry)) {
    const value = record(entry, 'issuer', ISSUER_ENTRY_KEYS)
    issuer = value['issuer']
    discovery = discovery || boolean(value['discovery'], 'issuer.discovery', false)
  } else {
    fail(
      'issuer',
      'must be an issuer URL, keycloak({ authUrl, realm }) or a provider profile (auth0(), okta(), entra(), cognito())',
      entry,
    )
  }
  urlOption(issuer, 'issuer', allowInsecureHttp)
  const tokenEndpoint = options.tokenEndpoint
  if (tokenEndpoint !== undefined) {
    if (discovery) fail('tokenEndpoint', 'and discovery exclude each other; give one')
    urlOption(tokenEndpoint, 'tokenEndpoint', allowInsecureHttp)
    return { issuer, tokenEndpoint, discovery: false }
  }
  if (discovery) return { issuer, tokenEndpoint: undefined, discovery: true }
  if (!REALM_IN_ISSUER.test(issuer)) {
    fail(
      'issuer',
      'is not a Keycloak realm (…/realms/{realm}); give "tokenEndpoint" or "discovery: true"',
    )
  }
  return {
    issuer,
    tokenEndpoint: `${issuer.replace(/\/+$/, '')}/protocol/openid-connect/token`,
    discovery: false,
  }
}

// One definition of loopback for the gate's key URLs and the client's token endpoints.
export { isLoopback }

function urlOption(
  value: unknown,
  path: string,
  allowInsecureHttp: boolean,
): asserts value is string {
  if (typeof value !== 'string') fail(path, 'must be an absolute https URL', value)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return fail(path, 'must be an absolute https URL', value)
  }
  if (url.username || url.password) fail(path, 'must not carry credentials')
  if (url.search || url.hash) fail(path, 'must not have a query or fragment')
  if (url.protocol === 'https:') return
  if (url.protocol === 'http:' && (isLoopback(url.hostname) || allowInsecureHttp)) return
  fail(path, 'must be https (http only to loopback, or with allowInsecureHttp: true)')
}

function secretShape(value: unknown, path: string): void {
  if (
    (typeof value === 'string' && value !== '') ||
    typeof value === 'function' ||
    isEnvReference(value)
  ) {
    return
  }
  fail(path, "must be a non-empty string, fromEnv('NAME') or a function returning it", value)
}

function clientAuthOption(options: TokenSourceOptions): ClientAuthMethod {
  const hasSecret = options.clientSecret !== undefined
  const hasKey = options.privateKey !== undefined
  if (hasSecret && hasKey) fail('clientSecret', 'and privateKey exclude each other; give one')
  if (!hasSecret && !hasKey) {
    fail('clientSecret', 'or "privateKey" is required (confidential clients only)')
  }
  const method = oneOf(
    options.clientAuth ?? (hasKey ? 'private_key_jwt' : 'client_secret_basic'),
    'clientAuth',
    ['client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const,
  )
  if (method === 'private_key_jwt') {
    if (!hasKey) fail('clientAuth', '\'private_key_jwt\' needs "privateKey"')
    const key = options.privateKey as unknown
    if (
      !(
        typeof key === 'function' ||
        isEnvReference(key) ||
        typeof key === 'string' ||
        isRecord(key)
      )
    ) {
      fail(
        'privateKey',
        "must be a PEM string, a KeyObject, a JWK, a CryptoKey, fromEnv('NAME') or a function",
        key,
      )
    }
  } else {
    if (!hasSecret) fail('clientAuth', `'${method}' needs "clientSecret"`)
    secretShape(options.clientSecret, 'clientSecret')
  }
  return method
}

function fraction(value: unknown, path: string, fallback: number, max: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value >= max) {
    fail(path, `must be a number from 0 to below ${max}`, value)
  }
  return value
}

function renewalOption(value: unknown): NormalizedTokenSourceOptions['renewal'] {
  const options = record(value ?? {}, 'renewal', [
    'atFraction',
    'jitterFraction',
    'expiryMarginSeconds',
  ])
  const atFraction = fraction(options['atFraction'], 'renewal.atFraction', 0.75, 1)
  if (atFraction === 0) fail('renewal.atFraction', 'must be above 0', atFraction)
  const jitterFraction = fraction(options['jitterFraction'], 'renewal.jitterFraction', 0.1, 1)
  if (jitterFraction >= atFraction) {
    fail(
      'renewal.jitterFraction',
      `must be below renewal.atFraction (${atFraction})`,
      jitterFraction,
    )
  }
  const expiryMarginSeconds = integer(
    options['expiryMarginSeconds'],
    'renewal.expiryMarginSeconds',
    {
      fallback: 30,
      min: 0,
      max: 3600,
    },
  )
  return Object.freeze({ atFraction, jitterFraction, expiryMarginMs: expiryMarginSeconds * 1000 })
}

function retryOption(value: unknown): NormalizedTokenSourceOptions['retry'] {
  const options = record(value ?? {}, 'retry', ['attempts', 'baseDelayMs', 'maxDelayMs'])
  return Object.freeze({
    attempts: integer(options['attempts'], 'retry.attempts', { fallback: 3, min: 1, max: 10 }),
    baseDelayMs: integer(options['baseDelayMs'], 'retry.baseDelayMs', {
      fallback: 200,
      min: 0,
      max: 60_000,
    }),
    maxDelayMs: integer(options['maxDelayMs'], 'retry.maxDelayMs', {
      fallback: 10_000,
      min: 0,
      max: 600_000,
    }),
  })
}

/** The longest one renewal can take: every attempt timing out, with the longest delays between. */
function longestRenewalMs(timeoutMs: number, retry: NormalizedTokenSourceOptions['retry']): number {
  let total = timeoutMs * retry.attempts
  for (let attempt = 1; attempt < retry.attempts; attempt++) {
    total += Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1))
  }
  return total
}

function sharedCacheOption(
  value: unknown,
  timeoutMs: number,
  retry: NormalizedTokenSourceOptions['retry'],
): NormalizedTokenSourceOptions['sharedCache'] {
  if (value === undefined) return undefined
  const options = record(value, 'sharedCache', ['redis', 'keyPrefix', 'lockMs'])
  const client = options['redis']
  if (
    !isRecord(client) ||
    typeof client['defineCommand'] !== 'function' ||
    typeof client['status'] !== 'string'
  ) {
    fail(
      'sharedCache.redis',
      'must be an ioredis Redis or Cluster client (the one the limiter takes)',
      client,
    )
  }
  const keyPrefix = redisKeyPrefix(options['keyPrefix'], 'sharedCache.keyPrefix', 'tollgate:token')
  return Object.freeze({
    redis: client as unknown as RedisClientLike,
    keyPrefix,
    // A lock shorter than a renewal lets a second instance renew while the first still does.
    lockMs: integer(options['lockMs'], 'sharedCache.lockMs', {
      fallback: Math.min(120_000, Math.max(10_000, longestRenewalMs(timeoutMs, retry))),
      min: Math.max(100, timeoutMs),
      max: 120_000,
    }),
  })
}

function privateKeyAlgorithmOption(
  value: unknown,
): NormalizedTokenSourceOptions['privateKeyAlgorithm'] {
  if (value === undefined) return undefined
  return oneOf(value, 'privateKeyAlgorithm', ['RS256', 'PS256', 'ES256', 'EdDSA'] as const)
}
