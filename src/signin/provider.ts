/**
 * The provider's side of sign-in, through openid-client: the authorization URL (PKCE S256, state,
 * nonce), the code exchange with its checks (state, RFC 9207 `iss`, ID token claims and signature,
 * nonce), refresh with a resource indicator, and the end-session URL. Client authentication and
 * the mapping of openid-client's failures are the token source's (`client/endpoint.ts`).
 *
 * @module
 */
import * as oidc from 'openid-client'

import {
  asRefreshRefusal,
  clientAuthenticationOf,
  refusedAlgorithmOf,
  toTokenSourceError,
} from '../client/endpoint.js'
import { TokenSourceError } from '../client/errors.js'
import type { NormalizedTokenSourceOptions } from '../client/options.js'
import type { NormalizedParameters } from '../client/parameters.js'
import { SignInError, type SignInRefusalReason } from './errors.js'
import {
  algorithmRefusal,
  hmacRefusal,
  type IdTokenAlgorithms,
  type IdTokenContext,
  verifyHmac,
} from './id-token.js'

/** What the provider answered to a code or a refresh token. */
export interface ProviderTokens {
  readonly accessToken: string
  readonly expiresInSeconds: number
  readonly refreshToken: string | undefined
  readonly idToken: string | undefined
  /** The validated ID token's claims (code exchange only). */
  readonly claims: Readonly<Record<string, unknown>> | undefined
}

/** What the callback checks against. */
export interface CallbackChecks {
  readonly state: string
  readonly nonce: string
  readonly codeVerifier: string
  /** A step-up's `max_age`: openid-client then requires `auth_time`, at most this old. */
  readonly maxAge?: number | undefined
}

/** The provider, as sign-in uses it. */
export interface SignInProvider {
  readonly issuer: string
  authorizationUrl(parameters: URLSearchParams): Promise<URL>
  exchangeCode(
    callbackUrl: URL,
    checks: CallbackChecks,
    product: NormalizedParameters | undefined,
  ): Promise<ProviderTokens>
  /**
   * @throws TokenSourceError from the token endpoint: `ERR_REFRESH_TOKEN_REFUSED` when the provider
   * refused the refresh token for good (`invalid_grant`, `invalid_request`, a bare 400…).
   */
  refresh(refreshToken: string, product: NormalizedParameters | undefined): Promise<ProviderTokens>
  /** The provider's JWKS URI (back-channel logout tokens are verified with its keys). */
  jwksUri(): Promise<string | undefined>
  /** The end-session URL, or `undefined` when the provider has no end-session endpoint. */
  endSessionUrl(parameters: Record<string, string>): Promise<URL | undefined>
  /**
   * Where the provider serves its logout page, which frames front-channel logout: the issuer's
   * origin, and the end-session endpoint's when discovery names another. Never fails: without the
   * discovery document, the issuer's origin alone.
   */
  logoutPageOrigins(): Promise<readonly string[]>
}

const ASSUMED_LIFETIME_SECONDS = 60

