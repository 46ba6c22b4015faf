/**
 * Options of `createTokenSource()`: their types and their schema (validation once, at
 * construction, defaults, the reference table). The token source receives frozen, complete settings.
 *
 * @module
 */
import type { KeyObject, webcrypto } from 'node:crypto'
import type { RedisClientLike } from '../limits/rate-limit.js'
import { any, at, custom, flag, fn, group, int, type Normalized } from '../options-kit.js'
import { ISSUER_ENTRY_KEYS, type IssuerOptions, isLoopback } from '../token/issuers.js'
import {
  boolean,
  fail,
  integer,
  isRecord,
  oneOf,
  record,
  redisKeyPrefix,
  validateFor,
} from '../validate.js'
import type { TokenSourceEventListener } from './events.js'
import { parametersOption, type TokenParameters } from './parameters.js'
import { describeSecret, isEnvReference, type SecretInput } from './secrets.js'

/** A private key for `private_key_jwt`: a PEM string, a `KeyObject`, a private JWK or a `CryptoKey`. */
export type PrivateKeyInput = string | KeyObject | webcrypto.CryptoKey | webcrypto.JsonWebKey

/** How the client authenticates at the token endpoint (RFC 6749 §2.3, RFC 7523). */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'

/**
 * How a client authenticates at the provider: the same fields, with the same checks, for the token
 * source, sign-in and the gate's token introspection.
 */
export interface ClientAuthenticationOptions {
  /** The client's id at the provider. Required. */
  readonly clientId: string
  /**
   * How the client authenticates at the provider's endpoints. Default: `client_secret_basic` with
   * `clientSecret`, `private_key_jwt` with `privateKey`.
   */
  readonly clientAuth?: ClientAuthMethod
  /** The client secret: a string, `fromEnv('NAME')`, or a function (secrets manager). */
  readonly clientSecret?: SecretInput
  /** The key that signs `private_key_jwt` assertions: a value, `fromEnv('NAME')` (PEM) or a function. */
  readonly privateKey?: SecretInput<PrivateKeyInput>
  /** `kid` of the private key, as registered with the provider. */
  readonly privateKeyId?: string
  /** Signature algorithm of the assertions. Default: RS256 for RSA keys, ES256 for P-256, EdDSA for Ed25519. */
  readonly privateKeyAlgorithm?: 'RS256' | 'PS256' | 'ES256' | 'EdDSA'
}

/**
 * The schema entries of {@link ClientAuthenticationOptions}, for every schema that accepts them.
 * Each field is checked alone; {@link clientAuthMethod} checks them together.
 */
