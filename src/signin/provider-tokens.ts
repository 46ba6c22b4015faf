/**
 * What sign-in sends to and takes from the token endpoint: the product's parameters as a request
 * body, and the provider's answer as {@link ProviderTokens}.
 *
 * @module
 */
import type * as oidc from 'openid-client'

import type { NormalizedParameters } from '../client/parameters.js'
import { SignInError } from './errors.js'

/** What the provider answered to a code or a refresh token. */
export interface ProviderTokens {
  readonly accessToken: string
  readonly expiresInSeconds: number
  readonly refreshToken: string | undefined
  readonly idToken: string | undefined
  /** The validated ID token's claims (code exchange only). */
  readonly claims: Readonly<Record<string, unknown>> | undefined
}

const ASSUMED_LIFETIME_SECONDS = 60

/** The answer of the token endpoint, checked as the token source checks it. */
export function tokensOf(
  response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers,
  withClaims: boolean,
): ProviderTokens {
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

/** The product's scope, resources and audience, as token request parameters. */
export function productBody(product: NormalizedParameters | undefined): URLSearchParams {
  const body = new URLSearchParams()
  if (product === undefined) return body
  if (product.scope !== undefined) body.set('scope', product.scope)
  for (const resource of product.resource) body.append('resource', resource)
  if (product.audience !== undefined) body.set('audience', product.audience)
  return body
}
