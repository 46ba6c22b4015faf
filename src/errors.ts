/**
 * The request-time error family. Every refusal tollgate makes is a {@link TollgateError} with a
 * stable `code`, the HTTP `status`, the exact response `headers` (RFC 6750 `WWW-Authenticate`,
 * RFC 9110 `Retry-After`) and `expose`, shaped like `http-errors` so Express's finalhandler and
 * Koa's `ctx.onerror` render it correctly when the application handles errors itself.
 *
 * Messages come from fixed tables: they never contain a token, a claim value, a URL or a
 * dependency's message. The dependency's error, when there is one, is kept as `cause` for operators.
 *
 * @module
 */

/** Stable machine-readable codes; part of the semver contract. */
export type TollgateErrorCode =
  | 'ERR_TOKEN_MISSING'
  | 'ERR_INVALID_REQUEST'
  | 'ERR_TOKEN_INVALID'
  | 'ERR_TOKEN_EXPIRED'
  | 'ERR_TENANT_INVALID'
  | 'ERR_TENANT_UNKNOWN'
  | 'ERR_TENANT_REFUSED'
  | 'ERR_INSUFFICIENT_SCOPE'
  | 'ERR_RATE_LIMITED'
  | 'ERR_JWKS_UNAVAILABLE'
  | 'ERR_LIMITER_UNAVAILABLE'

/** The `error` member of the JSON body: RFC 6750 §3.1 words, then RFC 6749 / RFC 6585 ones. */
export type ErrorBodyCode =
  | 'unauthorized'
  | 'invalid_request'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'access_denied'
  | 'rate_limited'
  | 'temporarily_unavailable'

type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope'

// RFC 6750 §3 (through RFC 6749 §5.2): quoted values may only use %x20-21 / %x23-5B / %x5D-7E.
// Applied to realm and scope too: they come from configuration, but a quote or backslash in them
// would let one header value be read as two parameters.
const OUTSIDE_CHALLENGE_CHARSET = /[^\x20\x21\x23-\x5B\x5D-\x7E]/g

/**
 * Builds an RFC 6750 §3 `WWW-Authenticate` value. Characters outside the charset RFC 6750 allows
 * inside quoted values are removed, never escaped.
 */
export function bearerChallenge(
  realm: string,
  error?: BearerErrorCode,
  description?: string,
  scope?: string,
): string {
  let value = `Bearer realm="${realm.replace(OUTSIDE_CHALLENGE_CHARSET, '')}"`
  if (error) value += `, error="${error}"`
  if (description) {
    value += `, error_description="${description.replace(OUTSIDE_CHALLENGE_CHARSET, '')}"`
  }
  if (scope) value += `, scope="${scope.replace(OUTSIDE_CHALLENGE_CHARSET, '')}"`
  return value
}

/** Options shared by the error constructors. */
export interface ErrorContext {
  /** The `realm` of the `WWW-Authenticate` challenge. */
  realm: string
  /** The underlying failure, for operators. Never shown to clients. */
  cause?: unknown
}

/**
 * Base of every error tollgate raises while handling a request. Fields are plain and writable on
 * purpose: Koa assigns `err.status` while rendering.
 */
export class TollgateError extends Error {
  /** Stable machine code. */
  code: TollgateErrorCode
  /** HTTP status to answer with. */
  status: number
  /** Same as `status`, for handlers that read `statusCode` (finalhandler). */
  statusCode: number
  /** `true` below 500: the message is safe to show to the client (http-errors convention). */
  expose: boolean
  /** Exactly the response headers this error requires. */
  headers: Record<string, string>
  /** The `error` member of the JSON body. */
  readonly error: ErrorBodyCode

  constructor(
    code: TollgateErrorCode,
    status: number,
    error: ErrorBodyCode,
    message: string,
    headers: Record<string, string>,
    cause?: unknown,
  ) {
    // Refusals are expected outcomes, not bugs: no stack trace. Capturing one cost 5.9 µs per
    // refused request here (0.5 µs without), more than answering a cached token. `cause` keeps
    // the dependency's own error, with its stack, for operators.
    const stackTraceLimit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message, cause === undefined ? undefined : { cause })
    Error.stackTraceLimit = stackTraceLimit
    this.name = new.target.name
    this.code = code
    this.status = status
    this.statusCode = status
    this.expose = status < 500
    this.headers = headers
    this.error = error
  }
}

/** 401 without an error code: no credentials, or a scheme other than Bearer (RFC 6750 §3.1). */
export class TokenMissingError extends TollgateError {
  constructor(context: ErrorContext) {
    super(
      'ERR_TOKEN_MISSING',
      401,
      'unauthorized',
      'bearer token required',
      { 'WWW-Authenticate': bearerChallenge(context.realm) },
      context.cause,
    )
  }
}

/** 400 `invalid_request`: a malformed Authorization header, or a token sent more than one way. */
export class InvalidRequestError extends TollgateError {
  constructor(description: string, context: ErrorContext) {
    super(
      'ERR_INVALID_REQUEST',
      400,
      'invalid_request',
      description,
      { 'WWW-Authenticate': bearerChallenge(context.realm, 'invalid_request', description) },
      context.cause,
    )
  }
}

type InvalidTokenCode =
  | 'ERR_TOKEN_INVALID'
  | 'ERR_TOKEN_EXPIRED'
  | 'ERR_TENANT_INVALID'
  | 'ERR_TENANT_UNKNOWN'

