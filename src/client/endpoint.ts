/**
 * The provider's token endpoint, through openid-client: discovery, client authentication
 * (`client_secret_basic`, `client_secret_post`, `private_key_jwt`) and the grant requests. The
 * one module that imports openid-client, and the one place its failures become
 * {@link TokenSourceError}s.
 *
 * @module
 */
import { createPrivateKey, KeyObject, webcrypto } from 'node:crypto'

import * as oidc from 'openid-client'
import { describeValue } from '../validate.js'
import { TokenSourceError, type TokenSourceErrorCode } from './errors.js'
import type { GrantType } from './events.js'
import {
  type ClientAuthMethod,
  isLoopback,
  type NormalizedTokenSourceOptions,
  type PrivateKeyInput,
} from './options.js'
import type { NormalizedParameters } from './parameters.js'
import { resolveSecret } from './secrets.js'

/** What a token request yields. */
export interface GrantResult {
  readonly accessToken: string
  readonly expiresInSeconds: number
  readonly refreshToken: string | undefined
  readonly scope: string | undefined
}

/** What an extension grant (token exchange, on-behalf-of) yields. */
export interface ExtensionGrantResult extends GrantResult {
  /** RFC 8693 `issued_token_type`, when the provider names it. */
  readonly issuedTokenType: string | undefined
}

/** Requests tokens for one source. */
export interface TokenEndpoint {
  request(
    grant: GrantType,
    parameters: NormalizedParameters,
    refreshToken?: string,
  ): Promise<GrantResult>
  /**
   * An extension grant (RFC 6749 §4.5) through openid-client's `genericGrantRequest`: token
   * exchange (RFC 8693), Entra's on-behalf-of (`jwt-bearer`). Failures are
   * {@link TokenSourceError}s as for the other grants.
   */
  extension(grantType: string, body: URLSearchParams): Promise<ExtensionGrantResult>
}

// RFC 6749 §5.1 makes expires_in optional; without it, a token is assumed to live this long.
const ASSUMED_LIFETIME_SECONDS = 60
const CLIENT_ERRORS = new Set(['invalid_client', 'unauthorized_client'])
const TRANSIENT_ERRORS = new Set(['temporarily_unavailable', 'server_error', 'slow_down'])
// Refusals of a request's parameters (RFC 6749 §5.2, RFC 8707 §2), not of the grant: the refresh
// token still serves other scopes and resources.
const PARAMETER_ERRORS = new Set(['invalid_scope', 'invalid_target'])

// Socket errors where the request certainly never reached the provider.
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'])

/**
 * `true` when a failed request may be sent again without spending a refresh token twice: the
 * provider answered (429, 5xx, `temporarily_unavailable`), or the request never left (connection
 * refused, name not resolved). Never after a timeout or a connection lost mid-request.
 */
export function mayResend(error: TokenSourceError): boolean {
  if (error.code !== 'ERR_TOKEN_ENDPOINT_UNAVAILABLE') return true
  return error.status !== undefined || NOT_SENT.has(socketCodeOf(error.cause) ?? '')
}

/** The socket error code (`ECONNREFUSED`…) under undici's `TypeError('fetch failed')`. */
function socketCodeOf(error: unknown): string | undefined {
  if (!(error instanceof TypeError) || error.message !== 'fetch failed') return undefined
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return typeof code === 'string' ? code : undefined
}

/** Plain http beyond loopback is allowed only when asked for, and never silently. */
export function warnIfInsecure(endpoint: string, clientId: string): void {
  const url = new URL(endpoint)
  if (url.protocol !== 'http:') return
  if (isLoopback(url.hostname)) return
  process.emitWarning(
    `token source of client "${clientId}" sends its credentials over plain http to ${url.host} (allowInsecureHttp: true)`,
    { code: 'TOLLGATE_INSECURE_HTTP' },
  )
}

/**
 * Builds the token endpoint of a source. Requests in flight are aborted when `stopped` is (the
 * source's `close()`).
 */
