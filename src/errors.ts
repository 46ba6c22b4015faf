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
  | 'ERR_COST_EXCEEDS_LIMIT'
  | 'ERR_JWKS_UNAVAILABLE'
  | 'ERR_LIMITER_UNAVAILABLE'
  | 'ERR_REVOCATION_UNAVAILABLE'
  | 'ERR_DPOP_PROOF_INVALID'
  | 'ERR_DPOP_NONCE_REQUIRED'
  | 'ERR_DPOP_REPLAY_UNAVAILABLE'
  | 'ERR_INSUFFICIENT_USER_AUTHENTICATION'
  | 'ERR_INTROSPECTION_UNAVAILABLE'
  | 'ERR_STATUS_LIST_UNAVAILABLE'
  | 'ERR_INTROSPECTION_BUSY'
  | 'ERR_ACTOR_REFUSED'
  | 'ERR_MCP_REQUEST'

/** The `error` member of the JSON body: RFC 6750 §3.1 words, then RFC 6749 / RFC 6585 ones. */
export type ErrorBodyCode =
  | 'unauthorized'
  | 'invalid_request'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'access_denied'
  | 'rate_limited'
  | 'temporarily_unavailable'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  | 'insufficient_user_authentication'

type BearerErrorCode =
  | 'invalid_request'
  | 'invalid_token'
  | 'insufficient_scope'
  // RFC 9470 §3: the token's authentication is too weak or too old for the resource.
  | 'insufficient_user_authentication'
/** RFC 9449 §7.1, §9: the error codes only the `DPoP` scheme challenges with. */
export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce'

// RFC 6750 §3 (through RFC 6749 §5.2): quoted values may only use %x20-21 / %x23-5B / %x5D-7E.
// Applied to realm and scope too: they come from configuration, but a quote or backslash in them
// would let one header value be read as two parameters.
const OUTSIDE_CHALLENGE_CHARSET = /[^\x20\x21\x23-\x5B\x5D-\x7E]/g

/** `value` with the characters RFC 6750 §3 forbids inside a quoted challenge value removed. */
export function challengeValue(value: string): string {
  return value.replace(OUTSIDE_CHALLENGE_CHARSET, '')
}

/**
 * Builds an RFC 6750 §3 `WWW-Authenticate` value. Characters outside the charset RFC 6750 allows
 * inside quoted values are removed, never escaped.
 */
export function bearerChallenge(
  realm: string,
  error?: BearerErrorCode,
  description?: string,
  scope?: string,
  more = '',
): string {
  let value = `Bearer realm="${realm.replace(OUTSIDE_CHALLENGE_CHARSET, '')}"`
  if (error) value += `, error="${error}"`
  if (description) {
    value += `, error_description="${description.replace(OUTSIDE_CHALLENGE_CHARSET, '')}"`
  }
  if (scope) value += `, scope="${scope.replace(OUTSIDE_CHALLENGE_CHARSET, '')}"`
  return value + more
}

/**
 * Why a request was refused, for operators: on the error (`reason`) and on the `rejected` event,
 * never in the response, whose body stays generic so that refusals cannot be told apart by a
 * client probing the gate. Stable strings; new ones may be added in minor versions.
 */
