/**
 * Koa adapter (Koa 2 and 3): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'

import { type ErrorResponse, isTollgateError, renderError } from '../../src/errors.js'
import { type Gate, openGate, Refused } from '../../src/gate/gate.js'
import { Decisions, type GuardMiddlewareFactories, guardMiddleware } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation/callbacks.js'
import { type Handle, type SignalEndpoint, signalEndpoint } from '../../src/signals/endpoint.js'
import type { Admission, CheckResult, RequestLike } from '../../src/types.js'

/** What tollgate adds to `ctx.state`. */
export interface TollgateState {
  /** Set once the token is verified, the tenant resolved and its limit respected. */
  auth?: Admission
}

/** The middleware, with the gate behind it and route guards that answer exactly as it does. */
export interface TollgateMiddleware
  extends Middleware<TollgateState>,
    GuardMiddlewareFactories<Middleware<TollgateState>>,
    CallbackEndpoints<Middleware<TollgateState>>,
    SignalEndpoint<Middleware<TollgateState>> {
  /** The gate: `ready()`, `refresh()`, `close()`, `revoke()`, `unrevoke()` for operations. */
  readonly gate: Gate
  /**
   * Serves the RFC 9728 metadata document (`resourceMetadata` option) and passes every other
   * request on: mount it at the app level when the gate itself only guards some routes.
   */
  readonly resourceMetadata: Middleware
}

/** The request as the gate reads it; `requiredScope`: the scopes of the guard that runs the gate. */
function requestOf(ctx: Context, requiredScope?: string): RequestLike {
  const { headers, method, originalUrl: url } = ctx
  const body = (ctx.request as { body?: unknown }).body
  const socket = ctx.req.socket
  const secure = (socket as { encrypted?: boolean }).encrypted === true
  const rawHeaders = ctx.req.rawHeaders
  return { headers, rawHeaders, method, url, body, secure, socket, requiredScope }
}

const RESOLVED = Promise.resolve()

/**
 * `ctx.set(headers)` without Koa's per-field indirection (a delegate, `arguments`, a recursive call
 * per field): the same `setHeader` calls, skipped once the response has gone, as Koa skips them.
 */
function setHeaders(ctx: Context, headers: Readonly<Record<string, string>>): void {
  const res = ctx.res
  if (res.headersSent) return
  for (const name in headers) res.setHeader(name, headers[name] as string)
}

function send(ctx: Context, { status, headers, body }: ErrorResponse): void {
  ctx.status = status
  setHeaders(ctx, headers)
  ctx.body = body
}