export function createTokenEndpoint(
  options: NormalizedTokenSourceOptions,
  stopped?: AbortSignal,
): TokenEndpoint {
  const { server, clientId } = options
  const context = { clientId, issuer: server.issuer }
  let discovered: Promise<oidc.ServerMetadata> | undefined
  const send: oidc.CustomFetch = (url, init) => {
    const signals = [init.signal, stopped].filter((signal) => signal !== undefined)
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0]
    const fetchImplementation = (options.fetch ?? globalThis.fetch) as unknown as oidc.CustomFetch
    return fetchImplementation(url, signal === undefined ? init : { ...init, signal })
  }

  // Plain http is allowed to loopback, or where the options say so explicitly (validated at
  // construction, with a warning): openid-client refuses it otherwise, and so do we.
  const mayUseHttp = (value: string) => {
    const url = new URL(value)
    return url.protocol === 'https:' || isLoopback(url.hostname) || options.allowInsecureHttp
  }
  const configure = (config: oidc.Configuration, endpoint: string) => {
    config.timeout = options.timeoutMs / 1000
    config[oidc.customFetch] = send
    if (new URL(endpoint).protocol === 'http:') oidc.allowInsecureRequests(config)
  }

  async function discover(): Promise<oidc.ServerMetadata> {
    const execute = new URL(server.issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : []
    let config: oidc.Configuration
    try {
      config = await oidc.discovery(new URL(server.issuer), clientId, undefined, oidc.None(), {
        execute,
        timeout: options.timeoutMs / 1000,
        [oidc.customFetch]: send,
      })
    } catch (error) {
      throw toTokenSourceError(error, context, options.credentialSource, 'discovery')
    }
    const metadata = config.serverMetadata()
    const tokenEndpoint = metadata.token_endpoint
    if (typeof tokenEndpoint !== 'string' || !mayUseHttp(tokenEndpoint)) {
      throw failure('ERR_TOKEN_RESPONSE_INVALID', false, context, {
        message: `discovery document of ${server.issuer} names no usable token_endpoint (https, or http to loopback)`,
      })
    }
    warnIfInsecure(tokenEndpoint, clientId)
    return metadata
  }

  async function serverMetadata(): Promise<oidc.ServerMetadata> {
    if (!server.discovery) return { issuer: server.issuer, token_endpoint: server.tokenEndpoint }
    // One discovery at a time; a failed one is forgotten so the next request tries again.
    discovered ??= discover().catch((error: unknown) => {
      discovered = undefined
      throw error
    })
    return discovered
  }

  async function configured(): Promise<oidc.Configuration> {
    const metadata = await serverMetadata()
    // A Configuration per request: the secret lives in its closure for this request only.
    const config = new oidc.Configuration(
      metadata,
      clientId,
      undefined,
      await clientAuthenticationOf(options),
    )
    configure(config, metadata.token_endpoint as string)
    return config
  }

  function usableResponse(response: oidc.TokenEndpointResponse): GrantResult {
    if (response.token_type.toLowerCase() !== 'bearer') {
      throw failure('ERR_TOKEN_RESPONSE_INVALID', false, context, {
        message: `token endpoint of ${server.issuer} issued a token of type other than Bearer to client "${clientId}"`,
      })
    }
    // expires_in 0 is a token for this one use: handed to the caller who asked, never cached.
    const expiresIn = response.expires_in
    if (
      expiresIn !== undefined &&
      !(typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn >= 0)
    ) {
      throw failure('ERR_TOKEN_RESPONSE_INVALID', false, context, {
        message: `token endpoint of ${server.issuer} gave client "${clientId}" an unusable expires_in`,
      })
    }
    return {
      accessToken: response.access_token,
      expiresInSeconds: expiresIn ?? ASSUMED_LIFETIME_SECONDS,
      refreshToken: response.refresh_token,
      scope: response.scope,
    }
  }

  return {
    async extension(grantType, body) {
      const config = await configured()
      let response: oidc.TokenEndpointResponse
      try {
        response = await oidc.genericGrantRequest(config, grantType, body)
      } catch (error) {
        throw toTokenSourceError(
          error,
          context,
          options.credentialSource,
          'token',
          options.clientAuth,
        )
      }
      const issued = response['issued_token_type']
      return {
        ...usableResponse(response),
        issuedTokenType: typeof issued === 'string' ? issued : undefined,
      }
    },
    async request(grant, parameters, refreshToken) {
      const config = await configured()
      const body = new URLSearchParams()
      if (parameters.scope !== undefined) body.set('scope', parameters.scope)
      for (const resource of parameters.resource) body.append('resource', resource)
      if (parameters.audience !== undefined) body.set('audience', parameters.audience)
      let response: oidc.TokenEndpointResponse
      try {
        response =
          grant === 'refresh_token'
            ? await oidc.refreshTokenGrant(config, refreshToken as string, body)
            : await oidc.clientCredentialsGrant(config, body)
      } catch (error) {
        const failed = toTokenSourceError(
          error,
          context,
          options.credentialSource,
          'token',
          options.clientAuth,
        )
        throw grant === 'refresh_token' ? asRefreshRefusal(failed) : failed
      }
      return usableResponse(response)
    },
  }
}

