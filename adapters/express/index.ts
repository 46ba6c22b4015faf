/**
 * Express adapter (Express 4 and 5): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'

import { renderError } from '../../src/errors.js'
import { createGate } from '../../src/gate.js'
import { contextOf, type Guard, guardMiddleware } from '../../src/guards.js'
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
  mode: 'respond' | 'framework',
): void {
  if (mode === 'framework') return void next(error)
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
    const { headers, rawHeaders, method, originalUrl: url, body } = req
    // Two-argument then: a throw in a later handler can never come back here as a refusal.
    gate.check({ headers, rawHeaders, method, url, body }).then(
      (result) => {
        if (result.auth !== undefined) req.auth = result.auth
        for (const name in result.headers) res.setHeader(name, result.headers[name] as string)
        next()
      },
      (error: unknown) => refuse(error, res, next, gate.errorHandling),
    )
  }
}

export const { requireScopes, requireAnyScope, requireRealmRoles, requireClientRoles } =
  guardMiddleware(
    (guard: Guard): RequestHandler =>
      function tollgateGuard(req, res, next) {
        try {
          guard(req.auth)
        } catch (error) {
          return refuse(error, res, next, contextOf(req.auth).errorHandling)
        }
        next()
      },
  )

export * from '../../src/index.js'
