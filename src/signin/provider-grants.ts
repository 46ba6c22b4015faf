/**
 * The two grants of sign-in at the token endpoint, through openid-client: the code exchange of a
 * callback (state, RFC 9207 `iss`, ID token claims and signature, nonce; HMAC signatures checked
 * after openid-client) and refresh with the product's resource indicator.
 *
 * @module
 */
import * as oidc from 'openid-client'

import { asRefreshRefusal, refusedAlgorithmOf } from '../client/endpoint.js'
import { TokenSourceError } from '../client/errors.js'
import type { NormalizedTokenSourceOptions } from '../client/options.js'
import type { NormalizedParameters } from '../client/parameters.js'
import { SignInError } from './errors.js'
import {
  algorithmRefusal,
  hmacRefusal,
  type IdTokenContext,
  isListableIdTokenAlgorithm,
  unusableIdToken,
  verifyHmac,
} from './id-token.js'
import type { ProviderConfiguration } from './provider-config.js'
import {
  asSignInError,
  callbackError,
  tokenEndpointError,
  unavailable,
} from './provider-refusals.js'
import { type ProviderTokens, productBody, tokensOf } from './provider-tokens.js'

/** What the callback checks against. */
export interface CallbackChecks {
  readonly state: string
  readonly nonce: string
  readonly codeVerifier: string
  /** A step-up's `max_age`: openid-client then requires `auth_time`, at most this old. */
  readonly maxAge?: number | undefined
}

/** What the grants use of their provider. */
export interface GrantParts {
  readonly client: NormalizedTokenSourceOptions
  readonly idTokenContext: IdTokenContext
  readonly provider: ProviderConfiguration
}

/** The code exchange of a callback, with its checks; the ID token's claims come with the tokens. */
export async function exchangeCode(
  parts: GrantParts,
  callbackUrl: URL,
  checks: CallbackChecks,
  product: NormalizedParameters | undefined,
): Promise<ProviderTokens> {
  const { client, idTokenContext, provider } = parts
  let response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers
  try {
    const config = await provider.configuration()
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
      provider.keepKeys(config)
    }
  } catch (error) {
    throw callbackError(client, idTokenContext, error)
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
  if (tokens.claims === undefined) throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'id_token')
  return tokens
}

/**
 * A refresh token grant.
 *
 * @throws TokenSourceError from the token endpoint: `ERR_REFRESH_TOKEN_REFUSED` when the provider
 * refused the refresh token for good.
 */
export async function refreshGrant(
  parts: GrantParts,
  refreshToken: string,
  product: NormalizedParameters | undefined,
): Promise<ProviderTokens> {
  const { client, idTokenContext, provider } = parts
  let config: oidc.Configuration
  try {
    config = await provider.configuration()
  } catch (error) {
    throw asSignInError(client, error)
  }
  let response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers
  try {
    response = await oidc.refreshTokenGrant(config, refreshToken, productBody(product))
  } catch (error) {
    const algorithm = refusedAlgorithmOf(error)
    if (algorithm !== undefined) {
      if (!isListableIdTokenAlgorithm(algorithm)) {
        throw unusableIdToken(idTokenContext, error, algorithm)
      }
      throw algorithmRefusal(idTokenContext, error, algorithm)
    }
    throw asRefreshRefusal(tokenEndpointError(client, error))
  } finally {
    provider.keepKeys(config)
  }
  try {
    await verifyHmac(idTokenContext, response.id_token)
  } catch (error) {
    // As a refreshed ID token whose RS256 signature fails: an answer not to use (503).
    throw hmacRefusal(idTokenContext, error)
  }
  return tokensOf(response, false)
}