/**
 * The client's authentication at the token endpoint, with its secret or key resolved for one
 * request. Shared with `tollgate/signin`, whose code and refresh requests authenticate the same way.
 */
export async function clientAuthenticationOf(
  options: Pick<
    NormalizedTokenSourceOptions,
    | 'clientAuth'
    | 'clientId'
    | 'server'
    | 'credential'
    | 'credentialSource'
    | 'privateKeyId'
    | 'privateKeyAlgorithm'
  >,
): Promise<oidc.ClientAuth> {
  const { clientId } = options
  const context = { clientId, issuer: options.server.issuer }
  const secretContext = {
    ...context,
    option: options.clientAuth === 'private_key_jwt' ? 'privateKey' : 'clientSecret',
  }
  if (options.clientAuth === 'private_key_jwt') {
    const input = await resolveSecret<PrivateKeyInput>(
      options.credential as PrivateKeyInput,
      secretContext,
      (value): value is PrivateKeyInput => typeof value === 'string' || typeof value === 'object',
    )
    let key: webcrypto.CryptoKey
    try {
      key = await signingKey(input, options.privateKeyAlgorithm)
    } catch (error) {
      if (error instanceof AlgorithmMismatch) {
        throw failure('ERR_SECRET_UNAVAILABLE', false, context, {
          message: `privateKeyAlgorithm ${options.privateKeyAlgorithm} does not fit the ${error.keyType} private key of client "${clientId}" (it signs with ${error.fits}): check ${options.credentialSource} and privateKeyAlgorithm`,
          secretSource: options.credentialSource,
        })
      }
      throw failure('ERR_SECRET_UNAVAILABLE', false, context, {
        message: `privateKey of client "${clientId}" is not a usable private key: check ${options.credentialSource}`,
        secretSource: options.credentialSource,
      })
    }
    return oidc.PrivateKeyJwt(
      options.privateKeyId === undefined ? key : { key, kid: options.privateKeyId },
    )
  }
  const secret = await resolveSecret<string>(
    options.credential as string,
    secretContext,
    (value): value is string => typeof value === 'string',
  )
  return options.clientAuth === 'client_secret_post'
    ? oidc.ClientSecretPost(secret)
    : oidc.ClientSecretBasic(secret)
}

// Node 20 has no webcrypto.CryptoKey export; the global is there from Node 17.
function isCryptoKey(value: unknown): value is webcrypto.CryptoKey {
  const CryptoKeyClass = (globalThis as { CryptoKey?: new () => unknown }).CryptoKey
  return typeof CryptoKeyClass === 'function' && value instanceof CryptoKeyClass
}

type Algorithm = NonNullable<NormalizedTokenSourceOptions['privateKeyAlgorithm']>

/** `privateKeyAlgorithm` names an algorithm the key cannot sign with. */
class AlgorithmMismatch extends Error {
  readonly keyType: string
  readonly fits: string
  constructor(keyType: string, fits: string) {
    super('privateKeyAlgorithm does not fit the key')
    this.keyType = keyType
    this.fits = fits
  }
}

function checkAlgorithm(
  algorithm: Algorithm | undefined,
  keyType: string,
  fits: readonly Algorithm[],
): void {
  if (algorithm !== undefined && !fits.includes(algorithm)) {
    throw new AlgorithmMismatch(keyType, fits.join(' or '))
  }
}

const CRYPTO_KEY_ALGORITHMS: Readonly<Record<string, Algorithm>> = {
  'RSASSA-PKCS1-v1_5': 'RS256',
  'RSA-PSS': 'PS256',
  ECDSA: 'ES256',
  Ed25519: 'EdDSA',
}

