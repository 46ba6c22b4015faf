/**
 * The `introspection` part of an issuer entry: how the issuer's tokens are checked (`jwt`,
 * `introspection`, `jwt-then-introspection`), where its RFC 7662 endpoint is, how the gate
 * authenticates there, and the bounds of the verdict cache and of the calls. Validated once, at
 * construction, with the kit's messages.
 *
 * @module
 */
import {
  type ClientAuthenticationOptions,
  type ClientAuthMethod,
  clientAuthenticationFields,
  clientAuthMethod,
  type PrivateKeyInput,
} from '../client/options.js'
import { describeSecret, type SecretInput } from '../client/secrets.js'
import { httpsUrlProblem } from '../token/issuers.js'
import { boolean, fail, integer, oneOf, optionalFunction, record } from '../validate.js'
import { warnOnce } from '../warnings.js'

/** How an issuer's tokens are checked. */
export type TokenCheck = 'jwt' | 'introspection' | 'jwt-then-introspection'

/** How the gate authenticates at the introspection endpoint (RFC 7662 §2.1 requires it). */
export type IntrospectionClientAuth = ClientAuthMethod

/** The verdict cache of one introspecting issuer. */
export interface IntrospectionCacheOptions {
  /** Most tokens kept (active and not). Default 10000. */
  readonly maxEntries?: number
  /**
   * Longest an active token's verdict is reused without asking the provider again, however far
   * its `exp` is: a token revoked at the provider is refused after at most this. Default 60.
   */
  readonly maxTtlSeconds?: number
  /** How long a token the provider called inactive (or the gate refused) is refused without asking again. Default 5. */
  readonly inactiveTtlSeconds?: number
}

/** How many introspection calls an issuer may receive from this gate: the bound a flood of unknown tokens meets. */
export interface IntrospectionBudgetOptions {
  /** Calls allowed per `perSeconds` (a token bucket that holds this many). Default 100. */
  readonly calls?: number
  /** Default 1. */
  readonly perSeconds?: number
}

/**
 * Token introspection (RFC 7662) for one issuer entry, through openid-client's oauth4webapi. The
 * gate authenticates as the client `clientId` (a resource server registered at the provider), with
 * the client fields `tollgate/client` takes: secrets as a value, `fromEnv('NAME')`, or a function.
 */