/** Builds the provider glue from the validated client options. */
export function createSignInProvider(
  client: NormalizedTokenSourceOptions,
  idToken: IdTokenAlgorithms,
): SignInProvider {
  const { server, clientId } = client
  const issuer = server.issuer
  const idTokenContext: IdTokenContext = {
    clientId,
    issuer,
    credential: client.credential,
    idToken,
  }
  let metadata: Promise<oidc.ServerMetadata> | undefined
  // The provider's keys, carried from one Configuration to the next (each request builds its own,
  // so a secret from a function is read per request): one JWKS fetch, not one per sign-in.
  let jwksCache: oidc.ExportedJWKSCache | undefined
  const keepKeys = (config: oidc.Configuration) => {
    jwksCache = oidc.getJwksCache(config) ?? jwksCache
  }

  async function discover(): Promise<oidc.ServerMetadata> {
    if (!server.discovery) {
      // A Keycloak realm: its endpoints sit at fixed paths under the issuer.
      const base = issuer.replace(/\/+$/, '')
      return {
        issuer,
        authorization_endpoint: `${base}/protocol/openid-connect/auth`,
        token_endpoint: server.tokenEndpoint,
        jwks_uri: `${base}/protocol/openid-connect/certs`,
        end_session_endpoint: `${base}/protocol/openid-connect/logout`,
      }
    }
    try {
      const config = await oidc.discovery(new URL(issuer), clientId, undefined, oidc.None(), {
        execute: new URL(issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
        timeout: client.timeoutMs / 1000,
        ...(client.fetch === undefined
          ? {}
          : { [oidc.customFetch]: client.fetch as unknown as oidc.CustomFetch }),
      })
      return config.serverMetadata()
    } catch (error) {
      throw unavailable(
        'provider_unavailable',
        toTokenSourceError(error, { clientId, issuer }, client.credentialSource, 'discovery'),
      )
    }
  }

  function serverMetadata(): Promise<oidc.ServerMetadata> {
    // One discovery at a time; a failed one is forgotten so the next request tries again.
    metadata ??= discover().catch((error: unknown) => {
      metadata = undefined
      throw error
    })
    return metadata
  }

  async function configuration(): Promise<oidc.Configuration> {
    const config = new oidc.Configuration(
      // openid-client accepts an ID token in the algorithms the provider advertises, else RS256
      // only: the accepted ones are this option's instead, whatever the provider says.
      {
        ...(await serverMetadata()),
        id_token_signing_alg_values_supported: [...idToken.algorithms],
      },
      clientId,
      undefined,
      await clientAuthenticationOf(client),
    )
    config.timeout = client.timeoutMs / 1000
    if (client.fetch !== undefined)
      config[oidc.customFetch] = client.fetch as unknown as oidc.CustomFetch
    if (new URL(issuer).protocol === 'http:') oidc.allowInsecureRequests(config)
    // OIDC Core §3.1.3.7 lets a client skip the ID token's signature over TLS; we check it anyway,
    // against the provider's keys, so a compromised token endpoint path cannot name any user.
    // openid-client verifies asymmetric signatures only: an HMAC one is checked after it, here.
    if (!idToken.hmac && config.serverMetadata().jwks_uri !== undefined) {
      oidc.enableNonRepudiationChecks(config)
    }
    if (jwksCache !== undefined) oidc.setJwksCache(config, jwksCache)
    return config
  }

  const tokensOf = (
    response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers,
    withClaims: boolean,
  ): ProviderTokens => {
    if (response.token_type.toLowerCase() !== 'bearer') {
      throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'provider_error')
    }
    // As the token source: absent is assumed short, 0 is a token for this one use, anything
    // else that is not a non-negative number makes the answer unusable.
    const expiresIn = response.expires_in
    if (
      expiresIn !== undefined &&
      !(typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn >= 0)
    ) {
      throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'provider_error')
    }
    return {
      accessToken: response.access_token,
      expiresInSeconds: expiresIn ?? ASSUMED_LIFETIME_SECONDS,
      refreshToken: response.refresh_token,
      idToken: response.id_token,
      claims: withClaims ? (response.claims() as Record<string, unknown> | undefined) : undefined,
    }
  }

  const productBody = (product: NormalizedParameters | undefined) => {
    const body = new URLSearchParams()
    if (product === undefined) return body
    if (product.scope !== undefined) body.set('scope', product.scope)
    for (const resource of product.resource) body.append('resource', resource)
    if (product.audience !== undefined) body.set('audience', product.audience)
    return body
  }

  return {
    issuer,
    async authorizationUrl(parameters) {
      let config: oidc.Configuration
      try {
        config = await configuration()
      } catch (error) {
        throw asSignInError(error)
      }
      return oidc.buildAuthorizationUrl(config, parameters)
    },
    async exchangeCode(callbackUrl, checks, product) {
      let response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers
      try {
        const config = await configuration()
        const body = productBody(product)
        // The code exchange takes the product's resource, not its scope: scope is the sign-in's.
        body.delete('scope')
        try {
          response = await oidc.authorizationCodeGrant(
            config,
            callbackUrl,
            {
              expectedState: checks.state,
              expectedNonce: checks.nonce,
              pkceCodeVerifier: checks.codeVerifier,
              idTokenExpected: true,
              ...(checks.maxAge === undefined ? {} : { maxAge: checks.maxAge }),
            },
            body,
          )
        } finally {
          keepKeys(config)
        }
      } catch (error) {
        throw callbackError(error)
      }
      try {
        await verifyHmac(idTokenContext, response.id_token)
      } catch (error) {
        // The secret could not be read (it was a moment ago, for the code exchange): an outage.
        if (error instanceof TokenSourceError) throw unavailable('provider_unavailable', error)
        throw new SignInError(
          'ERR_SIGNIN_CALLBACK_INVALID',
          'id_token',
          hmacRefusal(idTokenContext, error),
        )
      }
      const tokens = tokensOf(response, true)
      if (tokens.claims === undefined)
        throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'id_token')
      return tokens
    },
    async refresh(refreshToken, product) {
      let config: oidc.Configuration
      try {
        config = await configuration()
      } catch (error) {
        throw asSignInError(error)
      }
      let response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers
      try {
        response = await oidc.refreshTokenGrant(config, refreshToken, productBody(product))
      } catch (error) {
        const algorithm = refusedAlgorithmOf(error)
        if (algorithm !== undefined) throw algorithmRefusal(idTokenContext, error, algorithm)
        throw asRefreshRefusal(
          toTokenSourceError(
            error,
            { clientId, issuer },
            client.credentialSource,
            'token',
            client.clientAuth,
          ),
        )
      } finally {
        keepKeys(config)
      }
      try {
        await verifyHmac(idTokenContext, response.id_token)
      } catch (error) {
        // As a refreshed ID token whose RS256 signature fails: an answer not to use (503).
        throw hmacRefusal(idTokenContext, error)
      }
      return tokensOf(response, false)
    },
    async jwksUri() {
      try {
        return (await serverMetadata()).jwks_uri
      } catch (error) {
        throw asSignInError(error)
      }
    },
    async logoutPageOrigins() {
      const origins = [new URL(issuer).origin]
      const endSession = await serverMetadata().then(
        (metadata) => metadata.end_session_endpoint,
        () => undefined,
      )
      if (typeof endSession === 'string' && URL.canParse(endSession)) {
        const { origin, protocol } = new URL(endSession)
        if (protocol === 'https:' || protocol === 'http:') origins.push(origin)
      }
      return [...new Set(origins)]
    },
    async endSessionUrl(parameters) {
      let config: oidc.Configuration
      try {
        config = await configuration()
      } catch {
        return undefined
      }
      if (config.serverMetadata().end_session_endpoint === undefined) return undefined
      return oidc.buildEndSessionUrl(config, parameters)
    },
  }

  function asSignInError(error: unknown): SignInError {
    if (error instanceof SignInError) return error
    return unavailable(
      'provider_unavailable',
      toTokenSourceError(
        error,
        { clientId, issuer },
        client.credentialSource,
        'token',
        client.clientAuth,
      ),
    )
  }

  /** One place where a failed callback becomes a refusal: by phase, then by openid-client's code. */
  function callbackError(error: unknown): SignInError {
    if (error instanceof SignInError) return error
    const algorithm = refusedAlgorithmOf(error)
    if (algorithm !== undefined) return algorithmRefusal(idTokenContext, error, algorithm)
    if (error instanceof oidc.AuthorizationResponseError) {
      // The provider sent error=… to the redirect URI (the user declined, or a bad request).
      return new SignInError('ERR_SIGNIN_REFUSED', 'provider_error', undefined, {
        error: providerWords(error.error, 64) ?? '',
        description: providerWords(error.error_description, 256),
      })
    }
    const reason = checkReason(error)
    const mapped = toTokenSourceError(
      error,
      { clientId, issuer },
      client.credentialSource,
      'token',
      client.clientAuth,
    )
    if (isClientRefusal(mapped))
      return new SignInError('ERR_CLIENT_REFUSED', 'client_refused', mapped)
    switch (mapped.code) {
      case 'ERR_TOKEN_ENDPOINT_UNAVAILABLE':
      case 'ERR_SECRET_UNAVAILABLE':
        return unavailable('provider_unavailable', mapped)
      case 'ERR_TOKEN_REQUEST_REFUSED':
        // invalid_grant: a replayed or expired code, or a PKCE verifier that does not match.
        return new SignInError('ERR_SIGNIN_REFUSED', 'code_refused', mapped)
      default:
        return new SignInError('ERR_SIGNIN_CALLBACK_INVALID', reason, mapped)
    }
  }
}