export const clientAuthenticationFields = {
  clientId: custom(
    (value, path) => {
      if (typeof value !== 'string' || value === '' || value.length > 255) {
        fail(path, 'must be a non-empty string of at most 255 characters', value)
      }
      return value
    },
    { accepts: 'string of 1 to 255 characters', default: 'required' },
  ),
  clientAuth: any<ClientAuthMethod>({
    accepts: "'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'",
    default: 'by the credential',
  }),
  clientSecret: any<SecretInput>({ accepts: "string, fromEnv('NAME') or a function" }),
  privateKey: any<SecretInput<PrivateKeyInput>>({
    accepts: "PEM, KeyObject, JWK, CryptoKey, fromEnv('NAME') or a function",
  }),
  privateKeyId: custom(
    (value, path) => {
      if (value !== undefined && typeof value !== 'string') fail(path, 'must be a string', value)
      return value
    },
    { accepts: 'string' },
  ),
  privateKeyAlgorithm: custom(
    (value, path) =>
      value === undefined
        ? undefined
        : oneOf(value, path, ['RS256', 'PS256', 'ES256', 'EdDSA'] as const),
    { accepts: "'RS256' | 'PS256' | 'ES256' | 'EdDSA'", default: 'by the key' },
  ),
} as const

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
export interface TokenSourceOptions extends TokenParameters, ClientAuthenticationOptions {
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
  /**
   * A refresh token: the source then uses the refresh_token grant (RFC 6749 §6) instead of
   * client_credentials, with each rotated refresh token replacing the previous one.
   */
  readonly refreshToken?: SecretInput
  /** Receives each rotated refresh token, to store it (encrypted at rest, per the spec). Awaited. */
  readonly onRefreshToken?: (refreshToken: string) => void | Promise<void>
  /** When a held token is renewed. */
  readonly renewal?: RenewalOptions
  /** Retries of a failing token request. */
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

const REALM_IN_ISSUER = /\/realms\/[^/?#]+\/?$/

type Retry = {
  readonly attempts: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
}

/** The schema of {@link TokenSourceOptions}: rules, defaults and the reference table. */
export const tokenSourceSchema = group<TokenSourceOptions>()(
  {
    issuer: any<TokenSourceOptions['issuer']>({
      accepts: 'issuer URL, keycloak() or a provider profile',
      default: 'required',
    }),
    tokenEndpoint: any<string>({ accepts: 'https URL' }),
    discovery: any<boolean>({ accepts: 'boolean', default: 'false' }),
    ...clientAuthenticationFields,
    refreshToken: custom(
      (value, path) => {
        if (value !== undefined) secretShape(value, path)
        return value as SecretInput | undefined
      },
      { accepts: "string, fromEnv('NAME') or a function" },
    ),
    onRefreshToken: custom(
      (value, path, { refreshToken }) => {
        if (value !== undefined && refreshToken === undefined) fail(path, 'needs "refreshToken"')
        return fn<(refreshToken: string) => void | Promise<void>>(
          '(refreshToken) => void | Promise<void>',
        ).read(value, path, {})
      },
      { accepts: 'function (refreshToken) => void | Promise<void>' },
    ),
    scope: any<TokenParameters['scope']>({ accepts: 'string or strings' }),
    resource: any<TokenParameters['resource']>({ accepts: 'URL or URLs' }),
    audience: any<TokenParameters['audience']>({ accepts: 'string' }),
    renewal: group<RenewalOptions>()(
      {
        atFraction: custom(
          (value, path) => {
            const atFraction = fraction(value, path, 0.75, 1)
            if (atFraction === 0) fail(path, 'must be above 0', atFraction)
            return atFraction
          },
          { accepts: 'number above 0, below 1', default: '0.75' },
        ),
        jitterFraction: custom(
          (value, path, { atFraction }) => {
            const jitterFraction = fraction(value, path, 0.1, 1)
            if (jitterFraction >= (atFraction as number)) {
              fail(path, `must be below renewal.atFraction (${atFraction})`, jitterFraction)
            }
            return jitterFraction
          },
          { accepts: 'number from 0 to below atFraction', default: '0.1' },
        ),
        expiryMarginSeconds: int({ min: 0, max: 3600, fallback: 30 }),
      },
      {
        doc: { type: 'RenewalOptions' },
        finish: ({ expiryMarginSeconds, ...rest }) =>
          Object.freeze({ ...rest, expiryMarginMs: expiryMarginSeconds * 1000 }),
      },
    ),
    retry: group<RetryOptions>()(
      {
        attempts: int({ min: 1, max: 10, fallback: 3 }),
        baseDelayMs: int({ min: 0, max: 60_000, fallback: 200 }),
        maxDelayMs: int({ min: 0, max: 600_000, fallback: 10_000 }),
      },
      { doc: { type: 'RetryOptions' } },
    ),
    timeoutMs: int({ min: 100, max: 120_000, fallback: 10_000 }),
    allowInsecureHttp: flag(false),
    sharedCache: group<SharedCacheOptions>()(
      {
        redis: custom(
          (client, path) => {
            if (
              !isRecord(client) ||
              typeof client['defineCommand'] !== 'function' ||
              typeof client['status'] !== 'string'
            ) {
              fail(
                path,
                'must be an ioredis Redis or Cluster client (the one the limiter takes)',
                client,
              )
            }
            return client as unknown as RedisClientLike
          },
          { accepts: 'ioredis client', default: 'required' },
        ),
        keyPrefix: custom((value, path) => redisKeyPrefix(value, path, 'tollgate:token'), {
          accepts: 'Redis key prefix',
          default: "'tollgate:token'",
        }),
        // A lock shorter than a renewal lets a second instance renew while the first still does.
        lockMs: custom(
          (value, path, { timeoutMs, retry }) =>
            integer(value, path, {
              fallback: Math.min(
                120_000,
                Math.max(10_000, longestRenewalMs(timeoutMs as number, retry as Retry)),
              ),
              min: Math.max(100, timeoutMs as number),
              max: 120_000,
            }),
          { accepts: 'integer timeoutMs–120 000', default: 'longest renewal, ≥ 10000' },
        ),
      },
      { absent: 'undefined', doc: { type: 'SharedCacheOptions' } },
    ),
    onEvent: fn<TokenSourceEventListener>('(event) => void'),
    fetch: fn<typeof globalThis.fetch>('(url, init) => Promise<Response>', 'global fetch'),
    clock: custom(
      (clock, path) => {
        if (clock !== undefined && !(isRecord(clock) && typeof clock['now'] === 'function')) {
          fail(path, 'must be an object with a now() method returning milliseconds', clock)
        }
        return clock as { now(): number } | undefined
      },
      { accepts: '{ now() }', default: 'Date' },
    ),
  },
  {
    absent: 'required',
    finish: ({ issuer, tokenEndpoint, discovery, clientSecret, privateKey, clock, ...rest }) => {
      const server = serverOption(issuer, tokenEndpoint, discovery, rest.allowInsecureHttp)
      const clientAuth = clientAuthMethod(
        { clientAuth: rest.clientAuth, clientSecret, privateKey },
        'options',
        'or "privateKey" is required (confidential clients only)',
      )
      const keyAuth = clientAuth === 'private_key_jwt'
      const credential = (keyAuth ? privateKey : clientSecret) as SecretInput
      if (rest.sharedCache !== undefined && rest.refreshToken !== undefined) {
        fail(
          'sharedCache',
          'works with Client Credentials sources only: a refresh token stays in the process that holds it',
        )
      }
      const { scope, resource, audience, ...settings } = rest
      return Object.freeze({
        ...settings,
        server,
        clientAuth,
        credential,
        credentialSource: describeSecret(credential, keyAuth ? 'privateKey' : 'clientSecret'),
        parameters: parametersOption({ scope, resource, audience } as TokenParameters),
        now: clock === undefined ? Date.now : () => clock.now(),
      })
    },
  },
)

/** {@link TokenSourceOptions}, validated, defaulted and frozen. */
export type NormalizedTokenSourceOptions = Normalized<typeof tokenSourceSchema>

/**
 * Validates {@link TokenSourceOptions} once, at construction.
 *
 * @throws TypeError `createTokenSource(options): "<option>" …` naming the option, never its value.
 */
export function normalizeTokenSourceOptions(input: unknown): NormalizedTokenSourceOptions {
  return validateFor('createTokenSource(options):', () => normalizeClientPart(input))
}

/**
 * The same validation without the message prefix, for factories that take a token source's client
 * options among their own (`createSignIn()`); their own `validateFor()` sets the prefix.
 */
export function normalizeClientPart(input: unknown): NormalizedTokenSourceOptions {
  return tokenSourceSchema.read(input, 'options', {})
}

function serverOption(
  issuerOption: unknown,
  tokenEndpoint: unknown,
  discoveryOption: unknown,
  allowInsecureHttp: boolean,
): NormalizedServer {
  let entry: unknown = issuerOption
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
  let discovery = boolean(discoveryOption, 'discovery', false)
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

/** Refuses a secret that is not a non-empty string, `fromEnv('NAME')` or a function. */
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

/**
 * The method of {@link ClientAuthenticationOptions} (given, or the credential's), checked against
 * the credentials: exactly one of `clientSecret` and `privateKey`, the one the method needs, in a
 * shape it takes. `path` is where the fields sit; `required` ends the message when neither is given.
 */
export function clientAuthMethod(
  options: {
    readonly clientAuth?: unknown
    readonly clientSecret?: unknown
    readonly privateKey?: unknown
  },
  path: string,
  required: string,
): ClientAuthMethod {
  const hasSecret = options.clientSecret !== undefined
  const hasKey = options.privateKey !== undefined
  if (hasSecret && hasKey)
    fail(at(path, 'clientSecret'), 'and privateKey exclude each other; give one')
  if (!hasSecret && !hasKey) fail(at(path, 'clientSecret'), required)
  const method = oneOf(
    options.clientAuth ?? (hasKey ? 'private_key_jwt' : 'client_secret_basic'),
    at(path, 'clientAuth'),
    ['client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const,
  )
  if (method === 'private_key_jwt') {
    if (!hasKey) fail(at(path, 'clientAuth'), '\'private_key_jwt\' needs "privateKey"')
    const key = options.privateKey
    if (
      !(
        typeof key === 'function' ||
        isEnvReference(key) ||
        typeof key === 'string' ||
        isRecord(key)
      )
    ) {
      fail(
        at(path, 'privateKey'),
        "must be a PEM string, a KeyObject, a JWK, a CryptoKey, fromEnv('NAME') or a function",
        key,
      )
    }
  } else {
    if (!hasSecret) fail(at(path, 'clientAuth'), `'${method}' needs "clientSecret"`)
    secretShape(options.clientSecret, at(path, 'clientSecret'))
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

/** The longest one renewal can take: every attempt timing out, with the longest delays between. */
function longestRenewalMs(timeoutMs: number, retry: Retry): number {
  let total = timeoutMs * retry.attempts
  for (let attempt = 1; attempt < retry.attempts; attempt++) {
    total += Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1))
  }
  return total
}