export type RefusalReason =
  // The request (400, or 401 without credentials)
  | 'credentials_missing'
  | 'malformed_credentials'
  | 'repeated_authorization'
  | 'token_sent_twice'
  // The token (401 invalid_token)
  | 'malformed'
  | 'too_large'
  | 'algorithm'
  | 'header'
  | 'unknown_issuer'
  | 'unknown_kid'
  | 'signature'
  | 'expired'
  | 'not_yet_valid'
  | 'issued_in_future'
  | 'too_old'
  | 'lifetime'
  | 'audience'
  | 'token_type'
  | 'missing_claim'
  | 'malformed_claim'
  | 'client'
  | 'sender_constrained'
  | 'revoked'
  // Token Status List (draft-ietf-oauth-status-list): the issuer's list says the token is not
  // VALID, the index is past its end, the reference is missing or names a list not allowed
  | 'status_invalid'
  | 'status_suspended'
  | 'status_unrecognized'
  | 'status_index'
  | 'status_missing'
  | 'status_list_uri'
  // Introspection (RFC 7662): the provider said the token is not active; an opaque token that no
  // `opaqueTokens` rule sends to an issuer (it is sent nowhere)
  | 'inactive'
  | 'unrouted'
  // DPoP (RFC 9449): the proof, its binding to the token, replay and nonces
  | 'dpop_proof'
  | 'dpop_binding'
  | 'dpop_required'
  | 'dpop_replayed'
  | 'dpop_nonce'
  | 'dpop_replay_unavailable'
  // Certificate-bound tokens (RFC 8705 §3): the client certificate against `cnf["x5t#S256"]`
  | 'certificate_required'
  | 'certificate_missing'
  | 'certificate_mismatch'
  | 'certificate_header'
  // The tenant
  | 'tenant_missing'
  | 'tenant_malformed'
  | 'tenant_unknown'
  | 'tenant_refused'
  // Delegation (RFC 8693 `act`, `may_act`): 403
  | 'actor_malformed'
  | 'actor_chain_too_deep'
  | 'actor_not_allowed'
  | 'actor_not_permitted'
  // Authorization, limits, availability
  | 'insufficient_scope'
  // Step-up (RFC 9470): `acr` not among those required, `auth_time` missing or too old, or
  // later than now or than the token's `iat` (beyond the clock tolerance)
  | 'acr_insufficient'
  | 'authentication_too_old'
  | 'authentication_in_future'
  | 'rate_limited'
  | 'cost_exceeds_limit'
  | 'jwks_unavailable'
  | 'limiter_unavailable'
  | 'revocation_unavailable'
  | 'introspection_unavailable'
  | 'status_list_unavailable'
  // A token needed an introspection call past the issuer's call budget (503, never a verdict)
  | 'introspection_budget'
  // An MCP request (JSON-RPC body and its `Mcp-Method` / `Mcp-Name` headers) the gate cannot
  // authorize: headers that disagree with the body, a required header missing or malformed, a
  // body that is not a JSON-RPC message or is too large
  | 'mcp_header_mismatch'
  | 'mcp_header_missing'
  | 'mcp_header_malformed'
  | 'mcp_body_invalid'
  | 'mcp_body_too_large'

/** What every error constructor accepts. */
export interface ErrorOptions {
  /** Why, for operators (see {@link RefusalReason}). Defaults to the class's most general reason. */
  readonly reason?: RefusalReason
  /**
   * Context for operators, never rendered: for example the token's `aud` on an audience mismatch.
   * Never a token, a signature or a secret.
   */
  readonly detail?: Readonly<Record<string, unknown>> | undefined
  /** The underlying failure, for operators. Never shown to clients. */
  readonly cause?: unknown
}

/** How the gate challenges for an error: `null` for a bare challenge, `undefined` for none. */
export type Challenge = BearerErrorCode | DpopErrorCode | null | undefined

interface TollgateErrorInit<Code extends TollgateErrorCode> extends ErrorOptions {
  readonly code: Code
  readonly status: number
  readonly error: ErrorBodyCode
  readonly message: string
  readonly reason: RefusalReason
  readonly challenge?: Challenge
  readonly headers?: Record<string, string>
}

/**
 * Base of every error tollgate raises while handling a request. Fields are plain and writable on
 * purpose: Koa assigns `err.status` while rendering.
 *
 * Errors are built by steps that know nothing of HTTP settings; the gate that refuses the request
 * adds the `WWW-Authenticate` challenge for its realm ({@link withChallenge}) before anyone sees it.
 */
export class TollgateError<Code extends TollgateErrorCode = TollgateErrorCode> extends Error {
  /** Stable machine code. */
  code: Code
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
  /** Why, for operators; never rendered. */
  readonly reason: RefusalReason
  /** Context for operators (for example the token's `aud`); never rendered. */
  readonly detail: Readonly<Record<string, unknown>> | undefined
  /**
   * The RFC 6750 (or RFC 9449 `DPoP`) error code of the challenge, `null` for a bare one,
   * `undefined` for none.
   */
  readonly challenge: Challenge

