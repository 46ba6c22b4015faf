/**
 * The token source's error family: every failure to obtain a token is a {@link TokenSourceError}
 * with a stable `code` and `retryable`, which says whether asking again later can succeed. Messages
 * name the client, the issuer and where a secret came from; never a secret, a token or a response
 * body.
 *
 * @module
 */

/** Stable machine-readable codes; part of the semver contract. */
export type TokenSourceErrorCode =
  /** The provider refused the client itself (`invalid_client`, `unauthorized_client`). Not retryable. */
  | 'ERR_CLIENT_REFUSED'
  /** The provider refused the request (`invalid_scope`, `invalid_target`, a client_credentials `invalid_grant`…). Not retryable. */
  | 'ERR_TOKEN_REQUEST_REFUSED'
  /**
   * The provider refused the refresh token for good (`invalid_grant`, or another OAuth error such
   * as `invalid_request` for a deleted one, or a bare 400): its grant has ended, and only a new
   * authorization by the user gives a new one. Not retryable, and never sent again.
   */
  | 'ERR_REFRESH_TOKEN_REFUSED'
  /** Network failure, timeout, 429 or 5xx, `temporarily_unavailable`. Retryable. */
  | 'ERR_TOKEN_ENDPOINT_UNAVAILABLE'
  /** A response that is not a token response (or discovery document) tollgate can use. Not retryable. */
  | 'ERR_TOKEN_RESPONSE_INVALID'
  /** A secret could not be read (unset variable, failing secrets manager). */
  | 'ERR_SECRET_UNAVAILABLE'
  /** The source was closed. Not retryable. */
  | 'ERR_TOKEN_SOURCE_CLOSED'
  /**
   * Token exchange (RFC 8693): the provider refused the subject token (`invalid_grant`: expired,
   * revoked, issued by another issuer, for another audience, or not allowed to be acted for), or
   * it expired before the exchange. Not retryable: only a new subject token can succeed.
   */
  | 'ERR_SUBJECT_TOKEN_REFUSED'
  /**
   * Token exchange: the subject token cannot be exchanged by this party at all: it is bound to a
   * key (DPoP `cnf`) the exchanger does not hold, or no exchanger is configured. Not retryable.
   */
  | 'ERR_EXCHANGE_NOT_POSSIBLE'

/** What {@link TokenSourceError} is built from. */
export interface TokenSourceErrorInit {
  readonly code: TokenSourceErrorCode
  readonly message: string
  readonly retryable: boolean
  readonly clientId: string
  readonly issuer: string
  /** The provider's OAuth `error` code (RFC 6749 §5.2), when it sent one. */
  readonly oauthError?: string | undefined
  /** The HTTP status of the provider's answer, when there was one. */
  readonly status?: number | undefined
  /**
   * The provider's `error_description`, when it sent one: its own words, printable ASCII, at most
   * 200 characters (RFC 6749 §5.2). Not in `message`.
   */
  readonly oauthErrorDescription?: string | undefined
  /** Where the secret or key came from (`fromEnv('NAME')`, `the "clientSecret" option`…). */
  readonly secretSource?: string | undefined
  /** Seconds before a new attempt is made, when known. */
  readonly retryAfterSeconds?: number | undefined
  /** The network failure underneath, for operators. Never a response holding a token. */
  readonly cause?: unknown
}

/** Why a token could not be obtained. */
export class TokenSourceError extends Error {
  /** Stable machine code. */
  readonly code: TokenSourceErrorCode
  /** `true` when the same request may succeed later (network, 5xx, 429); `false` for configuration problems. */
  readonly retryable: boolean
  readonly clientId: string
  readonly issuer: string
  readonly oauthError: string | undefined
  /** The provider's `error_description` (RFC 6749 §5.2), printable ASCII, at most 200 characters. */
  readonly oauthErrorDescription: string | undefined
  readonly status: number | undefined
  readonly secretSource: string | undefined
  /** Seconds before the source asks the provider again; a `get()` before then fails at once. */
  retryAfterSeconds: number | undefined

  constructor(init: TokenSourceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.name = 'TokenSourceError'
    this.code = init.code
    this.retryable = init.retryable
    this.clientId = init.clientId
    this.issuer = init.issuer
    this.oauthError = init.oauthError
    this.oauthErrorDescription = init.oauthErrorDescription
    this.status = init.status
    this.secretSource = init.secretSource
    this.retryAfterSeconds = init.retryAfterSeconds
  }
}

const CODES = new Set<string>([
  'ERR_CLIENT_REFUSED',
  'ERR_TOKEN_REQUEST_REFUSED',
  'ERR_REFRESH_TOKEN_REFUSED',
  'ERR_TOKEN_ENDPOINT_UNAVAILABLE',
  'ERR_TOKEN_RESPONSE_INVALID',
  'ERR_SECRET_UNAVAILABLE',
  'ERR_TOKEN_SOURCE_CLOSED',
  'ERR_SUBJECT_TOKEN_REFUSED',
  'ERR_EXCHANGE_NOT_POSSIBLE',
] satisfies TokenSourceErrorCode[])

/** `true` for a {@link TokenSourceError}, also one from another copy of the package (checked by shape). */
export function isTokenSourceError(value: unknown): value is TokenSourceError {
  if (value instanceof TokenSourceError) return true
  if (!(value instanceof Error)) return false
  const candidate = value as Partial<TokenSourceError>
  return (
    typeof candidate.code === 'string' &&
    CODES.has(candidate.code) &&
    typeof candidate.retryable === 'boolean'
  )
}
