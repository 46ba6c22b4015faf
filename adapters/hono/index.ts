/**
 * Hono adapter: `app.use(tollgate(options))`, then `c.get('auth')`.
 *
 * @module
 */
import type { Context, Handler, MiddlewareHandler } from 'hono'

import { type ErrorResponse, isTollgateError, renderError } from '../../src/errors.js'
import { callbackRequestOfFetch, requestOfFetch, responseOfFetch } from '../../src/fetch/request.js'
import { type Gate, openGate, Refused } from '../../src/gate/gate.js'
import { Decisions, type GuardMiddlewareFactories, guardMiddleware } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation/callbacks.js'
import { type Handle, type SignalEndpoint, signalEndpoint } from '../../src/signals/endpoint.js'
import type { Admission, CheckResult, PeerSocket, RequestLike } from '../../src/types.js'

declare module 'hono' {
  interface ContextVariableMap {
    /**
     * Set by tollgate once the token is verified, the tenant resolved and its limit respected;
     * `undefined` when credentials are optional and none were sent, or `skip` matched.
     */
    auth: Admission | undefined
  }
}

/** What tollgate adds to a Hono app's variables, for `new Hono<TollgateEnv>()` where wanted. */
export interface TollgateEnv {
  Variables: { auth: Admission | undefined }
}

/** The middleware, with the gate behind it and route guards that answer exactly as it does. */
export interface TollgateMiddleware
  extends MiddlewareHandler,
    GuardMiddlewareFactories<MiddlewareHandler>,
    CallbackEndpoints<Handler>,
    SignalEndpoint<Handler> {
  /** The gate: `ready()`, `refresh()`, `close()`, `revoke()`, `unrevoke()` for operations. */
  readonly gate: Gate
  /**
   * Serves the RFC 9728 metadata document (`resourceMetadata` option) and passes every other
   * request on: mount it at the app level when the gate itself only guards some routes.
   */
  readonly resourceMetadata: MiddlewareHandler
}

const FORM = 'application/x-www-form-urlencoded'

/**
 * The request as the gate sees it. A form body is parsed (Hono keeps it for the route's own
 * `parseBody()`) so that a token sent in it as well as in the header is refused (RFC 6750 §2.2);
 * not on GET or HEAD, whose body is no credential channel (and which a Fetch host hands over
 * without one).
 */
/**
 * The connection, on Node: `@hono/node-server` hands the handler `{ incoming, outgoing }` as its
 * bindings (what its `getConnInfo` reads). Other hosts give no socket: `undefined`.
 */
function socketOf(c: Context): PeerSocket | undefined {
  const incoming = (c.env as { incoming?: { socket?: unknown } } | undefined)?.incoming
  const socket = incoming?.socket
  return typeof socket === 'object' && socket !== null ? (socket as PeerSocket) : undefined
}

function requestOf(c: Context, scope?: string): RequestLike | Promise<RequestLike> {
  const type = c.req.header('content-type')
  const method = c.req.method
  if (
    method === 'GET' ||
    method === 'HEAD' ||
    type === undefined ||
    type.split(';', 1)[0]?.trim().toLowerCase() !== FORM
  ) {
    // No body to wait for: no promise, which the cached-token hit would pay on every request.
    return requestOfFetch(c.req.raw, undefined, socketOf(c), scope)
  }
  return c.req.parseBody().then((body) => requestOfFetch(c.req.raw, body, socketOf(c), scope))
}

function send(c: Context, { status, headers, body }: ErrorResponse): Response {
  // Through `c`, so the rate-limit fields set on an admission stay on a guard's refusal.
  return c.body(body, status as 200, headers)
}