  constructor(init: TollgateErrorInit<Code>) {
    // Refusals are expected outcomes, not bugs: no stack trace. Capturing one cost 5.9 µs per
    // refused request here (0.5 µs without), more than answering a cached token. `cause` keeps
    // the dependency's own error, with its stack, for operators.
    const stackTraceLimit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    Error.stackTraceLimit = stackTraceLimit
    this.name = new.target.name
    this.code = init.code
    this.status = init.status
    this.statusCode = init.status
    this.expose = init.status < 500
    this.headers = init.headers ?? {}
    this.error = init.error
    this.reason = init.reason
    this.detail = init.detail
    this.challenge = init.challenge
  }
}

/** 401 without an error code: no credentials, or a scheme other than Bearer (RFC 6750 §3.1). */
export class TokenMissingError extends TollgateError<'ERR_TOKEN_MISSING'> {
  constructor(options: ErrorOptions = {}) {
    super({
      reason: 'credentials_missing',
      ...options,
      code: 'ERR_TOKEN_MISSING',
      status: 401,
      error: 'unauthorized',
      message: 'bearer token required',
      challenge: null,
    })
  }
}

const INVALID_REQUEST_MESSAGES = {
  malformed_credentials: 'malformed bearer credentials',
  repeated_authorization: 'more than one Authorization header',
  token_sent_twice: 'access token sent more than one way',
} as const satisfies Partial<Record<RefusalReason, string>>

/** 400 `invalid_request`: a malformed Authorization header, or a token sent more than one way. */
export class InvalidRequestError extends TollgateError<'ERR_INVALID_REQUEST'> {
  constructor(options: ErrorOptions & { readonly reason: keyof typeof INVALID_REQUEST_MESSAGES }) {
    super({
      ...options,
      code: 'ERR_INVALID_REQUEST',
      status: 400,
      error: 'invalid_request',
      message: INVALID_REQUEST_MESSAGES[options.reason],
      challenge: 'invalid_request',
    })
  }
}

/** Codes of a 401 `invalid_token`. */
export type InvalidTokenCode =
  | 'ERR_TOKEN_INVALID'
  | 'ERR_TOKEN_EXPIRED'
  | 'ERR_TENANT_INVALID'
  | 'ERR_TENANT_UNKNOWN'

/** The one description every refusal of a token shares, apart from expiry. */
export const INVALID_TOKEN = 'invalid token'

/** 401 `invalid_token`: any problem with the token itself, or with the tenant it names. */
export class InvalidTokenError<
  Code extends InvalidTokenCode = InvalidTokenCode,
> extends TollgateError<Code> {
  constructor(options: ErrorOptions & { readonly code?: Code } = {}) {
    const code = options.code ?? ('ERR_TOKEN_INVALID' as Code)
    // Named, not spread: the refusal of a flood builds one per request, and a spread costs more.
    super({
      reason: options.reason ?? 'malformed',
      detail: options.detail,
      cause: options.cause,
      code,
      status: 401,
      error: 'invalid_token',
      message: code === 'ERR_TOKEN_EXPIRED' ? 'token expired' : INVALID_TOKEN,
      challenge: 'invalid_token',
    })
  }
}

/** 401 `invalid_token` for a token whose `exp` has passed. A kind of {@link InvalidTokenError}. */
export class TokenExpiredError extends InvalidTokenError<'ERR_TOKEN_EXPIRED'> {
  constructor(options: ErrorOptions = {}) {
    super({
      reason: 'expired',
      ...options,
      code: 'ERR_TOKEN_EXPIRED',
    })
  }
}

/** 403 `insufficient_scope`: a valid token without the scope or role a route requires. */
export class InsufficientScopeError extends TollgateError<'ERR_INSUFFICIENT_SCOPE'> {
  /** What the route requires, space-separated, as sent in the challenge's `scope`. */
  readonly requiredScope: string

  constructor(options: ErrorOptions & { readonly requiredScope: string }) {
    super({
      reason: 'insufficient_scope',
      ...options,
      code: 'ERR_INSUFFICIENT_SCOPE',
      status: 403,
      error: 'insufficient_scope',
      message: 'insufficient scope',
      challenge: 'insufficient_scope',
    })
    this.requiredScope = options.requiredScope
  }
}