/**
 * Middleware that admits a request (setting `ctx.state.auth` and rate-limit headers) or refuses
 * it. Refusals are answered with JSON `{ error, error_description }`, or thrown to Koa's error
 * handling with `errorHandling: 'framework'` (the error carries `status`, `headers` and `expose`).
 * Its guards (`requireScopes(…)` and the others) run it first when it has not decided on the
 * request, so a guard protects a route on its own; the gate decides once per request.
 *
 * @example
 * ```ts
 * const auth = tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'office' })
 * app.use(auth)
 * router.get('/records', auth.requireScopes('records:read'), handler)
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): TollgateMiddleware {
  const { gate, decide } = openGate(options)
  const decisions = new Decisions<Context>()
  const refuse = (error: unknown, ctx: Context): void => {
    if (gate.errorHandling === 'framework') {
      // Set before the throw: an application's catch that sets only the status and a body keeps
      // the challenge, Retry-After and RateLimit fields (Koa's own onerror sets them from
      // `err.headers` again).
      if (isTollgateError(error)) setHeaders(ctx, error.headers)
      throw error
    }
    send(ctx, renderError(error))
  }
  // The middleware and guards are not async functions, yet always return a promise, as Koa
  // middleware does: code that calls one directly can chain `.catch()` on any outcome.
  const refused = (error: unknown, ctx: Context): Promise<void> => {
    try {
      refuse(error, ctx)
      return RESOLVED
    } catch (thrown) {
      return Promise.reject(thrown)
    }
  }
  /** What follows an admission: the next middleware (the gate's), or a guard's check. */
  type Then = (ctx: Context, result: CheckResult, next: () => Promise<unknown>) => Promise<unknown>
  const proceed: Then = (_ctx, _result, next) => next()
  const admit = (
    ctx: Context,
    result: CheckResult,
    next: () => Promise<unknown>,
    then: Then,
  ): Promise<unknown> => {
    decisions.remember(ctx, result)
    if (result.auth !== undefined) ctx.state.auth = result.auth
    setHeaders(ctx, result.headers)
    return then(ctx, result, next)
  }
  // Not async: a decision that needed no I/O goes on without a microtask between.
  function decideThen(
    ctx: Context,
    next: () => Promise<unknown>,
    then: Then,
    scope?: string,
  ): Promise<unknown> {
    const request = requestOf(ctx, scope)
    const metadata = gate.resourceMetadata(request)
    if (metadata !== undefined) {
      send(ctx, metadata)
      return RESOLVED
    }
    const decided = decide(request)
    if (decided instanceof Refused) return refused(decided.error, ctx)
    if (!(decided instanceof Promise)) return admit(ctx, decided, next, then)
    // Two-argument then: a throw further down the chain is never taken for a refusal.
    return decided.then(
      (result) => admit(ctx, result, next, then),
      (error: unknown) => refuse(error, ctx),
    )
  }

  const tollgateMiddleware: Middleware<TollgateState> = function tollgateMiddleware(ctx, next) {
    // Decided already (a guard of this gate ran it, or the middleware is mounted twice).
    if (decisions.of(ctx) !== undefined) return next()
    return decideThen(ctx, next, proceed)
  }

  const guards = guardMiddleware((guard): Middleware<TollgateState> => {
    const check: Then = (ctx, result, next) => {
      try {
        gate.authorize(guard, result.auth, requestOf(ctx, guard.scope))
      } catch (error) {
        return refused(error, ctx)
      }
      return next()
    }
    return function tollgateGuard(ctx, next) {
      const result = decisions.of(ctx)
      // The gate has not decided on this request (a route guarded on its own): it decides first.
      // Its refusals name the guard's scopes.
      return result === undefined
        ? decideThen(ctx, next, check, guard.scope)
        : check(ctx, result, next)
    }
  })
  const callback = (handle: Handle): Middleware<TollgateState> =>
    async function tollgateCallback(ctx) {
      const body = (ctx.request as { body?: unknown }).body
      const answer = await handle({
        headers: ctx.headers,
        method: ctx.method,
        body,
        stream: ctx.req,
      })
      ctx.set(answer.headers)
      // An explicit null, then the status: Koa would type an empty string as text/plain.
      ctx.body = answer.body === '' ? null : answer.body
      ctx.status = answer.status
    }
  const endpoints = { ...callbackEndpoints(gate, callback), ...signalEndpoint(callback) }
  const resourceMetadata: Middleware = async function tollgateResourceMetadata(ctx, next) {
    const metadata = gate.resourceMetadata(requestOf(ctx))
    if (metadata === undefined) return next()
    send(ctx, metadata)
  }
  return Object.assign(tollgateMiddleware, guards, endpoints, { gate, resourceMetadata })
}

// The helpers that build `issuers`, imported beside `tollgate()` in the guides. The rest of the
// core (createGate, types, errors) is `tollgate`'s: test/adapters/exports.test.ts holds the list.
export { auth0, cognito, entra, okta } from '../../src/providers/index.js'
export { keycloak } from '../../src/token/issuers.js'
export { type McpState, mcpGate } from './mcp.js'
export type { SignInMiddleware, SignInState } from './signin.js'
export { signIn } from './signin.js'
