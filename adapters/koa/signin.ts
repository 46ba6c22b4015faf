/**
 * Koa sign-in: `app.use(signIn(options))` answers the login, callback, logout, back-channel and
 * front-channel logout routes and sets `ctx.state.signin` on every other request. Translation only; the behaviour is `createSignIn()`'s.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'

import type { SignInOptions } from '../../src/signin/options.js'
import {
  createSignIn,
  type SignIn,
  type SignInContext,
  type SignInRequest,
  type SignInResponse,
} from '../../src/signin/signin.js'

/** What `signIn()` adds to `ctx.state`. */
export interface SignInState {
  /** The signed-in user (or `undefined`) and `accessToken(product)`. */
  signin?: SignInContext
}

/** The middleware, with a guard for routes that need a user and the core behind it. */
export interface SignInMiddleware extends Middleware<SignInState> {
  /** A route guard: no user → redirect to sign in (pages) or 401 `login_required` (APIs). */
  requireSignIn(): Middleware<SignInState>
  readonly signIn: SignIn
}

function requestOf(ctx: Context): SignInRequest {
  const body = (ctx.request as { body?: unknown }).body
  return { method: ctx.method, url: ctx.originalUrl, headers: ctx.headers, body, stream: ctx.req }
}

function send(ctx: Context, response: SignInResponse): void {
  ctx.set(response.headers as Record<string, string | string[]>)
  if (response.body === '') {
    // A redirect has no body. Assigning '' makes Koa add `Content-Type: text/plain`, and leaving
    // the body unset makes it write the status message: an explicit null sends neither. The
    // length says 0 as Node's `res.end('')` under Express does (Koa 2 leaves it out), except on
    // HEAD, where Node sends none. Null turns the status to 204: it is set after.
    ctx.body = null
    if (ctx.method !== 'HEAD') ctx.length = 0
  } else {
    ctx.body = response.body
  }
  ctx.status = response.status
}

/**
 * Sign-in middleware for Koa 2 and 3.
 *
 * @example
 * ```ts
 * const auth = signIn({ issuer, clientId: 'office-web', clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com', keys: fromEnv('SIGNIN_KEYS'), products: { office: { resource } } })
 * app.use(auth)
 * router.get('/records', auth.requireSignIn(), async (ctx) => {
 *   const token = await ctx.state.signin!.accessToken('office')
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function signIn(options: SignInOptions): SignInMiddleware {
  const core = createSignIn(options)

  const signInMiddleware: Middleware<SignInState> = async function signInMiddleware(ctx, next) {
    const outcome = await core.handle(requestOf(ctx))
    if (outcome.response !== undefined) return send(ctx, outcome.response)
    ctx.state.signin = outcome.context
    for (const [name, values] of Object.entries(outcome.headers)) ctx.append(name, [...values])
    await next()
  }

  const requireSignIn = (): Middleware<SignInState> =>
    async function tollgateRequireSignIn(ctx, next) {
      const refusal = core.requireUser(ctx.state.signin, requestOf(ctx))
      if (refusal !== undefined) return send(ctx, refusal)
      await next()
    }

  return Object.assign(signInMiddleware, { requireSignIn, signIn: core })
}