/** Imports a private key for signing client assertions (node:crypto's WebCrypto). */
async function signingKey(
  input: PrivateKeyInput,
  algorithm: NormalizedTokenSourceOptions['privateKeyAlgorithm'],
): Promise<webcrypto.CryptoKey> {
  if (isCryptoKey(input)) {
    const name = input.algorithm.name
    checkAlgorithm(algorithm, `${name} CryptoKey`, [CRYPTO_KEY_ALGORITHMS[name] ?? 'RS256'])
    return input
  }
  const keyObject =
    input instanceof KeyObject
      ? input
      : typeof input === 'string'
        ? createPrivateKey(input)
        : createPrivateKey({ key: input as import('node:crypto').JsonWebKey, format: 'jwk' })
  if (keyObject.type !== 'private') throw new TypeError('not a private key')
  const jwk = keyObject.export({ format: 'jwk' })
  let params: webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | webcrypto.Algorithm
  if (jwk.kty === 'RSA') {
    checkAlgorithm(algorithm, 'RSA', ['RS256', 'PS256'])
    params =
      algorithm === 'PS256'
        ? { name: 'RSA-PSS', hash: 'SHA-256' }
        : { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
  } else if (jwk.kty === 'EC' && jwk.crv === 'P-256') {
    checkAlgorithm(algorithm, 'P-256', ['ES256'])
    params = { name: 'ECDSA', namedCurve: 'P-256' }
  } else if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') {
    checkAlgorithm(algorithm, 'Ed25519', ['EdDSA'])
    params = { name: 'Ed25519' }
  } else {
    throw new TypeError('unsupported key type')
  }
  return webcrypto.subtle.importKey('jwk', jwk, params, false, ['sign'])
}

// RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E.
const DESCRIPTION = /^[\x20\x21\x23-\x5B\x5D-\x7E]{1,200}$/

/** The provider's `error_description` when it is what RFC 6749 allows (and short); else nothing. */
function descriptionOf(value: unknown): string | undefined {
  return typeof value === 'string' && DESCRIPTION.test(value) ? value : undefined
}

function failure(
  code: TokenSourceErrorCode,
  retryable: boolean,
  context: { clientId: string; issuer: string },
  extra: {
    message: string
    oauthError?: string | undefined
    oauthErrorDescription?: string | undefined
    status?: number | undefined
    secretSource?: string | undefined
    cause?: unknown
  },
): TokenSourceError {
  return new TokenSourceError({ code, retryable, ...context, ...extra })
}

function responseStatus(value: unknown): number | undefined {
  return value instanceof Response ? value.status : undefined
}

/**
 * A refresh_token grant's failure, with a refusal of the refresh token itself told apart: the
 * provider answered with an OAuth error that is not the client's (`invalid_client`…), an
 * outage's (`temporarily_unavailable`…) or a parameter's (`invalid_scope`, `invalid_target`), or
 * with a bare 400. RFC 6749 §5.2 names a spent, revoked or expired refresh token `invalid_grant`;
 * providers also answer `invalid_request` for a deleted one. Either way the grant has ended and
 * sending the token again cannot succeed (and looks like reuse, RFC 9700 §4.14.2).
 */
export function asRefreshRefusal(error: TokenSourceError): TokenSourceError {
  const refused =
    (error.code === 'ERR_TOKEN_REQUEST_REFUSED' && !PARAMETER_ERRORS.has(error.oauthError ?? '')) ||
    (error.code === 'ERR_TOKEN_RESPONSE_INVALID' && error.status === 400)
  if (!refused) return error
  return failure(
    'ERR_REFRESH_TOKEN_REFUSED',
    false,
    { clientId: error.clientId, issuer: error.issuer },
    {
      message:
        `token endpoint of ${error.issuer} refused the refresh token of client "${error.clientId}" ` +
        `(${error.oauthError ?? `status ${error.status}`}): its grant has ended (revoked, expired, ` +
        'unknown or already used), and only a new authorization by the user gives a new one',
      oauthError: error.oauthError,
      status: error.status,
    },
  )
}

