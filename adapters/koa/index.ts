/**
 * Koa adapter (Koa 2 and 3): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'

import { renderError } from '../../src/errors.js'
import { createGate, type Gate } from '../../src/gate.js'
import { type GuardMiddlewareFactories, guardMiddleware } from '../../src/guards.js'
import type { GateOptions } from '../../src/options.js'
import { type CallbackEndpoints, callbackEndpoints } from '../../src/revocation-callbacks.js'
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
    CallbackEndpoints<Middleware<TollgateState>> {
  /** The gate: `ready()`, `refresh()`, `close()`, `revoke()`, `unrevoke()` for operations. */
  readonly gate: Gate
}

function requestOf(ctx: Context): RequestLike {
  const { headers, method, originalUrl: url } = ctx
  const body = (ctx.request as { body?: unknown }).body
  return { headers, rawHeaders: ctx.req.rawHeaders, method, url, body }
}

/**
 * Middleware that admits a request (setting `ctx.state.auth` and rate-limit headers) or refuses
 * it. Refusals are answered with JSON `{ error, error_description }`, or thrown to Koa's error
 * handling with `errorHandling: 'framework'` (the error carries `status`, `headers` and `expose`).
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
  const gate = createGate(options)
  const refuse = (error: unknown, ctx: Context): void => {
    if (gate.errorHandling === 'framework') throw error
    const { status, headers, body } = renderError(error)
    ctx.status = status
    ctx.set(headers)
    ctx.body = body
  }

  const tollgateMiddleware: Middleware<TollgateState> = async function tollgateMiddleware(
    ctx,
    next,
  ) {
    let result: CheckResult
    try {
      result = await gate.check(requestOf(ctx))
    } catch (error) {
      return refuse(error, ctx)
    }
    if (result.auth !== undefined) ctx.state.auth = result.auth
    ctx.set(result.headers)
    await next()
  }

  const guards = guardMiddleware(
    (guard): Middleware<TollgateState> =>
      async function tollgateGuard(ctx, next) {
        try {
          gate.authorize(guard, ctx.state.auth, requestOf(ctx))
        } catch (error) {
          return refuse(error, ctx)
        }
        await next()
      },
  )
  const endpoints = callbackEndpoints(
    gate,
    (handle): Middleware<TollgateState> =>
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
      },
  )
  return Object.assign(tollgateMiddleware, guards, endpoints, { gate })
}

export * from '../../src/index.js'