export interface IntrospectionOptions extends ClientAuthenticationOptions {
  /**
   * - `introspection` (default): every token of this issuer is sent to its introspection
   *   endpoint (opaque tokens, Keycloak's lightweight access tokens); none is verified locally.
   * - `jwt-then-introspection`: a JWT signed by the issuer's keys is verified locally as usual;
   *   any other token (opaque, or a JWT its keys do not verify) is introspected.
   * - `jwt`: no introspection (the entry's other fields are validated, then ignored).
   *
   * A token that is not a JWT naming a configured issuer goes to the first issuer entry that
   * introspects.
   */
  readonly mode?: TokenCheck
  /**
   * The introspection endpoint. Default: `introspection_endpoint` of the issuer's discovery
   * document (with `discovery: true`), or Keycloak's `{issuer}/protocol/openid-connect/token/introspect`
   * for an entry made by `keycloak()`.
   */
  readonly endpoint?: string
  /**
   * Ask for a signed JWT response (RFC 9701) and accept nothing else: its signature is verified
   * against the issuer's keys (its `jwks_uri`), its `iss` must be the issuer and its `aud` this
   * client. Default false.
   */
  readonly jwtResponse?: boolean
  /** Deadline of one call (headers and body), in ms; past it the request is answered 503. Default 5000. */
  readonly timeoutMs?: number
  readonly cache?: IntrospectionCacheOptions
  readonly budget?: IntrospectionBudgetOptions
  /**
   * Allow an `http:` endpoint that is not on loopback (tokens and the client's credentials in
   * clear text). Default false.
   */
  readonly allowInsecureHttp?: boolean
  /** A fetch implementation (proxies, custom CAs). Default: the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch
}

/** {@link IntrospectionOptions} of one issuer, validated, defaulted and frozen. */
export interface NormalizedIntrospection {
  readonly issuer: string
  readonly mode: 'introspection' | 'jwt-then-introspection'
  /** `undefined`: found in the discovery document. */
  readonly endpoint: string | undefined
  /** The issuer entry's key URL (RFC 9701 responses are verified against it), or discovery. */
  readonly jwksUri: string | undefined
  readonly discovery: boolean
  readonly clientId: string
  readonly clientAuth: IntrospectionClientAuth
  readonly credential: SecretInput | SecretInput<PrivateKeyInput>
  /** Where the credential comes from, for messages. */
  readonly credentialSource: string
  readonly privateKeyId: string | undefined
  readonly privateKeyAlgorithm: 'RS256' | 'PS256' | 'ES256' | 'EdDSA' | undefined
  readonly jwtResponse: boolean
  readonly timeoutMs: number
  readonly cache: {
    readonly maxEntries: number
    readonly maxTtlSeconds: number
    readonly inactiveTtlSeconds: number
  }
  readonly budget: { readonly calls: number; readonly perSeconds: number }
  readonly allowInsecureHttp: boolean
  readonly fetch: typeof globalThis.fetch
}

const KEYS = [
  'mode',
  'endpoint',
  'clientId',
  'clientAuth',
  'clientSecret',
  'privateKey',
  'privateKeyId',
  'privateKeyAlgorithm',
  'jwtResponse',
  'timeoutMs',
  'cache',
  'budget',
  'allowInsecureHttp',
  'fetch',
]

/** `undefined` for an https URL, or http to loopback (or anywhere, when allowed); else the problem. */
export function endpointProblem(value: string, allowInsecureHttp: boolean): string | undefined {
  return httpsUrlProblem(
    value,
    allowInsecureHttp,
    'must be https: tokens and client credentials would cross the network in clear text (or set allowInsecureHttp: true on a trusted network)',
  )
}

/**
 * Validates the `introspection` field of issuer entry `path` (`issuers[0]`); `undefined` when
 * absent or `mode: 'jwt'`.
 *
 * @throws TypeError naming the option and what to change.
 */
export function normalizeIntrospection(
  value: unknown,
  path: string,
  entry: {
    readonly issuer: string
    readonly jwksUri: string | undefined
    readonly discovery: boolean
  },
): NormalizedIntrospection | undefined {
  if (value === undefined) return undefined
  const at = `${path}.introspection`
  const options = record(value, at, KEYS)
  const mode = oneOf(options.mode, `${at}.mode`, [
    'introspection',
    'jwt-then-introspection',
    'jwt',
  ] as const)
  // The client fields as the token source checks them, in this order (their messages name them).
  const fields = clientAuthenticationFields
  const clientId = fields.clientId.read(options.clientId, `${at}.clientId`, {})
  const clientAuth = clientAuthMethod(
    options,
    at,
    'or "privateKey" is required: RFC 7662 introspection endpoints authenticate their callers',
  )
  const privateKeyId = fields.privateKeyId.read(options.privateKeyId, `${at}.privateKeyId`, {})
  const privateKeyAlgorithm = fields.privateKeyAlgorithm.read(
    options.privateKeyAlgorithm,
    `${at}.privateKeyAlgorithm`,
    {},
  )
  const allowInsecureHttp = boolean(options.allowInsecureHttp, `${at}.allowInsecureHttp`, false)
  const endpoint = endpointOf(options.endpoint, at, entry, allowInsecureHttp)
  const fetchOption = optionalFunction<typeof globalThis.fetch>(
    options.fetch,
    `${at}.fetch`,
    'compatible with fetch',
  )
  const cache = record(options.cache ?? {}, `${at}.cache`, [
    'maxEntries',
    'maxTtlSeconds',
    'inactiveTtlSeconds',
  ])
  const budget = record(options.budget ?? {}, `${at}.budget`, ['calls', 'perSeconds'])
  const credential = clientAuth === 'private_key_jwt' ? options.privateKey : options.clientSecret
  const normalized: NormalizedIntrospection = Object.freeze({
    issuer: entry.issuer,
    mode: mode === 'jwt' ? 'introspection' : mode,
    endpoint,
    jwksUri: entry.jwksUri,
    discovery: entry.discovery,
    clientId,
    clientAuth,
    credential: credential as SecretInput,
    credentialSource: describeSecret(
      credential,
      clientAuth === 'private_key_jwt' ? `${at}.privateKey` : `${at}.clientSecret`,
    ),
    privateKeyId: privateKeyId as string | undefined,
    privateKeyAlgorithm,
    jwtResponse: boolean(options.jwtResponse, `${at}.jwtResponse`, false),
    timeoutMs: integer(options.timeoutMs, `${at}.timeoutMs`, {
      fallback: 5000,
      min: 1,
      max: 60_000,
    }),
    cache: Object.freeze({
      maxEntries: integer(cache.maxEntries, `${at}.cache.maxEntries`, {
        fallback: 10_000,
        min: 1,
        max: 1_000_000,
      }),
      maxTtlSeconds: integer(cache.maxTtlSeconds, `${at}.cache.maxTtlSeconds`, {
        fallback: 60,
        min: 1,
        max: 3600,
      }),
      inactiveTtlSeconds: integer(cache.inactiveTtlSeconds, `${at}.cache.inactiveTtlSeconds`, {
        fallback: 5,
        min: 0,
        max: 300,
      }),
    }),
    budget: Object.freeze({
      calls: integer(budget.calls, `${at}.budget.calls`, { fallback: 100, min: 1, max: 1_000_000 }),
      perSeconds: integer(budget.perSeconds, `${at}.budget.perSeconds`, {
        fallback: 1,
        min: 1,
        max: 86_400,
      }),
    }),
    allowInsecureHttp,
    fetch: fetchOption ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args)),
  })
  return mode === 'jwt' ? undefined : normalized
}