/** What an openid-client error may say without a response body, a token or a claim value. */
const SAFE_ALGORITHM = /^[A-Za-z0-9+._-]{1,32}$/

/**
 * openid-client's error, and oauth4webapi's under it, reduced to their names, fixed messages and
 * codes (their `cause`s carry response bodies, headers and claims, which may hold a token), plus
 * the JWS algorithm when one was refused. Kept as the `cause` of an unusable answer, so that an
 * operator reads what openid-client said ("unsupported JWS algorithm").
 */
export function openidClientCause(error: unknown): Error | undefined {
  if (!(error instanceof oidc.ClientError)) return undefined
  const inner = error.cause
  const reduce = (value: Error, cause?: Error) => {
    const reduced = new Error(value.message, cause === undefined ? undefined : { cause })
    reduced.name = value.name
    const code = (value as { code?: unknown }).code
    if (typeof code === 'string') Object.assign(reduced, { code })
    return reduced
  }
  if (!(inner instanceof Error)) return reduce(error)
  const algorithm = refusedAlgorithmOf(error)
  const innerReduced = reduce(inner)
  if (algorithm !== undefined) Object.assign(innerReduced, { algorithm })
  return reduce(error, innerReduced)
}

/**
 * The JWS `alg` of a JWT openid-client refused for its algorithm: oauth4webapi's "unsupported JWS
 * algorithm" (it cannot verify it, an HMAC one for instance) or 'unexpected JWT "alg" header
 * parameter' (not one the client accepts). The value is shown only when it looks like an
 * algorithm name; `'(unnamed)'` otherwise.
 */
export function refusedAlgorithmOf(error: unknown): string | undefined {
  if (!(error instanceof oidc.ClientError)) return undefined
  const inner = error.cause
  if (!(inner instanceof Error)) return undefined
  const details = inner.cause as { alg?: unknown; header?: { alg?: unknown } } | undefined
  let alg: unknown
  if (inner.message === 'unsupported JWS algorithm') alg = details?.alg
  else if (inner.message === 'unexpected JWT "alg" header parameter') alg = details?.header?.alg
  else return undefined
  return typeof alg === 'string' && SAFE_ALGORITHM.test(alg) ? alg : '(unnamed)'
}

/**
 * `client_secret_basic` form-encodes the client id before Base64 (RFC 6749 §2.3.1), so every
 * character but letters and digits goes out as `%XX`; providers that skip the decoding then look
 * up another client and refuse it.
 */
function basicEncodes(clientId: string): boolean {
  return /[^A-Za-z0-9]/.test(clientId)
}

/** The refusal of the client itself, whether the provider said why (`invalid_client`) or not. */
function clientRefused(
  where: string,
  context: { clientId: string; issuer: string },
  secretSource: string,
  clientAuth: ClientAuthMethod | undefined,
  oauthError: string | undefined,
  status: number | undefined,
  oauthErrorDescription?: string,
): TokenSourceError {
  const encodingHint =
    clientAuth === 'client_secret_basic' && basicEncodes(context.clientId)
      ? `; client_secret_basic sends the client id percent-encoded (it has characters such as - . _ ~), which some providers do not decode: clientAuth: 'client_secret_post' avoids it`
      : ''
  return failure('ERR_CLIENT_REFUSED', false, context, {
    message:
      `${where} refused client "${context.clientId}" (${oauthError ?? `status ${status}`}): check the client id, ` +
      `the credential read from ${secretSource}, and that the client may use this grant${encodingHint}`,
    oauthError,
    oauthErrorDescription,
    status,
    secretSource,
  })
}

/**
 * The issuer a discovery document names when openid-client refused it for not being the one
 * configured (OpenID Connect Discovery 1.0 §4.3). The document is public: the value is no secret.
 */