const STEP_UP_MESSAGES = {
  acr_insufficient: 'a stronger authentication is required',
  authentication_too_old: 'a more recent authentication is required',
  // The client's remedy is the same: a new sign-in, which the `max_age` challenge asks for.
  authentication_in_future: 'a more recent authentication is required',
} as const satisfies Partial<Record<RefusalReason, string>>

/**
 * 401 `insufficient_user_authentication` (RFC 9470 §3): the token is valid, but the user signed
 * in too weakly (`acr` not among {@link acrValues}) or too long ago (`auth_time` missing or older
 * than {@link maxAgeSeconds}) for the route. The challenge names what to ask the provider for
 * (`acr_values="…"`, `max_age=…`); the client signs the user in again with it.
 */
export class InsufficientUserAuthenticationError extends TollgateError<'ERR_INSUFFICIENT_USER_AUTHENTICATION'> {
  /** The authentication context classes the route accepts (`acr_values`), when it names some. */
  readonly acrValues: readonly string[] | undefined
  /** The most seconds since the user signed in that the route accepts (`max_age`), when it names one. */
  readonly maxAgeSeconds: number | undefined

  constructor(
    options: ErrorOptions & {
      readonly reason: keyof typeof STEP_UP_MESSAGES
      readonly acrValues?: readonly string[] | undefined
      readonly maxAgeSeconds?: number | undefined
    },
  ) {
    super({
      ...options,
      code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
      status: 401,
      error: 'insufficient_user_authentication',
      message: STEP_UP_MESSAGES[options.reason],
      challenge: 'insufficient_user_authentication',
    })
    this.acrValues = options.acrValues
    this.maxAgeSeconds = options.maxAgeSeconds
  }
}

/**
 * The parameters an error adds to its challenge after `error_description`: `scope` (RFC 6750 §3)
 * for {@link InsufficientScopeError}, `acr_values` and `max_age` (RFC 9470 §3) for
 * {@link InsufficientUserAuthenticationError}; `''` for the others.
 */
export function challengeDetails(error: TollgateError): string {
  if (error instanceof InsufficientScopeError) {
    return error.requiredScope ? `, scope="${challengeValue(error.requiredScope)}"` : ''
  }
  if (!(error instanceof InsufficientUserAuthenticationError)) return ''
  let value = ''
  if (error.acrValues !== undefined && error.acrValues.length > 0) {
    value += `, acr_values="${challengeValue(error.acrValues.join(' '))}"`
  }
  if (error.maxAgeSeconds !== undefined) value += `, max_age=${error.maxAgeSeconds}`
  return value
}

/** 403 `access_denied`: the deployment refuses this tenant (for example, suspended). */
export class TenantRefusedError extends TollgateError<'ERR_TENANT_REFUSED'> {
  constructor(options: ErrorOptions = {}) {
    super({
      reason: 'tenant_refused',
      ...options,
      code: 'ERR_TENANT_REFUSED',
      status: 403,
      error: 'access_denied',
      message: 'tenant refused',
    })
  }
}

/**
 * 403 `access_denied`: the token was issued for a user to another party acting on their behalf
 * (`act`), and this API does not let that actor, or a chain that long, act for users
 * (`delegation`); or the token's `may_act` names someone else. `reason` says which.
 */
export class ActorRefusedError extends TollgateError<'ERR_ACTOR_REFUSED'> {
  constructor(options: ErrorOptions = {}) {
    super({
      reason: 'actor_not_allowed',
      ...options,
      code: 'ERR_ACTOR_REFUSED',
      status: 403,
      error: 'access_denied',
      message: 'actor refused',
    })
  }
}

/** 429: the tenant has used its points in at least one window. */
export class RateLimitedError extends TollgateError<'ERR_RATE_LIMITED'> {
  /** Seconds until the tenant may try again (also in `Retry-After`). */
  readonly retryAfterSeconds: number

