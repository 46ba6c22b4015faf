/**
 * Koa adapter (Koa 2 and 3): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'

import { renderError } from '../../src/errors.js'
import { createGate } from '../../src/gate.js'
import * as guards from '../../src/guards.js'
import type { GateOptions } from '../../src/options.js'
import type { Admission } from '../../src/types.js'

/** What tollgate adds to `ctx.state`. */
export interface TollgateState {
  /** Set once the token is verified, the tenant resolved and its limit respected. */
  auth?: Admission
}

function refuse(error: unknown, ctx: Context, errorHandling: 'respond' | 'framework'): void {
  if (errorHandling === 'framework') throw error
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
    let result: Awaited<ReturnType<typeof gate.check>>
    try {
      const body = (ctx.request as { body?: unknown }).body
      result = await gate.check({
        headers: ctx.headers,
        rawHeaders: ctx.req.rawHeaders,
        method: ctx.method,
        url: ctx.originalUrl,
        body,
      })
    } catch (error) {
      return refuse(error, ctx, gate.errorHandling)
    }
    if (result.auth !== undefined) ctx.state.auth = result.auth
    ctx.set(result.headers)
    await next()
  }
}

function wrap(guard: guards.Guard): Middleware<TollgateState> {
  return async function tollgateGuard(ctx, next) {
    try {
      guard(ctx.state.auth)
    } catch (error) {
      return refuse(error, ctx, guards.contextOf(ctx.state.auth).errorHandling)
    }
    await next()
  }
}

/** Route middleware: 403 `insufficient_scope` unless the token has every one of `scopes`. */
export const requireScopes = (...scopes: string[]): Middleware<TollgateState> =>
  wrap(guards.requireScopes(...scopes))
/** Route middleware: 403 `insufficient_scope` unless the token has at least one of `scopes`. */
export const requireAnyScope = (...scopes: string[]): Middleware<TollgateState> =>
  wrap(guards.requireAnyScope(...scopes))
/** Route middleware: 403 unless Keycloak's `realm_access.roles` has every one of `roles`. */
export const requireRealmRoles = (...roles: string[]): Middleware<TollgateState> =>
  wrap(guards.requireRealmRoles(...roles))
/** Route middleware: 403 unless `resource_access[clientId].roles` has every one of `roles`. */
export const requireClientRoles = (
  clientId: string,
  ...roles: string[]
): Middleware<TollgateState> => wrap(guards.requireClientRoles(clientId, ...roles))

export * from '../../src/index.js'
