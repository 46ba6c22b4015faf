/**
 * Hono sign-in: `app.use(signIn(options))` answers the login, callback, logout, back-channel and
 * front-channel logout routes and sets `c.var.signin` on every other request. Translation only (through the
 * Fetch adapter's); the behaviour is `createSignIn()`'s.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from 'hono'

import type { SignInOptions } from '../../src/signin/options.js'
import { createSignIn, type SignIn, type SignInContext } from '../../src/signin/signin.js'
import { responseOfSignIn, signInRequestOfFetch } from '../fetch/signin.js'

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by `signIn()`: the signed-in user (or `undefined`) and `accessToken(product)`. */
    signin: SignInContext | undefined
  }
}

/** What `signIn()` adds to a Hono app's variables, for `new Hono<SignInEnv>()` where wanted. */
export interface SignInEnv {
  Variables: { signin: SignInContext | undefined }
}

/** The middleware, with a guard for routes that need a user and the core behind it. */
export interface SignInMiddleware extends MiddlewareHandler {
  /** A route guard: no user → redirect to sign in (pages) or 401 `login_required` (APIs). */
  requireSignIn(): MiddlewareHandler
  readonly signIn: SignIn
}

/**
 * The request as sign-in sees it. When the application read the body before this middleware
 * (`c.req.parseBody()` and the like), the stream is gone: its text comes from Hono's cache, so
 * that the back-channel logout route still finds its `logout_token` (and a repeated one).
 */
async function requestOf(c: Context) {
  const raw = c.req.raw
  const body = raw.bodyUsed ? await c.req.text().catch(() => undefined) : undefined
  return signInRequestOfFetch(raw, body)
}

/**
 * Sign-in middleware for Hono 4.
 *
 * @example
 * ```ts
 * const auth = signIn({ issuer, clientId: 'office-web', clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com', keys: fromEnv('SIGNIN_KEYS'), products: { office: { resource } } })
 * app.use(auth)
 * app.get('/records', auth.requireSignIn(), async (c) => {
 *   const token = await c.var.signin!.accessToken('office')
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function signIn(options: SignInOptions): SignInMiddleware {
  const core = createSignIn(options)

  const signInMiddleware: MiddlewareHandler = async function signInMiddleware(c, next) {
    const outcome = await core.handle(await requestOf(c))
    if (outcome.response !== undefined) return responseOfSignIn(outcome.response)
    c.set('signin', outcome.context)
    await next()
    // After the handler: Hono keeps headers set earlier only on responses built through `c`, and
    // a handler may return a `Response` of its own. A guard's refusal gets them too, as in Express.
    for (const [name, values] of Object.entries(outcome.headers)) {
      for (const value of values) c.header(name, value, { append: true })
    }
  }

  const requireSignIn = (): MiddlewareHandler =>
    async function tollgateRequireSignIn(c, next) {
      const refusal = core.requireUser(c.get('signin'), signInRequestOfFetch(c.req.raw))
      if (refusal !== undefined) return responseOfSignIn(refusal)
      await next()
    }

  return Object.assign(signInMiddleware, { requireSignIn, signIn: core })
}