function issuerNamedInstead(error: unknown): string | undefined {
  if (!(error instanceof oidc.ClientError)) return undefined
  if (error.code !== 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') return undefined
  const cause = error.cause as { attribute?: unknown; body?: { issuer?: unknown } } | undefined
  const named = cause?.attribute === 'issuer' ? cause.body?.issuer : undefined
  return typeof named === 'string' ? named : undefined
}

/**
 * The one place openid-client's failures become ours. Response bodies and requests are not kept (a
 * response may hold a token): openid-client's errors are kept reduced to their names, fixed
 * messages and codes ({@link openidClientCause}), network failures as they are, as `cause`.
 * `clientAuth`, when given, lets a refusal of the client say what its authentication method may
 * have to do with it.
 */
export function toTokenSourceError(
  error: unknown,
  context: { clientId: string; issuer: string },
  secretSource: string,
  phase: 'discovery' | 'token',
  clientAuth?: ClientAuthMethod,
): TokenSourceError {
  if (error instanceof TokenSourceError) return error
  const where =
    phase === 'discovery' ? `discovery at ${context.issuer}` : `token endpoint of ${context.issuer}`
  const named = phase === 'discovery' ? issuerNamedInstead(error) : undefined
  if (named !== undefined) {
    return failure('ERR_TOKEN_RESPONSE_INVALID', false, context, {
      // Quoted, bounded and escaped by the option kit: a hostile document may name anything.
      message:
        `${where} refused: the document names ${describeValue(named, 'url')}, expected ` +
        `${describeValue(context.issuer, 'url')} (the issuer option must be the issuer the ` +
        'provider names, character for character)',
    })
  }
  let oauthError: string | undefined
  let oauthErrorDescription: string | undefined
  let status: number | undefined
  if (error instanceof oidc.ResponseBodyError) {
    oauthError = error.error
    oauthErrorDescription = descriptionOf(error.error_description)
    status = error.status
  } else if (error instanceof oidc.WWWAuthenticateChallengeError) {
    status = error.status
    // A 401 with a challenge (RFC 6749 §5.2, HTTP Basic): the client failed to authenticate.
    if (status === 401) oauthError = 'invalid_client'
  } else if (error instanceof oidc.ClientError && error.code !== 'OAUTH_TIMEOUT') {
    status = responseStatus(error.cause)
  } else if (
    error instanceof Error &&
    ((error as { code?: unknown }).code === 'OAUTH_TIMEOUT' ||
      error.name === 'TimeoutError' ||
      error.name === 'AbortError')
  ) {
    return failure('ERR_TOKEN_ENDPOINT_UNAVAILABLE', true, context, {
      message: `${where} did not answer in time`,
      cause: error,
    })
  } else if (socketCodeOf(error) !== undefined) {
    // undici's fetch() failing: connection refused, reset, DNS; its cause names the socket
    // error. Any other TypeError is a bug or a broken fetch option, not an outage.
    return failure('ERR_TOKEN_ENDPOINT_UNAVAILABLE', true, context, {
      message: `${where} is unreachable`,
      cause: error,
    })
  }
  if (oauthError !== undefined && CLIENT_ERRORS.has(oauthError)) {
    return clientRefused(
      where,
      context,
      secretSource,
      clientAuth,
      oauthError,
      status,
      oauthErrorDescription,
    )
  }
  // A bare 401 or 403 from the token endpoint (no body, no challenge): some providers and the
  // proxies in front of them answer a wrong secret so. It is the client that was refused, not a
  // malformed answer.
  if (phase === 'token' && oauthError === undefined && (status === 401 || status === 403)) {
    return clientRefused(where, context, secretSource, clientAuth, undefined, status)
  }
  if (
    (oauthError !== undefined && TRANSIENT_ERRORS.has(oauthError)) ||
    status === 429 ||
    (status !== undefined && status >= 500)
  ) {
    return failure('ERR_TOKEN_ENDPOINT_UNAVAILABLE', true, context, {
      message: `${where} is unavailable (${oauthError ?? `status ${status}`})`,
      oauthError,
      status,
    })
  }
  if (oauthError !== undefined) {
    return failure('ERR_TOKEN_REQUEST_REFUSED', false, context, {
      message: `${where} refused the request of client "${context.clientId}" (${oauthError})`,
      oauthError,
      oauthErrorDescription,
      status,
    })
  }
  const cause = openidClientCause(error)
  const said = cause?.cause instanceof Error ? cause.cause.message : cause?.message
  return failure('ERR_TOKEN_RESPONSE_INVALID', false, context, {
    message:
      `${where} gave client "${context.clientId}" an answer that is not a usable response` +
      `${status === undefined ? '' : ` (status ${status})`}${said === undefined ? '' : `: ${said}`}`,
    status,
    cause,
  })
}
