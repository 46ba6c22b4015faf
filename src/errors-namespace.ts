/**
 * The `errors` namespace of `tollgate`, as jose has one: every error class a refusal or a limiter
 * store failure is (`error instanceof errors.TokenExpiredError`), and the types of their codes and
 * reasons (`errors.TollgateErrorCode`). Branching on `code` after `isTollgateError(error)` needs
 * none of them; the base class `TollgateError`, `isTollgateError` and `renderError` are also
 * exported by name from `tollgate`, since the guides import them so. Re-exports only.
 *
 * @module
 */
export type {
  AnyTollgateError,
  DpopErrorCode,
  ErrorBodyCode,
  ErrorOptions,
  InvalidTokenCode,
  McpErrorCode,
  RefusalReason,
  TollgateErrorCode,
  UnavailableCode,
} from './errors.js'
export {
  ActorRefusedError,
  CostExceedsLimitError,
  DpopNonceError,
  InsufficientScopeError,
  InsufficientUserAuthenticationError,
  InvalidDpopProofError,
  InvalidRequestError,
  InvalidTokenError,
  McpRequestError,
  RateLimitedError,
  ServiceUnavailableError,
  TenantRefusedError,
  TokenExpiredError,
  TokenMissingError,
  TollgateError,
} from './errors.js'
export { LimiterStoreError, type LimiterStoreErrorCode } from './limits/rate-limit.js'
