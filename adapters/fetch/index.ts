/**
 * Fetch adapter: the gate for anything that answers a WHATWG `Request` with a `Response`
 * (Next.js route handlers, `Bun.serve`, `Deno.serve`, Workers `fetch` handlers).
 *
 * @module
 */
import { renderError } from '../../src/errors.js'
import { callbackRequestOfFetch, requestOfFetch, responseOfFetch } from '../../src/fetch/request.js'
import { type Gate, openGate, Refused } from '../../src/gate/gate.js'
import { Decisions, type GuardMiddlewareFactories, guardMiddleware } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation/callbacks.js'
import { type Handle, type SignalEndpoint, signalEndpoint } from '../../src/signals/endpoint.js'
import type { Admission, CheckResult, PeerSocket } from '../../src/types.js'

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
 * refusal to send, or `undefined` when the admission meets it. tollgate's guards check their own
 * gate's admission, never the one passed in: on another gate's route (its `handle()` or
 * `withAuth()`), a guard runs its own gate first, once per request (a promise then), and answers
 * that gate's refusal. An application's own guard may return a promise too.
 */
export type FetchGuard = (
  request: Request,
  admitted: Admitted,
) => Response | undefined | Promise<Response | undefined>

/** What {@link FetchTollgate.handle} takes besides the request. */
export interface HandleOptions {
  /**
   * The body, when the application parsed it before the gate (form fields as an object): lets the
   * gate refuse a token sent in the body as well as in the header, except on GET and HEAD, whose
   * body is no credential channel (RFC 6750 §2.2) and is ignored. tollgate never reads the body.
   */
  readonly body?: unknown
  /**
   * Guards run, in order, once the request is admitted. A guard of another gate runs its gate
   * too: the request then goes on with that gate's admission and its rate-limit fields added, as
   * it would through both gates' middleware in the other adapters.
   */
  readonly guards?: readonly FetchGuard[] | undefined
  /**
   * What the host knows of the request's connection, which a Fetch `Request` does not carry:
   * its peer address (`remoteAddress`, compared with `mtls.trustedProxies`) and, on TLS, the
   * client certificate (`getPeerX509Certificate()`). Read only for certificate-bound tokens
   * (`mtls`); without it such a token is refused. Node's `socket` fits as it is; elsewhere, for
   * example on Deno, `{ remoteAddress: info.remoteAddr.hostname }`.
   */
  readonly socket?: PeerSocket | undefined
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
    CallbackEndpoints<FetchHandler>,
    SignalEndpoint<FetchHandler> {
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

/**
 * What a tollgate guard does for `handle()`: the admission to go on with (its own gate's, joined to
 * the one given, when its gate decided just now), or the response that answers the request.
 */
type GuardStep = (
  request: Request,
  admitted: Admitted,
) => Admitted | Answered | Promise<Admitted | Answered>
// The steps of the guards of every tollgate/fetch instance: `handle()` of one gate recognizes the
// guards of another, whose gate may admit the request with its own admission and headers.
const GUARD_STEPS = new WeakMap<FetchGuard, GuardStep>()

const refusalOf = (outcome: Admitted | Answered): Response | undefined => outcome.response
// The connection `handle()` was told of, for the guards of other gates that decide on the request.
const SOCKETS = new WeakMap<Request, PeerSocket>()

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
  const decisions = new Decisions<Request>()
  const refusal = (error: unknown, headers?: Readonly<Record<string, string>>): Response => {
    if (gate.errorHandling === 'framework') throw error
    const response = responseOfFetch(renderError(error))
    // As Express and Koa: a guard's refusal keeps the admission's rate-limit fields.
    return headers === undefined ? response : withHeaders(response, headers)
  }

  /**
   * The gate on a request it has not decided on: what it admitted, or the answer (a refusal, with
   * `headers` of an earlier admission kept; the metadata document). A promise only after I/O.
   * `scope`: the scopes of the route's first scope guard, which a refusal's challenge names.
   */
  function decideOn(
    request: Request,
    body: unknown,
    headers?: Readonly<Record<string, string>>,
    scope?: string,
  ): Admitted | Answered | Promise<Admitted | Answered> {
    const view = requestOfFetch(request, body, SOCKETS.get(request), scope)
    const metadata = gate.resourceMetadata(view)
    if (metadata !== undefined) return { response: responseOfFetch(metadata) }
    const decided = decide(view)
    if (decided instanceof Refused) return { response: refusal(decided.error, headers) }
    // A decision that needed no I/O is not awaited: no microtask on a cached token.
    if (!(decided instanceof Promise)) return admit(request, decided)
    return decided.then(
      (result) => admit(request, result),
      (error: unknown) => ({ response: refusal(error, headers) }),
    )
  }
  const admit = (request: Request, { auth, headers }: CheckResult): Admitted => {
    const admitted: Admitted = { auth, headers }
    decisions.remember(request, admitted)
    return admitted
  }

  // The scopes of this instance's scope guards: `handle()` with guards, and `withAuth()`, hand the
  // first one's to the gate's decision, so that a refusal names them as a guard alone would.
  const scopes = new WeakMap<FetchGuard, string>()
  const scopeOf = (routeGuards: readonly FetchGuard[]): string | undefined => {
    for (const guard of routeGuards) {
      const scope = scopes.get(guard)
      if (scope !== undefined) return scope
    }
    return undefined
  }
  const guards = guardMiddleware((guard): FetchGuard => {
    const check = (request: Request, admitted: Admitted, own: CheckResult): Admitted | Answered => {
      try {
        gate.authorize(guard, own.auth, requestOfFetch(request, undefined, undefined, guard.scope))
      } catch (error) {
        return { response: refusal(error, admitted.headers) }
      }
      return admitted
    }
    // On this gate's decision when it has one; else (another gate's route) the gate decides first,
    // and the request goes on with its admission, as through both gates' middleware elsewhere.
    const step: GuardStep = (request, admitted) => {
      const own = decisions.of(request)
      if (own !== undefined) return check(request, admitted, own)
      const joined = (decided: Admitted | Answered): Admitted | Answered => {
        if (decided.response !== undefined) return decided
        const both: Admitted = {
          auth: decided.auth ?? admitted.auth,
          headers: { ...admitted.headers, ...decided.headers },
        }
        return check(request, both, decided)
      }
      const decided = decideOn(request, undefined, admitted.headers, guard.scope)
      return decided instanceof Promise ? decided.then(joined) : joined(decided)
    }
    const tollgateGuard: FetchGuard = (request, admitted) => {
      const outcome = step(request, admitted)
      if (outcome instanceof Promise) return outcome.then(refusalOf)
      return refusalOf(outcome)
    }
    GUARD_STEPS.set(tollgateGuard, step)
    if (guard.scope !== undefined) scopes.set(tollgateGuard, guard.scope)
    return tollgateGuard
  })

  function handle(request: Request, options?: HandleOptions): Promise<Admitted | Answered> {
    const routeGuards = options?.guards
    const scope = routeGuards === undefined ? undefined : scopeOf(routeGuards)
    return handleWith(request, options, routeGuards, scope)
  }

  async function handleWith(
    request: Request,
    options: HandleOptions | undefined,
    routeGuards: readonly FetchGuard[] | undefined,
    scope: string | undefined,
  ): Promise<Admitted | Answered> {
    let admitted = decisions.of(request) as Admitted | undefined
    if (options?.socket !== undefined) SOCKETS.set(request, options.socket)
    if (admitted === undefined) {
      const pending = decideOn(request, options?.body, undefined, scope)
      const decided = pending instanceof Promise ? await pending : pending
      if (decided.response !== undefined) return decided
      admitted = decided
    }
    for (const guard of routeGuards ?? []) {
      const step = GUARD_STEPS.get(guard)
      if (step === undefined) {
        // The application's own guard.
        const pending = guard(request, admitted)
        const response = pending instanceof Promise ? await pending : pending
        if (response !== undefined) return { response }
        continue
      }
      const pending = step(request, admitted)
      const outcome = pending instanceof Promise ? await pending : pending
      if (outcome.response !== undefined) return outcome
      admitted = outcome
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
    // The route's scopes reach the gate's decision: a 401 names them, as a guard alone's does.
    const scope = scopeOf(routeGuards)
    return async function tollgateRoute(request, ...rest) {
      const result = await handleWith(request, undefined, routeGuards, scope)
      if (result.response !== undefined) return result.response
      return withHeaders(await handler(request, result.auth, ...rest), result.headers)
    }
  }

  const callback = (handleCallback: Handle): FetchHandler =>
    async function tollgateCallback(request) {
      return responseOfFetch(await handleCallback(callbackRequestOfFetch(request)))
    }
  const endpoints = { ...callbackEndpoints(gate, callback), ...signalEndpoint(callback) }

  function resourceMetadata(request: Request): Response | undefined {
    const metadata = gate.resourceMetadata(requestOfFetch(request))
    return metadata === undefined ? undefined : responseOfFetch(metadata)
  }

  return { gate, handle, withAuth, resourceMetadata, ...guards, ...endpoints }
}

// The helpers that build `issuers`, imported beside `tollgate()` in the guides. The rest of the
// core (createGate, types, errors) is `tollgate`'s: test/adapters/exports.test.ts holds the list.
export { auth0, cognito, entra, okta } from '../../src/providers/index.js'
export { keycloak } from '../../src/token/issuers.js'
export { type FetchMcpAuthorized, type McpHandler, type McpWrapper, mcpGate } from './mcp.js'
export type {
  FetchSignIn,
  SignedIn,
  SignInAnswered,
  SignInHandleOptions,
  SignInHandler,
  WithSignInOptions,
} from './signin.js'
export { signIn } from './signin.js'
