/**
 * The sign-in error family: every refusal of a sign-in route, and every failure to hand a handler
 * an access token, is a {@link SignInError} with a stable `code`, the HTTP `status` it is answered
 * with and `expose`, shaped like `http-errors`. Messages come from a fixed table: never a code, a
 * token, a cookie, a key or a provider's message.
 *
 * @module
 */
import type { LogoutRefusalReason } from '../events.js'

/** Stable machine-readable codes; part of the semver contract. */
export type SignInErrorCode =
  /** No session, or the session ended (expired, signed out, refresh refused, unreadable). 401. */
  | 'ERR_SIGNIN_REQUIRED'
  /** The callback does not belong to a sign-in this browser started (state, cookie, issuer, nonce). 400. */
  | 'ERR_SIGNIN_CALLBACK_INVALID'
  /** The provider refused the code (replayed, expired, PKCE mismatch) or the user declined. 400. */
  | 'ERR_SIGNIN_REFUSED'
  /** The provider, the session store or the key ring cannot be reached or read. 503. */
  | 'ERR_SIGNIN_UNAVAILABLE'
  /** A request a sign-in route does not take (wrong method, a cross-site logout, a product the options do not name). 400/405. */
  | 'ERR_SIGNIN_BAD_REQUEST'
  /** A back-channel logout token that does not pass verification. 400. */
  | 'ERR_LOGOUT_TOKEN_INVALID'
  /**
   * The provider refused this client at the token endpoint (`invalid_client`,
   * `unauthorized_client`, a bare 401 or 403), refused a product's scope or resource at a refresh
   * (`invalid_scope`, `invalid_target`), or signed the ID token with an algorithm
   * `idTokenAlgorithms` does not list: a configuration error, not an outage. 500.
   */
  | 'ERR_CLIENT_REFUSED'

const TABLE: Record<SignInErrorCode, { status: number; error: string; message: string }> = {
  ERR_SIGNIN_REQUIRED: { status: 401, error: 'login_required', message: 'sign-in required' },
  ERR_SIGNIN_CALLBACK_INVALID: {
    status: 400,
    error: 'invalid_request',
    message: 'the sign-in response does not match a sign-in started here',
  },
  ERR_SIGNIN_REFUSED: {
    status: 400,
    error: 'access_denied',
    message: 'the identity provider did not complete the sign-in',
  },
  ERR_SIGNIN_UNAVAILABLE: {
    status: 503,
    error: 'temporarily_unavailable',
    message: 'sign-in is temporarily unavailable',
  },
  ERR_SIGNIN_BAD_REQUEST: {
    status: 400,
    error: 'invalid_request',
    message: 'request not supported here',
  },
  ERR_LOGOUT_TOKEN_INVALID: {
    status: 400,
    error: 'invalid_request',
    message: 'invalid logout token',
  },
  ERR_CLIENT_REFUSED: {
    status: 500,
    error: 'server_error',
    message: 'sign-in is not configured correctly',
  },
}

/**
 * Refusals whose message says what was refused, in place of their code's: the user (and the
 * operator reading the answer) learns that the provider's answer failed a check, not that the
 * browser brought a callback from elsewhere. Fixed words, never the provider's.
 */
const REASON_MESSAGES: Partial<Record<SignInRefusalReason, string>> = {
  auth_time:
    'the identity provider did not report a sign-in within the max_age asked for (auth_time)',
  id_token_unsigned: 'the identity provider sent an unsigned ID token (alg none)',
  id_token_algorithm_unsupported:
    'the identity provider signed the ID token with an algorithm sign-in does not support',
}

