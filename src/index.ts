/**
 * tollgate: bearer-token gate for APIs. Verifies JWT access tokens against each trusted issuer's
 * JWKS, checks claims, resolves the tenant and applies per-tenant rate limits. Framework-neutral
 * core; `tollgate/express`, `tollgate/koa`, `tollgate/fastify`, `tollgate/hono`, `tollgate/nestjs` and
 * `tollgate/fetch` put it in front of routes, `tollgate/testing` tests it. Re-exports only.
 *
 * @module
 */

export type { CredentialScheme } from './challenge.js'
export type {
  DpopMode,
  DpopNonceOptions,
  DpopOptions,
  DpopRedisClientLike,
  DpopReplayOptions,
} from './dpop/options.js'
export type {
  AnyTollgateError,
  DpopErrorCode,
  ErrorBodyCode,
  ErrorOptions,
  ErrorResponse,
  InvalidTokenCode,
  RefusalReason,
  TollgateErrorCode,
  UnavailableCode,
} from './errors.js'
export {
  bearerChallenge,
  CostExceedsLimitError,
  DpopNonceError,
  InsufficientScopeError,
  InvalidDpopProofError,
  InvalidRequestError,
  InvalidTokenError,
  isTollgateError,
  RateLimitedError,
  renderError,
  ServiceUnavailableError,
  TenantRefusedError,
  TokenExpiredError,
  TokenMissingError,
  TollgateError,
} from './errors.js'
export type {
  DecisionFacts,
  GateEvent,
  GateEventListener,
  JWKSFailureReason,
  RevocationEvent,
  RevocationSource,
  RevocationStorage,
} from './events.js'
export type { Gate, ReadyReport } from './gate/gate.js'
export { createGate } from './gate/gate.js'
export type { Guard, GuardMiddlewareFactories } from './gate/guards.js'
export {
  requireAnyScope,
  requireClientRoles,
  requireRealmRoles,
  requireScopes,
} from './gate/guards.js'
export type { CacheOptions, GateOptions, JWKSOptions } from './gate/options.js'
export type { RevocationHandles } from './gate/revocation-handles.js'
export type {
  FlexibleLimiterFactory,
  FlexibleLimiterLike,
  FlexibleWindow,
} from './limits/flexible.js'
export type {
  LimiterStoreErrorCode,
  RateLimitCost,
  RateLimitHeaderMode,
  RateLimitOptions,
  RateLimitWindow,
  RedisClientLike,
  StoreFailurePolicy,
} from './limits/rate-limit.js'
export { LimiterStoreError } from './limits/rate-limit.js'
export type {
  ResolvedTenant,
  TenantDecision,
  TenantFunction,
  TenantOptions,
  TenantPolicy,
} from './limits/tenant.js'
export type { ResourceMetadataOptions } from './metadata/resource-metadata.js'
export {
  type Auth0Options,
  auth0,
  type CognitoOptions,
  cognito,
  type EntraOptions,
  entra,
  type OktaOptions,
  okta,
} from './providers/index.js'
export type {
  CallbackEndpoints,
  CallbackRequest,
  CallbackResponse,
} from './revocation/callbacks.js'
export type { RevocationKind } from './revocation/list.js'
export type { LogoutRefusalReason } from './revocation/logout-token.js'
export type {
  RevocationCallbackOptions,
  RevocationLoader,
  RevocationOptions,
  RevocationRedisClient,
  RevocationStoreFailurePolicy,
  RevocationUnsyncedPolicy,
} from './revocation/options.js'
export type { RevocationReceipt, RevocationTarget, RevokeOptions } from './revocation/revocation.js'
export type { SharedStore } from './shared-store.js'
export type { JWSAlgorithm } from './token/algorithms.js'
export type { ClaimMapping } from './token/claims.js'
export type { IssuerOptions, KeycloakOptions } from './token/issuers.js'
export { keycloak } from './token/issuers.js'
export type { IssuerKeysStatus } from './token/jwks.js'
export type { VerifiedToken } from './token/verify.js'
export type {
  Admission,
  CheckResult,
  HeadersLike,
  RequestLike,
  TokenClaims,
  TokenHeader,
  TokenRoles,
} from './types.js'
