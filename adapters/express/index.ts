/**
 * Express adapter (Express 4 and 5): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'

import { renderError } from '../../src/errors.js'
import { type Gate, openGate, Refused } from '../../src/gate/gate.js'
import { Decisions, type GuardMiddlewareFactories, guardMiddleware } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation/callbacks.js'
import { type Handle, type SignalEndpoint, signalEndpoint } from '../../src/signals/endpoint.js'
import type { Admission, CheckResult } from '../../src/types.js'
import { admitOn, keepHeaders, requestOf, send } from './translate.js'

declare global {
  namespace Express {
    interface Request {
      /** Set by tollgate once the token is verified, the tenant resolved and its limit respected. */
      auth?: Admission
    }
  }
}

/** The middleware, with the gate behind it and route guards that answer exactly as it does. */
export interface TollgateMiddleware
  extends RequestHandler,
    GuardMiddlewareFactories<RequestHandler>,
    CallbackEndpoints<RequestHandler>,
    SignalEndpoint<RequestHandler> {
  /** The gate: `ready()`, `refresh()`, `close()`, `revoke()`, `unrevoke()` for operations. */
  readonly gate: Gate
  /**
   * Serves the RFC 9728 metadata document (`resourceMetadata` option) and passes every other
   * request on: mount it at the app level when the gate itself only guards a sub-path.
   */
  readonly resourceMetadata: RequestHandler
}

/**
 * Middleware that admits a request (setting `req.auth` and rate-limit headers) or refuses it.
 * Refusals are answered with JSON `{ error, error_description }`, or passed to `next(err)` with
 * `errorHandling: 'framework'` (the error carries `status` and `headers` for Express's handler).
 * Its guards (`requireScopes(…)` and the others) run it first when it has not decided on the
 * request, so a guard protects a route on its own; the gate decides once per request.
 *
 * @example
 * ```ts
 * const auth = tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'gateway' })
 * app.use(auth)
 * app.get('/billing', auth.requireScopes('billing:read'), handler)
 * app.get('/ready', async (_req, res) => res.status((await auth.gate.ready()).ready ? 200 : 503).end())
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): TollgateMiddleware {
  const { gate, decide } = openGate(options)
  const decisions = new Decisions<Request>()
  const refuse = (error: unknown, res: Response, next: NextFunction): void => {
    if (gate.errorHandling === 'framework') {
      // Set now: an application's handler that sets only the status and a body keeps them.
      keepHeaders(res, error)
      return void next(error)
    }
    send(res, renderError(error))
  }
  /** What follows an admission: the next handler (the middleware), or a guard's check. */
  type Then = (req: Request, res: Response, result: CheckResult, next: NextFunction) => void
  const proceed: Then = (_req, _res, _result, next) => next()
  const admit = (
    req: Request,
    res: Response,
    result: CheckResult,
    next: NextFunction,
    then: Then,
  ): void => {
    // Answered while the keys were being fetched (a timeout middleware): nothing is left to do.
    if (res.headersSent) return
    decisions.remember(req, result)
    admitOn(req, res, result)
    then(req, res, result, next)
  }
  function decideThen(
    req: Request,
    res: Response,
    next: NextFunction,
    then: Then,
    scope?: string,
  ): void {
    const request = requestOf(req, scope)
    const metadata = gate.resourceMetadata(request)
    if (metadata !== undefined) return void send(res, metadata)
    // A decision that needed no I/O goes on at once, as any synchronous middleware.
    const decided = decide(request)
    if (decided instanceof Refused) return void refuse(decided.error, res, next)
    if (!(decided instanceof Promise)) return void admit(req, res, decided, next, then)
    // Two-argument then: a throw in a later handler can never come back here as a refusal.
    decided.then(
      (result) => admit(req, res, result, next, then),
      (error: unknown) => refuse(error, res, next),
    )
  }

  function tollgateMiddleware(req: Request, res: Response, next: NextFunction): void {
    // Decided already (a guard of this gate ran it, or the middleware is mounted twice).
    if (decisions.of(req) !== undefined) return void next()
    decideThen(req, res, next, proceed)
  }

  const guards = guardMiddleware((guard): RequestHandler => {
    const check: Then = (req, res, result, next) => {
      try {
        gate.authorize(guard, result.auth, requestOf(req, guard.scope))
      } catch (error) {
        return refuse(error, res, next)
      }
      next()
    }
    return function tollgateGuard(req, res, next) {
      const result = decisions.of(req)
      // The gate has not decided on this request (a route guarded on its own): it decides first.
      // Its refusals name the guard's scopes.
      if (result === undefined) return decideThen(req, res, next, check, guard.scope)
      check(req, res, result, next)
    }
  })
  const callback = (handle: Handle): RequestHandler =>
    function tollgateCallback(req, res, next) {
      const { headers, method, body } = req
      handle({ headers, method, body, stream: req }).then(
        (answer) => res.status(answer.status).set(answer.headers).end(answer.body),
        next,
      )
    }
  const endpoints = { ...callbackEndpoints(gate, callback), ...signalEndpoint(callback) }
  const resourceMetadata: RequestHandler = function tollgateResourceMetadata(req, res, next) {
    const metadata = gate.resourceMetadata(requestOf(req))
    if (metadata === undefined) return next()
    send(res, metadata)
  }
  return Object.assign(tollgateMiddleware, guards, endpoints, { gate, resourceMetadata })
}

// The helpers that build `issuers`, imported beside `tollgate()` in the guides. The rest of the
// core (createGate, types, errors) is `tollgate`'s: test/adapters/exports.test.ts holds the list.
export { auth0, cognito, entra, okta } from '../../src/providers/index.js'
export { keycloak } from '../../src/token/issuers.js'
export { mcpGate } from './mcp.js'
export type { SignInMiddleware } from './signin.js'
export { signIn } from './signin.js'