/** Why a sign-in request was refused, for operators: on events, never in the response. */
export type SignInRefusalReason =
  | 'no_session'
  | 'session_expired'
  | 'session_unreadable'
  | 'session_key_unknown'
  | 'refresh_refused'
  | 'transaction_missing'
  /** No sign-in this browser started has the callback's `state` (tollgate's own lookup). */
  | 'state_unknown'
  /** openid-client's check of the callback's `state` refused it. */
  | 'state'
  | 'issuer'
  | 'nonce'
  | 'id_token'
  | 'code_refused'
  /** A step-up sign-in's ID token has an `acr` the sign-in did not ask for (RFC 9470). */
  | 'acr'
  /**
   * A step-up's ID token has an `auth_time` that is missing, older than its `max_age` allows (plus
   * `clockToleranceSeconds`), or later than now or than the ID token's `iat` (beyond it).
   */
  | 'auth_time'
  /** The ID token is unsigned (`alg: none`): no `idTokenAlgorithms` can accept it. */
  | 'id_token_unsigned'
  /** The ID token's `alg` is one no `idTokenAlgorithms` can list (not a JWS algorithm sign-in knows). */
  | 'id_token_algorithm_unsupported'
  /** The login route's `acrValues` or `maxAge` is not valid. */
  | 'step_up_request'
  | 'provider_error'
  | 'client_refused'
  /** The token endpoint refused a product's scope or resource at a refresh (`invalid_scope`, `invalid_target`). */
  | 'product_refused'
  /** The provider signed the ID token with an algorithm `idTokenAlgorithms` does not list. */
  | 'id_token_algorithm'
  | 'provider_unavailable'
  | 'store_unavailable'
  | 'refresh_lock_lost'
  | 'keys_unavailable'
  | 'method'
  | 'cross_site'
  | 'unknown_product'
  | 'logout_token'
  /** A front-channel logout request without exactly one `sid`, or with more than one `iss`. */
  | 'front_channel_request'
  /** A front-channel logout request whose `iss` is not this sign-in's issuer. */
  | 'front_channel_issuer'
  /** A logout token refused by a check of its own (`logout_token_signature`, `logout_token_missing_exp`…). */
  | `logout_token_${LogoutRefusalReason}`

/**
 * What the provider said when it sent `error=…` back to the redirect URI (RFC 6749 §4.1.2.1):
 * its own words, not a secret, bounded and without control characters.
 */
export interface ProviderErrorWords {
  /** `error`, at most 64 characters. */
  readonly error: string
  /** `error_description`, at most 256 characters. */
  readonly description: string | undefined
}

/** A refusal of a sign-in route, or a token a handler could not have. */
export class SignInError extends Error {
  readonly code: SignInErrorCode
  readonly status: number
  readonly statusCode: number
  /** `true`: the message is safe to show (it is from a fixed table). */
  readonly expose = true
  /** RFC 6749 word for the JSON body (`login_required`, `invalid_request`…). */
  readonly error: string
  /** For operators; not in the response. */
  readonly reason: SignInRefusalReason
  readonly headers: Readonly<Record<string, string>>
  /** The provider's `error` and `error_description` (`reason: 'provider_error'`); not in the response. */
  readonly provider: ProviderErrorWords | undefined

  constructor(
    code: SignInErrorCode,
    reason: SignInRefusalReason,
    cause?: unknown,
    provider?: ProviderErrorWords,
  ) {
    const entry = TABLE[code]
    const message =
      (code === 'ERR_SIGNIN_CALLBACK_INVALID' && REASON_MESSAGES[reason]) || entry.message
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'SignInError'
    this.code = code
    this.reason = reason
    this.status = code === 'ERR_SIGNIN_BAD_REQUEST' && reason === 'method' ? 405 : entry.status
    this.statusCode = this.status
    this.error = entry.error
    this.headers = this.status === 503 ? { 'Retry-After': '5' } : {}
    this.provider = provider
  }
}

/** `true` for a {@link SignInError}, also one from another copy of the package. */
export function isSignInError(value: unknown): value is SignInError {
  if (value instanceof SignInError) return true
  return (
    value instanceof Error &&
    value.name === 'SignInError' &&
    typeof (value as { code?: unknown }).code === 'string' &&
    (value as unknown as { code: string }).code in TABLE
  )
}
