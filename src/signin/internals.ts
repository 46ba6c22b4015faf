/**
 * The shapes sign-in's routes share: the request and response the adapters translate, the
 * context a handler sees, and what the back-channel logout route needs from the core. Kept apart
 * from `signin.ts` so that the routes import it and not each other.
 *
 * @module
 */
import type { HeadersLike } from '../types.js'
import type { SignInEvent } from './events.js'
import type { normalizeSignInOptions } from './options.js'
import type { StepUpOptions } from './step-up.js'

/** A request, as the adapters pass it. */
export interface SignInRequest {
  readonly method: string
  /** Path and query as received (Express `req.originalUrl`, Koa `ctx.originalUrl`). */
  readonly url: string
  readonly headers: HeadersLike
  /** The parsed body, when a body parser ran before sign-in (back-channel logout). */
  readonly body?: unknown
  /** The request body stream, read for back-channel logout when no parser ran. */
  readonly stream?: AsyncIterable<Uint8Array | string>
}

/** A complete response for the adapter to send. */
export interface SignInResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | readonly string[]>>
  readonly body: string
}

/** The signed-in user, from the ID token (profile claims only). */
export interface SignedInUser {
  readonly issuer: string
  readonly subject: string
  /** The provider's session id (`sid`), when it sends one. */
  readonly sid: string | undefined
  /** Profile claims: `name`, `email`, `preferred_username`… */
  readonly claims: Readonly<Record<string, unknown>>
}

/**
 * What a handler sees: `req.signin` (Express), `ctx.state.signin` (Koa), `request.signin`
 * (Fastify), `c.var.signin` (Hono), the handler's second argument (`withSignIn()`, Fetch).
 */
export interface SignInContext {
  /** The user, or `undefined` when the request carries no live session. */
  readonly user: SignedInUser | undefined
  /**
   * The user's access token for `product` (a name from the `products` option; default: the
   * first product, or the sign-in's own token when there are none). Answered from the session
   * while it has more than `refresh.beforeExpirySeconds` left; refreshed otherwise, once per
   * session across every instance sharing the store.
   *
   * @throws SignInError `ERR_SIGNIN_REQUIRED` (401) when there is no session or it ended (the
   * refresh token was refused for good: `invalid_grant`, `invalid_request`, a bare 400…);
   * `ERR_CLIENT_REFUSED` (500) when the token endpoint refused this client or this product's
   * scope or resource (a configuration error; the session stays); `ERR_SIGNIN_UNAVAILABLE` (503)
   * when the provider (network, timeout, 5xx, 429, `temporarily_unavailable`) or the store cannot
   * be reached.
   * @throws TypeError when `product` is not one of the `products`.
   */
  accessToken(product?: string): Promise<string>
  /** The login route with `returnTo` (same-origin paths only; anything else becomes `/`). */
  loginPath(returnTo?: string): string
  /**
   * The login route for a step-up (RFC 9470): the user signs in again with `acrValues` and/or
   * `maxAge` (an API's `insufficient_user_authentication` challenge, `tollgate/client`'s
   * `StepUpRequiredError`), and comes back to `returnTo`. The callback refuses an ID token whose
   * `acr` is not one of `acrValues` or whose `auth_time` is older than `maxAge`
   * (`ERR_SIGNIN_REFUSED`, reason `acr`; `ERR_SIGNIN_CALLBACK_INVALID`, reason `auth_time`).
   *
   * @throws TypeError when `acrValues` or `maxAge` is not valid.
   */
  stepUpPath(options: StepUpOptions): string
}

/** What `SignIn.handle` decided. */
export type SignInOutcome =
  | { readonly response: SignInResponse; readonly context?: undefined }
  | {
      readonly response?: undefined
      readonly context: SignInContext
      /** Headers to add to the application's response (a `Set-Cookie` clearing a dead session). */
      readonly headers: Readonly<Record<string, readonly string[]>>
    }

/** Ends sessions of a user or of a provider session; logout from the provider's part of the core. */
export interface SessionEnder {
  /** `reason`: how the provider said so (default `back_channel_logout`). */
  endSessions(
    issuer: string,
    by: { sid?: string | undefined; sub?: string | undefined },
    reason?: 'back_channel_logout' | 'front_channel_logout',
  ): Promise<number>
}

/** Internal: what the back-channel logout route needs from the core. */
export interface SignInInternals {
  readonly sessions: SessionEnder
  readonly settings: ReturnType<typeof normalizeSignInOptions>
  readonly emit: ((event: SignInEvent) => void) | undefined
}
