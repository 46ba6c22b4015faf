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
import { boolean, fail, integer, isRecord, oneOf, optionalFunction, record } from '../validate.js'
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
  /**
   * How long past `maxTtlSeconds` an active token's verdict still answers while it cannot be
   * refreshed: the provider is down, or the calls reserved for refreshing are spent. Never past
   * the token's `exp`. A token revoked at the provider during an outage is refused at most
   * `maxTtlSeconds + staleIfErrorSeconds` after. Default 300, at most 3600; 0 serves nothing stale.
   */
  readonly staleIfErrorSeconds?: number
}

/**
 * How many introspection calls an issuer may receive from this gate: the bound a flood of unknown
 * tokens meets. Half of it (rounded down) is reserved for refreshing the verdicts of tokens the
 * provider has called active, which strings nobody has seen can never spend; the rest serves
 * tokens the gate has not seen. A token that would need a call past its share is answered 503
 * with `Retry-After`, never 401.
 */
export interface IntrospectionBudgetOptions {
  /** Calls allowed per `perSeconds`, both shares together. Default 100. */
  readonly calls?: number
  /** Default 1. */
  readonly perSeconds?: number
}

/**
 * Which opaque tokens (tokens that are not a JWT naming a configured issuer) are sent to an
 * issuer's introspection endpoint:
 * - `'all'`: every opaque token that no other issuer's rule claims (one issuer at most);
 * - `'none'`: none (the issuer's tokens are JWTs, introspected by the `iss` they name);
 * - `{ prefix }`: those that start with the prefix (or one of the prefixes) the provider marks
 *   its tokens with;
 * - a function: those for which it returns `true`.
 */
export type OpaqueTokenRule =
  | 'all'
  | 'none'
  | { readonly prefix: string | readonly string[] }
  | ((token: string) => boolean)

/** {@link OpaqueTokenRule}, validated. */
export type NormalizedOpaqueRule =
  | { readonly kind: 'all' }
  | { readonly kind: 'none' }
  | { readonly kind: 'prefix'; readonly prefixes: readonly string[] }
  | { readonly kind: 'match'; readonly match: (token: string) => boolean }

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
   * A token that is not a JWT naming a configured issuer goes where `opaqueTokens` says.
   */
  readonly mode?: TokenCheck
  /**
   * Which opaque tokens go to this issuer (see {@link OpaqueTokenRule}): an opaque token names
   * no issuer, and one sent to the wrong provider reaches that provider's operator with the
   * gate's credentials. Default `'all'` when this is the only issuer that introspects; required
   * on each when several do (at most one `'all'`). A token no rule claims, or claimed by two, is
   * refused 401 `invalid_token` (reason `unrouted`) and sent nowhere.
   */
  readonly opaqueTokens?: OpaqueTokenRule
  /**
   * For providers whose introspection answers carry no `aud` (RFC 7662 makes it optional): the
   * OAuth clients (`client_id` of the answer) whose tokens are taken as meant for this API when
   * the answer names no audience. List only clients that obtain tokens for this API alone. An
   * answer that has an `aud` is judged by it as always; one with neither an `aud` nor one of these
   * clients is refused (reason `audience`). Default: none (an answer without `aud` is refused).
   */
  readonly audiencelessClients?: readonly string[]
  /**
   * Largest body read from the provider (an introspection answer, the discovery document, the keys
   * of signed answers): a larger one, or one that does not end, is refused (503, reason
   * `too_large`) and reading stops there. Default 65536 (64 KiB).
   */
  readonly maxBodyBytes?: number
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
  /** `undefined`: not set (the only introspecting issuer then receives every opaque token). */
  readonly opaqueTokens: NormalizedOpaqueRule | undefined
  /** `undefined`: an answer without `aud` is refused. */
  readonly audiencelessClients: ReadonlySet<string> | undefined
  readonly maxBodyBytes: number
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
    readonly staleIfErrorSeconds: number
  }
  readonly budget: { readonly calls: number; readonly perSeconds: number }
  readonly allowInsecureHttp: boolean
  readonly fetch: typeof globalThis.fetch
}

const KEYS = [
  'mode',
  'opaqueTokens',
  'audiencelessClients',
  'maxBodyBytes',
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
    'staleIfErrorSeconds',
  ])
  const budget = record(options.budget ?? {}, `${at}.budget`, ['calls', 'perSeconds'])
  const credential = clientAuth === 'private_key_jwt' ? options.privateKey : options.clientSecret
  const normalized: NormalizedIntrospection = Object.freeze({
    issuer: entry.issuer,
    mode: mode === 'jwt' ? 'introspection' : mode,
    opaqueTokens: opaqueRuleOf(options.opaqueTokens, `${at}.opaqueTokens`),
    audiencelessClients: clientListOf(options.audiencelessClients, `${at}.audiencelessClients`),
    maxBodyBytes: integer(options.maxBodyBytes, `${at}.maxBodyBytes`, {
      fallback: 65_536,
      min: 1024,
      max: 16_777_216,
    }),
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
      staleIfErrorSeconds: integer(cache.staleIfErrorSeconds, `${at}.cache.staleIfErrorSeconds`, {
        fallback: 300,
        min: 0,
        max: 3600,
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

const OPAQUE_RULE =
  "must be 'all', 'none', { prefix: string | string[] } or a function (token) => boolean"

function opaqueRuleOf(value: unknown, path: string): NormalizedOpaqueRule | undefined {
  if (value === undefined) return undefined
  if (value === 'all' || value === 'none') return Object.freeze({ kind: value })
  if (typeof value === 'function') {
    return Object.freeze({ kind: 'match', match: value as (token: string) => boolean })
  }
  if (typeof value === 'string') fail(path, OPAQUE_RULE, value, { show: true })
  if (!isRecord(value)) fail(path, OPAQUE_RULE, value)
  const { prefix } = record(value, path, ['prefix'])
  const list = typeof prefix === 'string' ? [prefix] : prefix
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    !list.every((item): item is string => typeof item === 'string' && item.length > 0)
  ) {
    fail(`${path}.prefix`, 'must be a non-empty string or a non-empty list of them', prefix)
  }
  return Object.freeze({ kind: 'prefix', prefixes: Object.freeze([...list]) })
}

function clientListOf(value: unknown, path: string): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every((item): item is string => typeof item === 'string' && item.length > 0)
  ) {
    fail(
      path,
      'must be a non-empty list of client ids (the clients whose tokens are meant for this API alone)',
      value,
    )
  }
  return new Set(value)
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