/** 401 `invalid_token`: any problem with the token itself, or with the tenant it names. */
export class InvalidTokenError extends TollgateError {
  constructor(description: string, context: ErrorContext & { code?: InvalidTokenCode }) {
    super(
      context.code ?? 'ERR_TOKEN_INVALID',
      401,
      'invalid_token',
      description,
      { 'WWW-Authenticate': bearerChallenge(context.realm, 'invalid_token', description) },
      context.cause,
    )
  }
}

/** 401 `invalid_token` for a token whose `exp` has passed. A kind of {@link InvalidTokenError}. */
export class TokenExpiredError extends InvalidTokenError {
  constructor(context: ErrorContext) {
    super('token expired', { ...context, code: 'ERR_TOKEN_EXPIRED' })
  }
}

/** 403 `insufficient_scope`: a valid token without the scope or role the route requires. */
export class InsufficientScopeError extends TollgateError {
  /** What the route requires, space-separated, as sent in the challenge's `scope`. */
  readonly requiredScope: string

  constructor(requiredScope: string, context: ErrorContext) {
    const description = 'insufficient scope'
    super(
      'ERR_INSUFFICIENT_SCOPE',
      403,
      'insufficient_scope',
      description,
      {
        'WWW-Authenticate': bearerChallenge(
          context.realm,
          'insufficient_scope',
          description,
          requiredScope,
        ),
      },
      context.cause,
    )
    this.requiredScope = requiredScope
  }
}

/** 403 `access_denied`: the deployment refuses this tenant (for example, suspended). */
export class TenantRefusedError extends TollgateError {
  constructor(context: ErrorContext) {
    super('ERR_TENANT_REFUSED', 403, 'access_denied', 'tenant refused', {}, context.cause)
  }
}

/** 429: the tenant has used its points in at least one window. */
export class RateLimitedError extends TollgateError {
  /** Seconds until the tenant may try again (also in `Retry-After`). */
  readonly retryAfterSeconds: number

  constructor(retryAfterSeconds: number, headers: Record<string, string> = {}) {
    const retryAfter = Math.max(1, Math.ceil(retryAfterSeconds))
    super('ERR_RATE_LIMITED', 429, 'rate_limited', 'rate limit exceeded', {
      ...headers,
      'Retry-After': String(retryAfter),
    })
    this.retryAfterSeconds = retryAfter
  }
}

type UnavailableCode = 'ERR_JWKS_UNAVAILABLE' | 'ERR_LIMITER_UNAVAILABLE'

const UNAVAILABLE_MESSAGES: Record<UnavailableCode, string> = {
  ERR_JWKS_UNAVAILABLE: 'signing keys unavailable',
  ERR_LIMITER_UNAVAILABLE: 'rate limiter unavailable',
}

/**
 * 503 with `Retry-After`: tollgate cannot decide (no usable signing keys, or the limiter store is
 * down with the `deny` policy). Never a 401: clients must not throw good tokens away because the
 * identity provider is having an outage.
 */
export class ServiceUnavailableError extends TollgateError {
  constructor(code: UnavailableCode, retryAfterSeconds: number, cause?: unknown) {
    super(
      code,
      503,
      'temporarily_unavailable',
      UNAVAILABLE_MESSAGES[code],
      {
        'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
      },
      cause,
    )
  }
}

/** Every concrete error class, as a union discriminated by `code`. */
export type AnyTollgateError =
  | TokenMissingError
  | InvalidRequestError
  | InvalidTokenError
  | TokenExpiredError
  | InsufficientScopeError
  | TenantRefusedError
  | RateLimitedError
  | ServiceUnavailableError

const CODES = new Set<string>([
  'ERR_TOKEN_MISSING',
  'ERR_INVALID_REQUEST',
  'ERR_TOKEN_INVALID',
  'ERR_TOKEN_EXPIRED',
  'ERR_TENANT_INVALID',
  'ERR_TENANT_UNKNOWN',
  'ERR_TENANT_REFUSED',
  'ERR_INSUFFICIENT_SCOPE',
  'ERR_RATE_LIMITED',
  'ERR_JWKS_UNAVAILABLE',
  'ERR_LIMITER_UNAVAILABLE',
] satisfies TollgateErrorCode[])

/**
 * `true` for any tollgate request-time error, including one created by another copy of the
 * package (checked by shape, not only by `instanceof`).
 */
export function isTollgateError(value: unknown): value is TollgateError {
  if (value instanceof TollgateError) return true
  if (!(value instanceof Error)) return false
  const candidate = value as Partial<TollgateError>
  return (
    typeof candidate.code === 'string' &&
    CODES.has(candidate.code) &&
    typeof candidate.status === 'number' &&
    typeof candidate.headers === 'object'
  )
}

/** What an adapter sends for an error: status, headers and the JSON body, already serialized. */
export interface ErrorResponse {
  status: number
  headers: Record<string, string>
  body: string
}

const INTERNAL_ERROR_BODY = JSON.stringify({
  error: 'server_error',
  error_description: 'internal error',
})

/**
 * The one place an error becomes a response: `{ "error", "error_description" }` JSON with the
 * error's own status and headers. Anything that is not a tollgate error is a bug in the
 * application's hooks (for example a throwing `skip`) and becomes a bare 500 that reveals nothing.
 */
export function renderError(error: unknown): ErrorResponse {
  if (isTollgateError(error)) {
    return {
      status: error.status,
      headers: { ...error.headers, ...RESPONSE_HEADERS },
      body: JSON.stringify({ error: error.error, error_description: error.message }),
    }
  }
  return { status: 500, headers: { ...RESPONSE_HEADERS }, body: INTERNAL_ERROR_BODY }
}

const RESPONSE_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
}
