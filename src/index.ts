/**
 * tollgate: bearer-token gate for APIs. Verifies JWT access tokens against each trusted issuer's
 * JWKS, checks claims, resolves the tenant and applies per-tenant rate limits. Framework-neutral
 * core; `tollgate/express`, `tollgate/koa`, `tollgate/fastify`, `tollgate/hono`, `tollgate/nestjs` and
 * `tollgate/fetch` put it in front of routes (each exports its own names and the provider helpers;
 * everything else is here), `tollgate/testing` tests it. Re-exports only: the list is held by
 * test/adapters/exports.test.ts, so a name added here is a visible decision.
 *
 * @module
 */

export type { MtlsMode, MtlsOptions } from './binding/options.js'
export type {
  DpopMode,
  DpopNonceOptions,
  DpopOptions,
  DpopRedisClientLike,
  DpopReplayOptions,
} from './dpop/options.js'
export type { ErrorResponse } from './errors.js'
// By name beside the namespace: the guides catch the base class (`@Catch(TollgateError)`), branch
// with `isTollgateError` and answer with `renderError`.
export { isTollgateError, renderError, TollgateError } from './errors.js'
export * as errors from './errors-namespace.js'
export type {
  DecisionFacts,
  GateEvent,
  GateEventListener,
  IntrospectionFailureReason,
  JWKSFailureReason,
  RevocationEvent,
  RevocationSource,
  RevocationStorage,
} from './events.js'
export type { AllowedActor, DelegationOptions } from './gate/actors.js'
export type { Gate, ReadyReport } from './gate/gate.js'
export { createGate } from './gate/gate.js'
export type { Guard } from './gate/guards.js'
export {
  requireAnyScope,
  requireClientRoles,
  requireRealmRoles,
  requireScopes,
} from './gate/guards.js'
export type { CacheOptions, GateOptions, JWKSOptions } from './gate/options.js'
export { requireAcr, requireRecentSignIn } from './gate/step-up.js'
export type { IntrospectionStatus } from './introspection/introspector.js'
export type {
  IntrospectionBudgetOptions,
  IntrospectionCacheOptions,
  IntrospectionClientAuth,
  IntrospectionOptions,
  IssuerIntrospection,
  TokenCheck,
} from './introspection/options.js'
export type {
  FlexibleLimiterFactory,
  FlexibleLimiterLike,
  FlexibleWindow,
} from './limits/flexible.js'
export type {
  RateLimitCost,
  RateLimitHeaderMode,
  RateLimitOptions,
  RateLimitWindow,
  RedisClientLike,
  StoreFailurePolicy,
} from './limits/rate-limit.js'
export type {
  TenantDecision,
  TenantFunction,
  TenantOptions,
  TenantPolicy,
} from './limits/tenant.js'
export {
  createMcpPolicy,
  decodeMcpName,
  type McpAuthorized,
  type McpOperation,
  type McpPolicy,
  type McpPolicyOptions,
  type McpRateLimitOptions,
  type McpResourceRule,
  type McpRule,
  type McpToolRule,
  renderMcpError,
} from './mcp/index.js'
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
export type { CallbackRequest, CallbackResponse } from './revocation/callbacks.js'
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
export type { SignalEndpoint } from './signals/endpoint.js'
export type {
  SignalChange,
  SignalDelivery,
  SignalEvent,
  SignalRefusalReason,
} from './signals/events.js'
export type { SignalReceiverOptions, SignalRedisClient } from './signals/options.js'
export type { SignalPoller, SignalPollerOptions } from './signals/poll.js'
export { createSignalPoller } from './signals/poll.js'
export type { SetOutcome, SignalReceiver, SignalStreamState } from './signals/receiver.js'
export { createSignalReceiver } from './signals/receiver.js'
export type {
  SignalStreams,
  SignalStreamsOptions,
  StreamConfiguration,
  StreamDelivery,
} from './signals/stream.js'
export { createSignalStreams, StreamManagementError } from './signals/stream.js'
export type { SubjectClaims } from './signals/subject.js'
export type { SetErrorCode } from './signals/vocabulary.js'
export type { JWSAlgorithm } from './token/algorithms.js'
export type { ClaimMapping } from './token/claims.js'
export type { IssuerOptions, KeycloakOptions } from './token/issuers.js'
export { keycloak } from './token/issuers.js'
export type { IssuerKeysStatus } from './token/jwks.js'
export type { VerifiedToken } from './token/verify.js'
export type {
  Actor,
  Admission,
  CheckResult,
  HeadersLike,
  PeerSocket,
  RequestLike,
  TokenClaims,
  TokenForTarget,
  TokenHeader,
  TokenRoles,
} from './types.js'
