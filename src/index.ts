/**
 * tollgate: bearer-token gate for APIs. Verifies JWT access tokens against each trusted issuer's
 * JWKS, checks claims, resolves the tenant and applies per-tenant rate limits. Framework-neutral
 * core; `tollgate/express` and `tollgate/koa` make it middleware, `tollgate/testing` tests it.
 *
 * @module
 */
export type { JWSAlgorithm } from './algorithms.js'
export type { CredentialScheme } from './challenge.js'
export type {
  DpopMode,
  DpopNonceOptions,
  DpopOptions,
  DpopRedisClientLike,
  DpopReplayOptions,
} from './dpop-options.js'
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
export type { DecisionFacts, GateEvent, GateEventListener, JWKSFailureReason } from './events.js'
export type { Gate, ReadyReport } from './gate.js'
export { createGate } from './gate.js'
export type { Guard, GuardMiddlewareFactories } from './guards.js'
export { requireAnyScope, requireClientRoles, requireRealmRoles, requireScopes } from './guards.js'
export type { IssuerOptions, KeycloakOptions } from './issuers.js'
export { keycloak } from './issuers.js'
export type { IssuerKeysStatus } from './jwks.js'
export type { LogoutRefusalReason } from './logout-token.js'
export type { CacheOptions, GateOptions, JWKSOptions } from './options.js'
export type {
  LimiterStoreErrorCode,
  RateLimitCost,
  RateLimitHeaderMode,
  RateLimitOptions,
  RateLimitWindow,
  RedisClientLike,
  StoreFailurePolicy,
} from './rate-limit.js'
export { LimiterStoreError } from './rate-limit.js'
export type { ResourceMetadataOptions } from './resource-metadata.js'
export type { RevocationReceipt, RevocationTarget, RevokeOptions } from './revocation.js'
export type {
  CallbackEndpoints,
  CallbackRequest,
  CallbackResponse,
} from './revocation-callbacks.js'
export type {
  RevocationEvent,
  RevocationSource,
  RevocationStorage,
} from './revocation-events.js'
export type { RevocationHandles } from './revocation-handles.js'
export type { RevocationKind } from './revocation-list.js'
export type {
  RevocationCallbackOptions,
  RevocationOptions,
  RevocationRedisClient,
  RevocationStoreFailurePolicy,
} from './revocation-options.js'
export type {
  ResolvedTenant,
  TenantDecision,
  TenantFunction,
  TenantOptions,
  TenantPolicy,
} from './tenant.js'
export type {
  Admission,
  CheckResult,
  HeadersLike,
  RequestLike,
  TokenClaims,
  TokenHeader,
  TokenRoles,
} from './types.js'
export type { VerifiedToken } from './verify.js'
