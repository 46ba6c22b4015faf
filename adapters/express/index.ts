/**
 * Express adapter (Express 4 and 5): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'

import { renderError } from '../../src/errors.js'
import { createGate, type Gate } from '../../src/gate.js'
import * as guards from '../../src/guards.js'
import type { GateOptions } from '../../src/options.js'
import type { Admission } from '../../src/types.js'

declare global {
  namespace Express {
    interface Request {
      /** Set by tollgate once the token is verified, the tenant resolved and its limit respected. */
      auth?: Admission
    }
  }
}

function refuse(
  error: unknown,
  res: Response,
  next: NextFunction,
  errorHandling: Gate['errorHandling'],
): void {
  if (errorHandling === 'framework') {
    next(error)
    return
  }
  const { status, headers, body } = renderError(error)
  res.status(status).set(headers).end(body)
}

/**
 * Middleware that admits a request (setting `req.auth` and rate-limit headers) or refuses it.
 * Refusals are answered with JSON `{ error, error_description }`, or passed to `next(err)` with
 * `errorHandling: 'framework'` (the error carries `status` and `headers` for Express's handler).
 *
 * @example
 * ```ts
 * app.use(tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'gateway' }))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): RequestHandler {
  const gate = createGate(options)
  return function tollgateMiddleware(req: Request, res: Response, next: NextFunction): void {
    const request = {
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      method: req.method,
      url: req.originalUrl,
      body: req.body,
    }
    // Two-argument then: a throw in a later handler can never come back here as a refusal.
    gate.check(request).then(
      (result) => {
        if (result.auth !== undefined) req.auth = result.auth
        res.set(result.headers)
        next()
      },
      (error: unknown) => refuse(error, res, next, gate.errorHandling),
    )
  }
}

function wrap(guard: guards.Guard): RequestHandler {
  return function tollgateGuard(req: Request, res: Response, next: NextFunction): void {
    try {
      guard(req.auth)
    } catch (error) {
      refuse(error, res, next, guards.contextOf(req.auth).errorHandling)
      return
    }
    next()
  }
}

/** Route middleware: 403 `insufficient_scope` unless the token has every one of `scopes`. */
export const requireScopes = (...scopes: string[]): RequestHandler =>
  wrap(guards.requireScopes(...scopes))
/** Route middleware: 403 `insufficient_scope` unless the token has at least one of `scopes`. */
export const requireAnyScope = (...scopes: string[]): RequestHandler =>
  wrap(guards.requireAnyScope(...scopes))
/** Route middleware: 403 unless Keycloak's `realm_access.roles` has every one of `roles`. */
export const requireRealmRoles = (...roles: string[]): RequestHandler =>
  wrap(guards.requireRealmRoles(...roles))
/** Route middleware: 403 unless `resource_access[clientId].roles` has every one of `roles`. */
export const requireClientRoles = (clientId: string, ...roles: string[]): RequestHandler =>
  wrap(guards.requireClientRoles(clientId, ...roles))

export * from '../../src/index.js'
