/**
 * How the provider's failures become sign-in refusals: a failed callback by phase, then by
 * openid-client's code; any other failure as the provider being unavailable, or refusing this
 * client.
 *
 * @module
 */
import * as oidc from 'openid-client'

import { openidClientCause, refusedAlgorithmOf, toTokenSourceError } from '../client/endpoint.js'
import type { TokenSourceError } from '../client/errors.js'
import type { NormalizedTokenSourceOptions } from '../client/options.js'
import { SignInError, type SignInRefusalReason } from './errors.js'
import { algorithmRefusal, type IdTokenContext, isListableIdTokenAlgorithm } from './id-token.js'

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

export function unavailable(reason: SignInRefusalReason, cause: unknown): SignInError {
  return new SignInError('ERR_SIGNIN_UNAVAILABLE', reason, cause)
}

/** A failure of the token endpoint, as the token source names it. */
export function tokenEndpointError(
  client: NormalizedTokenSourceOptions,
  error: unknown,
): TokenSourceError {
  const { clientId, server } = client
  return toTokenSourceError(
    error,
    { clientId, issuer: server.issuer },
    client.credentialSource,
    'token',
    client.clientAuth,
  )
}

/** A failure before the provider answered a callback or a refresh: it is unavailable. */
export function asSignInError(client: NormalizedTokenSourceOptions, error: unknown): SignInError {
  if (error instanceof SignInError) return error
  return unavailable('provider_unavailable', tokenEndpointError(client, error))
}

/** One place where a failed callback becomes a refusal: by phase, then by openid-client's code. */
export function callbackError(
  client: NormalizedTokenSourceOptions,
  idTokenContext: IdTokenContext,
  error: unknown,
): SignInError {
  if (error instanceof SignInError) return error
  const algorithm = refusedAlgorithmOf(error)
  if (algorithm !== undefined) {
    // `none`, or a name no JWS library signs with: no idTokenAlgorithms can accept it, so the
    // answer (a hostile or broken provider's) is refused as a bad callback, not as a
    // configuration to fix.
    if (!isListableIdTokenAlgorithm(algorithm)) {
      return new SignInError(
        'ERR_SIGNIN_CALLBACK_INVALID',
        algorithm === 'none' ? 'id_token_unsigned' : 'id_token_algorithm_unsupported',
        openidClientCause(error),
      )
    }
    return algorithmRefusal(idTokenContext, error, algorithm)
  }
  if (error instanceof oidc.AuthorizationResponseError) {
    // The provider sent error=… to the redirect URI (the user declined, or a bad request).
    return new SignInError('ERR_SIGNIN_REFUSED', 'provider_error', undefined, {
      error: providerWords(error.error, 64) ?? '',
      description: providerWords(error.error_description, 256),
    })
  }
  const reason = checkReason(error)
  const mapped = tokenEndpointError(client, error)
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
