/**
 * Fetch adapter: the gate for anything that answers a WHATWG `Request` with a `Response`
 * (Next.js route handlers, `Bun.serve`, `Deno.serve`, Workers `fetch` handlers).
 *
 * @module
 */
import { renderError } from '../../src/errors.js'
import { callbackRequestOfFetch, requestOfFetch, responseOfFetch } from '../../src/fetch/request.js'
import { type Gate, openGate, Refused } from '../../src/gate/gate.js'
import { type GuardMiddlewareFactories, guardMiddleware } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation/callbacks.js'
import type { Admission } from '../../src/types.js'

/** The request may proceed: what the gate admitted, and the headers to add to the response. */
export interface Admitted {
  /** `undefined` when credentials are optional and none were sent, or `skip` matched. */
  readonly auth: Admission | undefined
  /** Rate-limit fields: set them on the response you send (`withAuth` does). */
  readonly headers: Readonly<Record<string, string>>
  readonly response?: undefined
}

/** The request is answered already: a refusal, or the RFC 9728 metadata document. Send `response`. */
export interface Answered {
  readonly response: Response
  readonly auth?: undefined
}

/**
 * A route guard (`auth.requireScopes(…)` and the like) for a request the gate admitted: the
 * refusal to send, or `undefined` when the admission meets it.
 */
export type FetchGuard = (request: Request, admitted: Admitted) => Response | undefined

/** What {@link FetchTollgate.handle} takes besides the request. */
export interface HandleOptions {
  /**
   * The body, when the application parsed it before the gate (form fields as an object): lets the
   * gate refuse a token sent in the body as well as in the header. tollgate never reads the body.
   */
  readonly body?: unknown
  /** Guards run, in order, once the request is admitted. */
  readonly guards?: readonly FetchGuard[] | undefined
}

/** What {@link FetchTollgate.withAuth} takes besides the handler. */
export interface WithAuthOptions {
  /** Shorthand for a `requireScopes(...scopes)` guard. */
  readonly scopes?: readonly string[] | undefined
  /** Further guards, run after the scope check. */
  readonly guards?: readonly FetchGuard[] | undefined
}

/** A route handler that receives the admission: Next.js's `context` and the like follow it. */
export type AuthHandler<Rest extends unknown[]> = (
  request: Request,
  auth: Admission | undefined,
  ...rest: Rest
) => Response | Promise<Response>

/** A `Request` → `Response` handler (provider callbacks). */
export type FetchHandler = (request: Request) => Promise<Response>

/** The gate as a Fetch application uses it. */
export interface FetchTollgate
  extends GuardMiddlewareFactories<FetchGuard>,
    CallbackEndpoints<FetchHandler> {
  /** The gate: `ready()`, `refresh()`, `close()`, `revoke()`, `unrevoke()` for operations. */
  readonly gate: Gate
  /**
   * Decides on one request: `{ auth, headers }` when it may proceed, `{ response }` when it is
   * answered already (a refusal, or the RFC 9728 document at its well-known path). With
   * `errorHandling: 'framework'` a refusal rejects with the typed error instead.
   */
  handle(request: Request, options?: HandleOptions): Promise<Admitted | Answered>
  /**
   * Wraps a route handler: it runs only for admitted requests, receives the admission after the
   * request, and its response gets the admission's rate-limit fields. Refusals are answered
   * without calling it (or rejected with `errorHandling: 'framework'`).
   */
  withAuth<Rest extends unknown[]>(
    handler: AuthHandler<Rest>,
    options?: WithAuthOptions,
  ): (request: Request, ...rest: Rest) => Promise<Response>
  /** The RFC 9728 metadata answer when `request` asks for it, else `undefined`. */
  resourceMetadata(request: Request): Response | undefined
}

function withHeaders(response: Response, headers: Readonly<Record<string, string>>): Response {
  const names = Object.keys(headers)
  if (names.length === 0) return response
  let target = response
  try {
    for (const name of names) target.headers.set(name, headers[name] as string)
  } catch {
    // Immutable headers (a `fetch()` response, `Response.redirect()`): a copy takes them.
    target = new Response(response.body, response)
    for (const name of names) target.headers.set(name, headers[name] as string)
  }
  return target
}

/**
 * The gate for Fetch handlers.
 *
 * @example
 * ```ts
 * const auth = tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'gateway' })
 * // Next.js app/api/invoices/route.ts
 * export const GET = auth.withAuth((_request, user) => Response.json({ subject: user?.subject }), {
 *   scopes: ['billing:read'],
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): FetchTollgate {
  const { gate, decide } = openGate(options)
  const refusal = (error: unknown, headers?: Readonly<Record<string, string>>): Response => {
    if (gate.errorHandling === 'framework') throw error
    const response = responseOfFetch(renderError(error))
    // As Express and Koa: a guard's refusal keeps the admission's rate-limit fields.
    return headers === undefined ? response : withHeaders(response, headers)
  }

  const guards = guardMiddleware(
    (guard): FetchGuard =>
      function tollgateGuard(request, admitted) {
        try {
          gate.authorize(guard, admitted.auth, requestOfFetch(request))
        } catch (error) {
          return refusal(error, admitted.headers)
        }
        return undefined
      },
  )

  async function handle(request: Request, options?: HandleOptions): Promise<Admitted | Answered> {
    const view = requestOfFetch(request, options?.body)
    const metadata = gate.resourceMetadata(view)
    if (metadata !== undefined) return { response: responseOfFetch(metadata) }
    const decided = decide(view)
    if (decided instanceof Refused) return { response: refusal(decided.error) }
    let admitted: Admitted
    try {
      // A decision that needed no I/O is not awaited: no microtask on a cached token.
      const { auth, headers } = decided instanceof Promise ? await decided : decided
      admitted = { auth, headers }
    } catch (error) {
      return { response: refusal(error) }
    }
    for (const guard of options?.guards ?? []) {
      const response = guard(request, admitted)
      if (response !== undefined) return { response }
    }
    return admitted
  }

  function withAuth<Rest extends unknown[]>(
    handler: AuthHandler<Rest>,
    options?: WithAuthOptions,
  ): (request: Request, ...rest: Rest) => Promise<Response> {
    // Built once, here: a bad scope name fails when the route is declared, not per request.
    const routeGuards = [
      ...(options?.scopes === undefined ? [] : [guards.requireScopes(...options.scopes)]),
      ...(options?.guards ?? []),
    ]
    return async function tollgateRoute(request, ...rest) {
      const result = await handle(request, { guards: routeGuards })
      if (result.response !== undefined) return result.response
      return withHeaders(await handler(request, result.auth, ...rest), result.headers)
    }
  }

  const endpoints = callbackEndpoints(
    gate,
    (handleCallback): FetchHandler =>
      async function tollgateCallback(request) {
        return responseOfFetch(await handleCallback(callbackRequestOfFetch(request)))
      },
  )

  function resourceMetadata(request: Request): Response | undefined {
    const metadata = gate.resourceMetadata(requestOfFetch(request))
    return metadata === undefined ? undefined : responseOfFetch(metadata)
  }

  return { gate, handle, withAuth, resourceMetadata, ...guards, ...endpoints }
}

export * from '../core-exports.js'
export type {
  FetchSignIn,
  SignedIn,
  SignInAnswered,
  SignInHandleOptions,
  SignInHandler,
  WithSignInOptions,
} from './signin.js'
export { signIn } from './signin.js'