  constructor(
    options: ErrorOptions & {
      readonly retryAfterSeconds: number
      /** `RateLimit-Policy` / `RateLimit` fields to send with the refusal. */
      readonly headers?: Readonly<Record<string, string>>
    },
  ) {
    const retryAfter = retryAfterHeader(options.retryAfterSeconds)
    super({
      reason: 'rate_limited',
      ...options,
      code: 'ERR_RATE_LIMITED',
      status: 429,
      error: 'rate_limited',
      message: 'rate limit exceeded',
      headers: { ...options.headers, 'Retry-After': String(retryAfter) },
    })
    this.retryAfterSeconds = retryAfter
  }
}

/**
 * 403 `access_denied`: the request costs more points (`rateLimit.cost`) than the smallest window
 * of the tenant's plan holds, so no wait would ever admit it; refused before any store is asked.
 * Not a 429: a client told to retry would retry for ever. Carries the plan's `RateLimit-Policy`,
 * so that the client can see the quota its request exceeds.
 */
export class CostExceedsLimitError extends TollgateError<'ERR_COST_EXCEEDS_LIMIT'> {
  /** The request's cost, in points. */
  readonly cost: number
  /** The points of the plan's smallest window: the most any request may cost. */
  readonly limit: number

  constructor(
    options: ErrorOptions & {
      readonly cost: number
      readonly limit: number
      readonly headers?: Readonly<Record<string, string>>
    },
  ) {
    super({
      reason: 'cost_exceeds_limit',
      ...options,
      code: 'ERR_COST_EXCEEDS_LIMIT',
      status: 403,
      error: 'access_denied',
      message: 'request cost exceeds the rate limit',
      headers: { ...options.headers },
    })
    this.cost = options.cost
    this.limit = options.limit
  }
}

/** Codes of a 503. */
export type UnavailableCode =
  | 'ERR_JWKS_UNAVAILABLE'
  | 'ERR_LIMITER_UNAVAILABLE'
  | 'ERR_REVOCATION_UNAVAILABLE'
  | 'ERR_DPOP_REPLAY_UNAVAILABLE'
  | 'ERR_INTROSPECTION_UNAVAILABLE'
  | 'ERR_STATUS_LIST_UNAVAILABLE'
  | 'ERR_INTROSPECTION_BUSY'

const UNAVAILABLE = {
  ERR_JWKS_UNAVAILABLE: { message: 'signing keys unavailable', reason: 'jwks_unavailable' },
  ERR_LIMITER_UNAVAILABLE: { message: 'rate limiter unavailable', reason: 'limiter_unavailable' },
  ERR_REVOCATION_UNAVAILABLE: {
    message: 'revocation list unavailable',
    reason: 'revocation_unavailable',
  },
  ERR_DPOP_REPLAY_UNAVAILABLE: {
    message: 'replay cache unavailable',
    reason: 'dpop_replay_unavailable',
  },
  ERR_INTROSPECTION_UNAVAILABLE: {
    message: 'token introspection unavailable',
    reason: 'introspection_unavailable',
  },
  ERR_STATUS_LIST_UNAVAILABLE: {
    message: 'token status list unavailable',
    reason: 'status_list_unavailable',
  },
  ERR_INTROSPECTION_BUSY: {
    message: 'token introspection busy',
    reason: 'introspection_budget',
  },
} as const satisfies Record<UnavailableCode, { message: string; reason: RefusalReason }>

/**
 * 503 with `Retry-After`: tollgate cannot decide (no usable signing keys, or the limiter store is
 * down with the `deny` policy). Never a 401: clients must not throw good tokens away because the
 * identity provider is having an outage.
 */
export class ServiceUnavailableError<
  Code extends UnavailableCode = UnavailableCode,
> extends TollgateError<Code> {
  /** Seconds after which a retry may succeed (also in `Retry-After`). */
  readonly retryAfterSeconds: number

  constructor(options: ErrorOptions & { readonly code: Code; readonly retryAfterSeconds: number }) {
    const retryAfter = retryAfterHeader(options.retryAfterSeconds)
    super({
      reason: UNAVAILABLE[options.code].reason,
      ...options,
      status: 503,
      error: 'temporarily_unavailable',
      message: UNAVAILABLE[options.code].message,
      headers: { 'Retry-After': String(retryAfter) },
    })
    this.retryAfterSeconds = retryAfter
  }
}

