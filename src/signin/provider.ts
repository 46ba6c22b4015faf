/**
 * The provider's side of sign-in, through openid-client: the authorization URL (PKCE S256, state,
 * nonce), the code exchange with its checks (state, RFC 9207 `iss`, ID token claims and signature,
 * nonce), refresh with a resource indicator, and the end-session URL. Client authentication and
 * the mapping of openid-client's failures are the token source's (`client/endpoint.ts`). The
 * parts: `provider-config.ts` (the metadata and keys, its state), `provider-grants.ts` (code
 * exchange and refresh), `provider-tokens.ts` (request body and answer), `provider-refusals.ts`
 * (failures as sign-in refusals).
 *
 * @module
 */
import * as oidc from 'openid-client'

import type { NormalizedTokenSourceOptions } from '../client/options.js'
import type { NormalizedParameters } from '../client/parameters.js'
import type { IdTokenAlgorithms, IdTokenContext } from './id-token.js'
import { ProviderConfiguration } from './provider-config.js'
import {
  type CallbackChecks,
  exchangeCode,
  type GrantParts,
  refreshGrant,
} from './provider-grants.js'
import { asSignInError } from './provider-refusals.js'
import type { ProviderTokens } from './provider-tokens.js'

export type { CallbackChecks } from './provider-grants.js'
export { isClientRefusal, providerWords } from './provider-refusals.js'
export type { ProviderTokens } from './provider-tokens.js'

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

/**
 * Builds the provider glue from the validated client options; `clockToleranceSeconds` is the
 * sign-in's, for the ID token's times (`exp`, `iat`, `auth_time` against `max_age`).
 */
export function createSignInProvider(
  client: NormalizedTokenSourceOptions,
  idToken: IdTokenAlgorithms,
  clockToleranceSeconds: number,
): SignInProvider {
  const { server, clientId } = client
  const issuer = server.issuer
  const idTokenContext: IdTokenContext = {
    clientId,
    issuer,
    credential: client.credential,
    idToken,
  }
  const provider = new ProviderConfiguration(client, idToken, clockToleranceSeconds)
  const parts: GrantParts = { client, idTokenContext, provider }

  return {
    issuer,
    async authorizationUrl(parameters) {
      let config: oidc.Configuration
      try {
        config = await provider.configuration()
      } catch (error) {
        throw asSignInError(client, error)
      }
      return oidc.buildAuthorizationUrl(config, parameters)
    },
    exchangeCode: (callbackUrl, checks, product) =>
      exchangeCode(parts, callbackUrl, checks, product),
    refresh: (refreshToken, product) => refreshGrant(parts, refreshToken, product),
    async jwksUri() {
      try {
        return (await provider.serverMetadata()).jwks_uri
      } catch (error) {
        throw asSignInError(client, error)
      }
    },
    async logoutPageOrigins() {
      const origins = [new URL(issuer).origin]
      const endSession = await provider.serverMetadata().then(
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
        config = await provider.configuration()
      } catch {
        return undefined
      }
      if (config.serverMetadata().end_session_endpoint === undefined) return undefined
      return oidc.buildEndSessionUrl(config, parameters)
    },
  }
}