/**
 * The provider's words, for an event: at most `limit` characters, control characters (C0, DEL,
 * C1) removed so that a log line cannot be split or recoloured by them.
 */
export function providerWords(value: unknown, limit: number): string | undefined {
  if (typeof value !== 'string') return undefined
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point.
  const clean = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
  return clean.length > limit ? clean.slice(0, limit) : clean
}

/**
 * `true` when the token endpoint refused this client (RFC 6749 §5.2 `invalid_client`,
 * `unauthorized_client`), or answered a bare 401 or 403 (a gateway in front of it, a client not
 * allowed the grant): retrying cannot help, the configuration must change. Not an outage, so
 * sign-in answers 500 without Retry-After rather than 503.
 */
export function isClientRefusal(error: TokenSourceError): boolean {
  return (
    error.code === 'ERR_CLIENT_REFUSED' ||
    (error.oauthError === undefined && (error.status === 401 || error.status === 403))
  )
}

function unavailable(reason: SignInRefusalReason, cause: unknown): SignInError {
  return new SignInError('ERR_SIGNIN_UNAVAILABLE', reason, cause)
}

/** Which check refused a callback, for the event (openid-client's message names the parameter). */
function checkReason(error: unknown): SignInRefusalReason {
  // openid-client rethrows oauth4webapi's error as the cause of a generic one.
  const cause = error instanceof Error ? error.cause : undefined
  const message =
    cause instanceof Error ? cause.message : error instanceof Error ? error.message : ''
  if (message.includes('"state"')) return 'state'
  if (message.includes('"iss"')) return 'issuer'
  if (message.includes('"nonce"')) return 'nonce'
  if (message.includes('"auth_time"') || message.includes('End-User authentication')) {
    return 'auth_time'
  }
  return 'id_token'
}
