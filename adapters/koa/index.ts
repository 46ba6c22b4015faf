/**
 * Koa adapter (Koa 2 and 3): `app.use(tollgate(options))`.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'

import { type ErrorResponse, renderError } from '../../src/errors.js'
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
  /**
   * Serves the RFC 9728 metadata document (`resourceMetadata` option) and passes every other
   * request on: mount it at the app level when the gate itself only guards some routes.
   */
  readonly resourceMetadata: Middleware
}

function requestOf(ctx: Context): RequestLike {
  const { headers, method, originalUrl: url } = ctx
  const body = (ctx.request as { body?: unknown }).body
  const secure = (ctx.req.socket as { encrypted?: boolean }).encrypted === true
  return { headers, rawHeaders: ctx.req.rawHeaders, method, url, body, secure }
}

function send(ctx: Context, { status, headers, body }: ErrorResponse): void {
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
    send(ctx, renderError(error))
  }

  const tollgateMiddleware: Middleware<TollgateState> = async function tollgateMiddleware(
    ctx,
    next,
  ) {
    const request = requestOf(ctx)
    const metadata = gate.resourceMetadata(request)
    if (metadata !== undefined) return send(ctx, metadata)
    let result: CheckResult
    try {
      result = await gate.check(request)
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
  const resourceMetadata: Middleware = async function tollgateResourceMetadata(ctx, next) {
    const metadata = gate.resourceMetadata(requestOf(ctx))
    if (metadata === undefined) return next()
    send(ctx, metadata)
  }
  return Object.assign(tollgateMiddleware, guards, endpoints, { gate, resourceMetadata })
}

export * from '../../src/index.js'
export type { SignInMiddleware, SignInState } from './signin.js'
export { signIn } from './signin.js'