function retryAfterHeader(seconds: number): number {
  return Math.max(1, Math.ceil(seconds))
}

/**
 * Adds the RFC 6750 `WWW-Authenticate` challenge of a gate's realm to an error that calls for one
 * (400, 401, 403 `insufficient_scope`), and returns it. Called by the gate's one refusal point:
 * steps build errors without knowing the realm.
 */
export function withChallenge<E extends TollgateError>(error: E, realm: string): E {
  const { challenge } = error
  if (challenge === undefined) return error
  error.headers['WWW-Authenticate'] =
    challenge === null
      ? bearerChallenge(realm)
      : bearerChallenge(
          realm,
          // DPoP codes only come from a gate with DPoP on, whose challenges `challenge.ts` builds.
          challenge === 'invalid_dpop_proof' || challenge === 'use_dpop_nonce'
            ? 'invalid_token'
            : challenge,
          error.message,
          undefined,
          challengeDetails(error),
        )
  return error
}

/** 401 `invalid_dpop_proof` (RFC 9449 §7.1): the `DPoP` proof is missing, malformed, replayed or does not fit the request. */
export class InvalidDpopProofError extends TollgateError<'ERR_DPOP_PROOF_INVALID'> {
  constructor(options: ErrorOptions = {}) {
    super({
      reason: 'dpop_proof',
      ...options,
      code: 'ERR_DPOP_PROOF_INVALID',
      status: 401,
      error: 'invalid_dpop_proof',
      message: 'invalid DPoP proof',
      challenge: 'invalid_dpop_proof',
    })
  }
}

/**
 * 401 `use_dpop_nonce` (RFC 9449 §9): the proof lacks the nonce this resource requires, or carries
 * one that is no longer current. `DPoP-Nonce` holds the nonce to use.
 */
export class DpopNonceError extends TollgateError<'ERR_DPOP_NONCE_REQUIRED'> {
  constructor(options: ErrorOptions & { readonly nonce: string }) {
    super({
      reason: 'dpop_nonce',
      ...options,
      code: 'ERR_DPOP_NONCE_REQUIRED',
      status: 401,
      error: 'use_dpop_nonce',
      message: 'DPoP nonce required',
      challenge: 'use_dpop_nonce',
      headers: { 'DPoP-Nonce': options.nonce },
    })
  }
}

const MCP_MESSAGES = {
  mcp_header_mismatch:
    'Header mismatch: the Mcp-Method or Mcp-Name header does not match the request body',
  mcp_header_missing: 'Header mismatch: a required Mcp-Method or Mcp-Name header is missing',
  mcp_header_malformed: 'Header mismatch: the Mcp-Name header is not a valid value',
  mcp_body_invalid: 'Invalid Request: the body is not a JSON-RPC message the gate can authorize',
  mcp_body_too_large: 'Invalid Request: the body is too large',
} as const satisfies Partial<Record<RefusalReason, string>>

/** JSON-RPC error codes of {@link McpRequestError}: MCP's `HeaderMismatch`, JSON-RPC's parse error and invalid request. */
export type McpErrorCode = -32020 | -32700 | -32600

/**
 * 400 (413 for a body too large): an MCP request the gate cannot authorize operation by
 * operation. Its `Mcp-Method` / `Mcp-Name` headers disagree with the JSON-RPC body, or one that
 * MCP 2026-07-28 requires is missing (`jsonRpcCode` -32020, `HeaderMismatch`), or the body is not
 * a JSON-RPC message whose operation can be read (-32700 when it is not JSON, -32600 otherwise).
 * The adapters answer it as MCP does, with a JSON-RPC error body (`renderMcpError`); the message
 * is fixed text and never echoes a header, a name or a token. No challenge: the credentials are
 * not in question.
 */
export class McpRequestError extends TollgateError<'ERR_MCP_REQUEST'> {
  /** The JSON-RPC error code of the answer. */
  readonly jsonRpcCode: McpErrorCode
  /** The `id` of the JSON-RPC request refused, when the body was one (`null` otherwise). */
  readonly id: string | number | null

