/**
 * Fetch sign-in: `signIn(options)` answers the login, callback, logout, back-channel and
 * front-channel logout routes as `Response`s and loads the session of every other request, for anything that answers a
 * WHATWG `Request` with a `Response` (Next.js route handlers, `Bun.serve`, `Deno.serve`, Workers).
 * Translation only; the behaviour is `createSignIn()`'s. `tollgate/hono` reuses the translation.
 *
 * @module
 */
import { callbackRequestOfFetch } from '../../src/fetch/request.js'
import type { SignInOptions } from '../../src/signin/options.js'
import {
  createSignIn,
  type SignIn,
  type SignInContext,
  type SignInRequest,
  type SignInResponse,
} from '../../src/signin/signin.js'

/** The request is not a sign-in route: its session, and the headers to add to your response. */
export interface SignedIn {
  /** The signed-in user (or `undefined`) and `accessToken(product)`. */
  readonly context: SignInContext
  /**
   * Headers to add to the response you send: a `Set-Cookie` clearing a session that ended.
   * `withSignIn()` and {@link FetchSignIn.withHeaders} add them.
   */
  readonly headers: Readonly<Record<string, readonly string[]>>
  readonly response?: undefined
}

/** The request was a sign-in route (or refused): send `response`. */
export interface SignInAnswered {
  readonly response: Response
  readonly context?: undefined
}

/** What {@link FetchSignIn.handle} takes besides the request. */
export interface SignInHandleOptions {
  /**
   * The body, when the application read it before sign-in (form fields as an object, or the
   * text): the back-channel logout route reads its `logout_token` there. Otherwise the route
   * reads the request's own body stream.
   */
  readonly body?: unknown
}

/** What {@link FetchSignIn.withSignIn} takes besides the handler. */
export interface WithSignInOptions {
  /**
   * Only for a signed-in user: without one, a page request (`GET`/`HEAD` accepting `text/html`)
   * is redirected to the login route and anything else gets 401 `login_required`, and the
   * handler is not called.
   */
  readonly requireUser?: boolean
}

/** A route handler that receives the sign-in context: Next.js's `context` and the like follow it. */
export type SignInHandler<Rest extends unknown[]> = (
  request: Request,
  signin: SignInContext,
  ...rest: Rest
) => Response | Promise<Response>

/** Sign-in as a Fetch application uses it. */
export interface FetchSignIn {
  /** The framework-neutral sign-in behind it (`redirectUri`, `handle`, `requireUser`). */
  readonly signIn: SignIn
  /**
   * Answers a sign-in route (`{ response }`), or loads the session of any other request
   * (`{ context, headers }`: add `headers` to your response).
   */
  handle(request: Request, options?: SignInHandleOptions): Promise<SignedIn | SignInAnswered>
  /**
   * `undefined` when `context` has a user; otherwise the answer to send: a redirect to the login
   * route (page requests) or 401 `login_required` (anything else).
   */
  requireUser(request: Request, context: SignInContext | undefined): Response | undefined
  /**
   * Wraps a handler (a whole app, or one route): sign-in routes are answered without calling it,
   * every other request reaches it with its sign-in context, and its response gets the headers
   * sign-in asked for.
   */
  withSignIn<Rest extends unknown[]>(
    handler: SignInHandler<Rest>,
    options?: WithSignInOptions,
  ): (request: Request, ...rest: Rest) => Promise<Response>
  /** `response` with `headers` (from {@link SignedIn}) appended; a copy when it is immutable. */
  withHeaders(response: Response, headers: Readonly<Record<string, readonly string[]>>): Response
}

/**
 * The {@link SignInRequest} of a Fetch `Request`: path and query as received, lower-cased header
 * names, and the body stream for the back-channel logout route (read only on that route).
 */
export function signInRequestOfFetch(request: Request, body?: unknown): SignInRequest {
  const { headers, stream } = callbackRequestOfFetch(request)
  const url = new URL(request.url)
  return {
    method: request.method,
    url: `${url.pathname}${url.search}`,
    headers,
    ...(body === undefined ? {} : { body }),
    // A body the application already read is in `body`; the stream is gone then.
    ...(stream === undefined ? {} : { stream: stream as AsyncIterable<Uint8Array> }),
  }
}

/** A complete answer of sign-in as a `Response`, each `Set-Cookie` its own field. */
export function responseOfSignIn({ status, headers, body }: SignInResponse): Response {
  const fields = new Headers()
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') fields.set(name, value)
    else for (const item of value as readonly string[]) fields.append(name, item)
  }
  // A redirect carries no body, not even an empty one (as Express's `res.end('')` sends it).
  return new Response(body === '' ? null : body, { status, headers: fields })
}

function withHeaders(
  response: Response,
  headers: Readonly<Record<string, readonly string[]>>,
): Response {
  const names = Object.keys(headers)
  if (names.length === 0) return response
  const append = (target: Response) => {
    for (const name of names)
      for (const value of headers[name] ?? []) target.headers.append(name, value)
  }
  try {
    append(response)
    return response
  } catch {
    // Immutable headers (a `fetch()` response, `Response.redirect()`): a copy takes them.
    const copy = new Response(response.body, response)
    append(copy)
    return copy
  }
}

/**
 * Sign-in for Fetch handlers.
 *
 * @example
 * ```ts
 * const auth = signIn({ issuer, clientId: 'office-web', clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com', keys: fromEnv('SIGNIN_KEYS'), products: { office: { resource } } })
 * // Bun.serve / Deno.serve / a Workers fetch handler: the sign-in routes, then the app's
 * export default {
 *   fetch: auth.withSignIn(
 *     async (_request, signin) => {
 *       const token = await signin.accessToken('office')
 *       return Response.json(await callOffice(token))
 *     },
 *     { requireUser: true },
 *   ),
 * }
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function signIn(options: SignInOptions): FetchSignIn {
  const core = createSignIn(options)

  async function handle(
    request: Request,
    handleOptions?: SignInHandleOptions,
  ): Promise<SignedIn | SignInAnswered> {
    const outcome = await core.handle(signInRequestOfFetch(request, handleOptions?.body))
    if (outcome.response !== undefined) return { response: responseOfSignIn(outcome.response) }
    return { context: outcome.context, headers: outcome.headers }
  }

  function requireUser(request: Request, context: SignInContext | undefined): Response | undefined {
    const refusal = core.requireUser(context, signInRequestOfFetch(request))
    return refusal === undefined ? undefined : responseOfSignIn(refusal)
  }

  function withSignIn<Rest extends unknown[]>(
    handler: SignInHandler<Rest>,
    routeOptions?: WithSignInOptions,
  ): (request: Request, ...rest: Rest) => Promise<Response> {
    const required = routeOptions?.requireUser === true
    return async function tollgateSignInRoute(request, ...rest) {
      const outcome = await handle(request)
      if (outcome.response !== undefined) return outcome.response
      // As Express: a session that ended is cleared on the refusal too.
      const refusal = required ? requireUser(request, outcome.context) : undefined
      if (refusal !== undefined) return withHeaders(refusal, outcome.headers)
      return withHeaders(await handler(request, outcome.context, ...rest), outcome.headers)
    }
  }

  return { signIn: core, handle, requireUser, withSignIn, withHeaders }
}
