/**
 * `tollgate/client`: the client side of the spec. Access tokens for backend integrations (Client
 * Credentials, or a refresh token) from the provider's token endpoint, cached, renewed before they
 * expire, one request per set of parameters, optionally shared by a fleet through Redis; secrets
 * kept out of code; and a `fetch` that sends the token. Protocol work is openid-client's.
 *
 * @module
 */
export type { IssuerOptions, KeycloakOptions } from '../token/issuers.js'
// The gate's helper, so a source is configured the same way: keycloak({ authUrl, realm }).
export { keycloak } from '../token/issuers.js'
export type { AuthorizedFetchOptions } from './authorized-fetch.js'
export { createAuthorizedFetch } from './authorized-fetch.js'
export type { TokenSourceErrorCode } from './errors.js'
export { isTokenSourceError, TokenSourceError } from './errors.js'
export type {
  GrantType,
  TokenRequestFacts,
  TokenSourceEvent,
  TokenSourceEventListener,
} from './events.js'
export type {
  ClientAuthMethod,
  PrivateKeyInput,
  RenewalOptions,
  RetryOptions,
  SharedCacheOptions,
  TokenSourceOptions,
} from './options.js'
export type { TokenParameters } from './parameters.js'
export type { EnvReference, SecretInput } from './secrets.js'
export { fromEnv } from './secrets.js'
export type { StepUpReason } from './step-up.js'
export { isStepUpRequired, StepUpRequiredError, stepUpChallengeOf } from './step-up.js'
export type { TokenExchange } from './token-exchange.js'
export { createTokenExchange } from './token-exchange.js'
export type {
  ExchangeFacts,
  ExchangeProfile,
  ExchangeTarget,
  TokenExchangeEvent,
  TokenExchangeOptions,
} from './token-exchange-options.js'
export type { TokenSource } from './token-source.js'
export { createTokenSource } from './token-source.js'