  constructor(
    options: ErrorOptions & {
      readonly reason: keyof typeof MCP_MESSAGES
      readonly jsonRpcCode: McpErrorCode
      readonly id?: string | number | null
    },
  ) {
    super({
      ...options,
      code: 'ERR_MCP_REQUEST',
      status: options.reason === 'mcp_body_too_large' ? 413 : 400,
      error: 'invalid_request',
      message: MCP_MESSAGES[options.reason],
    })
    this.jsonRpcCode = options.jsonRpcCode
    this.id = options.id ?? null
  }
}

/** Every concrete error class, as a union discriminated by `code`. */
export type AnyTollgateError =
  | TokenMissingError
  | InvalidRequestError
  | InvalidTokenError<'ERR_TOKEN_INVALID'>
  | InvalidTokenError<'ERR_TENANT_INVALID'>
  | InvalidTokenError<'ERR_TENANT_UNKNOWN'>
  | TokenExpiredError
  | InsufficientScopeError
  | TenantRefusedError
  | ActorRefusedError
  | RateLimitedError
  | CostExceedsLimitError
  | ServiceUnavailableError<'ERR_JWKS_UNAVAILABLE'>
  | ServiceUnavailableError<'ERR_LIMITER_UNAVAILABLE'>
  | ServiceUnavailableError<'ERR_REVOCATION_UNAVAILABLE'>
  | ServiceUnavailableError<'ERR_DPOP_REPLAY_UNAVAILABLE'>
  | InvalidDpopProofError
  | DpopNonceError
  | InsufficientUserAuthenticationError
  | McpRequestError

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
  'ERR_COST_EXCEEDS_LIMIT',
  'ERR_JWKS_UNAVAILABLE',
  'ERR_LIMITER_UNAVAILABLE',
  'ERR_REVOCATION_UNAVAILABLE',
  'ERR_DPOP_PROOF_INVALID',
  'ERR_DPOP_NONCE_REQUIRED',
  'ERR_DPOP_REPLAY_UNAVAILABLE',
  'ERR_INSUFFICIENT_USER_AUTHENTICATION',
  'ERR_ACTOR_REFUSED',
  'ERR_MCP_REQUEST',
] satisfies TollgateErrorCode[])

/**
 * `true` for any tollgate request-time error, including one created by another copy of the
 * package (checked by shape, not only by `instanceof`).
 */
export function isTollgateError(value: unknown): value is AnyTollgateError {
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
    // Copied field by field, not spread: on a refusal flood (unknown kids, forgeries) the spread
    // of the error's headers was 6% of a refusal's CPU in process.
    const headers: Record<string, string> = {}
    const own = error.headers
    for (const name in own) headers[name] = own[name] as string
    headers['Content-Type'] = JSON_TYPE
    headers['Cache-Control'] = NO_STORE
    return { status: error.status, headers, body: bodyOf(error) }
  }
  return { status: 500, headers: { ...RESPONSE_HEADERS }, body: INTERNAL_ERROR_BODY }
}

/**
 * Bodies by `error`, then message: a handful of fixed texts, serialized once each, found without
 * building a key string per refusal.
 */
const bodies = new Map<ErrorBodyCode, Map<string, string>>()
const REMEMBERED_BODIES = 64
let rememberedBodies = 0

function bodyOf(error: TollgateError): string {
  let byMessage = bodies.get(error.error)
  let body = byMessage?.get(error.message)
  if (body === undefined) {
    body = JSON.stringify({ error: error.error, error_description: error.message })
    if (rememberedBodies < REMEMBERED_BODIES) {
      if (byMessage === undefined) {
        byMessage = new Map()
        bodies.set(error.error, byMessage)
      }
      byMessage.set(error.message, body)
      rememberedBodies++
    }
  }
  return body
}

const JSON_TYPE = 'application/json; charset=utf-8'
const NO_STORE = 'no-store'
const RESPONSE_HEADERS = { 'Content-Type': JSON_TYPE, 'Cache-Control': NO_STORE }
