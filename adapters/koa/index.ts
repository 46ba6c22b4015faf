/**
 * Koa adapter (Koa 2 and 3): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'

import { renderError } from '../../src/errors.js'
import { createGate } from '../../src/gate.js'
import { contextOf, type Guard, guardMiddleware } from '../../src/guards.js'
import type { GateOptions } from '../../src/options.js'
import type { Admission, CheckResult } from '../../src/types.js'

/** What tollgate adds to `ctx.state`. */
export interface TollgateState {
  /** Set once the token is verified, the tenant resolved and its limit respected. */
  auth?: Admission
}

function refuse(error: unknown, ctx: Context, mode: 'respond' | 'framework'): void {
  if (mode === 'framework') throw error
  const { status, headers, body } = renderError(error)
  ctx.status = status
  ctx.set(headers)
  ctx.body = body
}

/**
 * Middleware that admits a request (setting `ctx.state.auth` and rate-limit headers) or refuses
 * it. Refusals are answered with JSON `{ error, error_description }`, or thrown to Koa's error
 * handling with `errorHandling: 'framework'` (the error carries `status`, `headers` and `expose`).
 *
 * @example
 * ```ts
 * app.use(tollgate({ issuers: keycloak({ authUrl, realms: ['acme'] }), audience: 'office' }))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function tollgate(options: GateOptions): Middleware<TollgateState> {
  const gate = createGate(options)
  return async function tollgateMiddleware(ctx, next) {
    const { headers, method, originalUrl: url } = ctx
    const body = (ctx.request as { body?: unknown }).body
    let result: CheckResult
    try {
      result = await gate.check({ headers, rawHeaders: ctx.req.rawHeaders, method, url, body })
    } catch (error) {
      return refuse(error, ctx, gate.errorHandling)
    }
    if (result.auth !== undefined) ctx.state.auth = result.auth
    ctx.set(result.headers)
    await next()
  }
}

export const { requireScopes, requireAnyScope, requireRealmRoles, requireClientRoles } =
  guardMiddleware(
    (guard: Guard): Middleware<TollgateState> =>
      async function tollgateGuard(ctx, next) {
        try {
          guard(ctx.state.auth)
        } catch (error) {
          return refuse(error, ctx, contextOf(ctx.state.auth).errorHandling)
        }
        await next()
      },
  )

export * from '../../src/index.js'