/**
 * Middleware that admits a request (setting `c.var.auth` and rate-limit headers) or refuses it.
 * Refusals are answered with JSON `{ error, error_description }`, or thrown to `app.onError`
 * with `errorHandling: 'framework'` (the error carries `status` and `headers`). Its guards
 * (`requireScopes(…)` and the others) run it first when it has not decided on the request, so a
 * guard protects a route on its own; the gate decides once per request.
 *
 * @example
 * ```ts
 * const auth = tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'gateway' })
 * const app = new Hono()
 * app.use('/api/*', auth)
 * app.get('/api/invoices', auth.requireScopes('billing:read'), (c) => c.json({ who: c.get('auth')?.subject }))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): TollgateMiddleware {
  const { gate, decide } = openGate(options)
  const decisions = new Decisions<Context>()
  const refuse = (error: unknown, c: Context): Response => {
    if (gate.errorHandling === 'framework') {
      // Set on `c` first: an `app.onError` that answers with `c.json(…)` keeps the challenge,
      // Retry-After and the RateLimit fields.
      if (isTollgateError(error)) {
        for (const name in error.headers) c.header(name, error.headers[name] as string)
      }
      throw error
    }
    return send(c, renderError(error))
  }
  const admit = (c: Context, result: CheckResult): undefined => {
    decisions.remember(c, result)
    c.set('auth', result.auth)
    for (const name in result.headers) c.header(name, result.headers[name] as string)
  }
  /**
   * The gate on `c`: the response that answers the request (a refusal, the metadata document), or
   * `undefined` once admitted (set on `c`, and in `decisions`). A promise only when the body or the
   * decision waits on I/O.
   */
  function decideOn(
    c: Context,
    scope?: string,
  ): Response | undefined | Promise<Response | undefined> {
    const pending = requestOf(c, scope)
    if (pending instanceof Promise) return pending.then((request) => decideWith(c, request))
    return decideWith(c, pending)
  }
  function decideWith(
    c: Context,
    request: RequestLike,
  ): Response | undefined | Promise<Response | undefined> {
    const metadata = gate.resourceMetadata(request)
    if (metadata !== undefined) return send(c, metadata)
    const decided = decide(request)
    if (decided instanceof Refused) return refuse(decided.error, c)
    // A decision that needed no I/O is not awaited: no microtask on a cached token.
    if (!(decided instanceof Promise)) return admit(c, decided)
    return decided.then(
      (result) => admit(c, result),
      (error: unknown) => refuse(error, c),
    )
  }

  const tollgateMiddleware: MiddlewareHandler = async function tollgateMiddleware(c, next) {
    // Decided already (a guard of this gate ran it, or the middleware is mounted twice).
    if (decisions.of(c) === undefined) {
      const decided = decideOn(c)
      const answer = decided instanceof Promise ? await decided : decided
      if (answer !== undefined) return answer
    }
    // After the decision: a throw further down the chain is never taken for a refusal.
    await next()
  }

  const guards = guardMiddleware(
    (guard): MiddlewareHandler =>
      async function tollgateGuard(c, next) {
        let result = decisions.of(c)
        if (result === undefined) {
          // The gate has not decided on this request (a route guarded on its own): it decides
          // first, and its refusals name the guard's scopes.
          const decided = decideOn(c, guard.scope)
          const answer = decided instanceof Promise ? await decided : decided
          if (answer !== undefined) return answer
          result = decisions.of(c) as CheckResult
        }
        try {
          gate.authorize(
            guard,
            result.auth,
            requestOfFetch(c.req.raw, undefined, undefined, guard.scope),
          )
        } catch (error) {
          return refuse(error, c)
        }
        await next()
      },
  )
  const callback = (handle: Handle): Handler =>
    async function tollgateCallback(c) {
      return responseOfFetch(await handle(callbackRequestOfFetch(c.req.raw)))
    }
  const endpoints = { ...callbackEndpoints(gate, callback), ...signalEndpoint(callback) }
  const resourceMetadata: MiddlewareHandler = async function tollgateResourceMetadata(c, next) {
    const metadata = gate.resourceMetadata(requestOfFetch(c.req.raw))
    if (metadata === undefined) return next()
    return send(c, metadata)
  }
  return Object.assign(tollgateMiddleware, guards, endpoints, { gate, resourceMetadata })
}

// The helpers that build `issuers`, imported beside `tollgate()` in the guides. The rest of the
// core (createGate, types, errors) is `tollgate`'s: test/adapters/exports.test.ts holds the list.
export { auth0, cognito, entra, okta } from '../../src/providers/index.js'
export { keycloak } from '../../src/token/issuers.js'
export { type HonoMcpAuthorized, type McpEnv, mcpGate } from './mcp.js'
export type { SignInEnv, SignInMiddleware } from './signin.js'
export { signIn } from './signin.js'