function endpointOf(
  value: unknown,
  at: string,
  entry: {
    readonly issuer: string
    readonly jwksUri: string | undefined
    readonly discovery: boolean
  },
  allowInsecureHttp: boolean,
): string | undefined {
  if (value === undefined) {
    if (entry.discovery) return undefined
    // keycloak() entries: the introspection endpoint sits beside the key URL.
    if (entry.jwksUri === `${entry.issuer}/protocol/openid-connect/certs`) {
      return checkedEndpoint(
        `${entry.issuer}/protocol/openid-connect/token/introspect`,
        `${at}.endpoint`,
        allowInsecureHttp,
      )
    }
    fail(
      `${at}.endpoint`,
      'is required unless the issuer entry has discovery: true or was made by keycloak()',
    )
  }
  if (typeof value !== 'string') fail(`${at}.endpoint`, 'must be a URL string', value)
  return checkedEndpoint(value, `${at}.endpoint`, allowInsecureHttp)
}

function checkedEndpoint(value: string, path: string, allowInsecureHttp: boolean): string {
  const problem = endpointProblem(value, false)
  if (problem === undefined) return value
  if (endpointProblem(value, allowInsecureHttp) !== undefined) {
    fail(path, problem, value, { show: 'url' })
  }
  warnOnce({
    code: 'TOLLGATE_INSECURE_INTROSPECTION',
    subject: new URL(value).origin,
    message: `${path}: tokens and client credentials are sent over plain http to ${new URL(value).host} (allowInsecureHttp: true); anyone on the path can read them. Prefer https.`,
  })
  return value
}

/** The field an issuer entry of the gate may carry (beside `IssuerOptions`). */
export interface IssuerIntrospection {
  /** Introspect this issuer's tokens (RFC 7662); see {@link IntrospectionOptions}. */
  readonly introspection?: IntrospectionOptions
}
