/**
 * Express sign-in: `app.use(signIn(options))` answers the login, callback, logout, back-channel and
 * front-channel logout routes and sets `req.signin` on every other request. Translation only; the behaviour is `createSignIn()`'s.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import type { SignInOptions } from '../../src/signin/options.js'
import {
  createSignIn,
  type SignIn,
  type SignInContext,
  type SignInRequest,
  type SignInResponse,
} from '../../src/signin/signin.js'

declare global {
  namespace Express {
    interface Request {
      /** Set by `signIn()`: the signed-in user (or `undefined`) and `accessToken(product)`. */
      signin?: SignInContext
    }
  }
}

/** The middleware, with a guard for routes that need a user and the core behind it. */
export interface SignInMiddleware extends RequestHandler {
  /** A route guard: no user → redirect to sign in (pages) or 401 `login_required` (APIs). */
  requireSignIn(): RequestHandler
  readonly signIn: SignIn
}

function requestOf(req: Request): SignInRequest {
  return {
    method: req.method,
    url: req.originalUrl,
    headers: req.headers,
    body: req.body,
    stream: req,
  }
}

function send(res: Response, response: SignInResponse): void {
  res.status(response.status)
  for (const [name, value] of Object.entries(response.headers))
    res.setHeader(name, value as string | string[])
  res.end(response.body)
}

/**
 * Sign-in middleware for Express 4 and 5.
 *
 * @example
 * ```ts
 * const auth = signIn({ issuer, clientId: 'office-web', clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com', keys: fromEnv('SIGNIN_KEYS'), products: { office: { resource } } })
 * app.use(auth)
 * app.get('/records', auth.requireSignIn(), async (req, res) => {
 *   const token = await req.signin!.accessToken('office')
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function signIn(options: SignInOptions): SignInMiddleware {
  const core = createSignIn(options)

  function signInMiddleware(req: Request, res: Response, next: NextFunction): void {
    // Two-argument then: a throw in a later handler can never come back here. Writing the
    // response can throw (headers already sent by an earlier middleware): that goes to next(err),
    // never to an unhandled rejection.
    core.handle(requestOf(req)).then((outcome) => {
      try {
        if (outcome.response !== undefined) {
          send(res, outcome.response)
          return
        }
        req.signin = outcome.context
        for (const [name, values] of Object.entries(outcome.headers)) res.append(name, [...values])
      } catch (error) {
        next(error)
        return
      }
      next()
    }, next)
  }

  const requireSignIn = (): RequestHandler =>
    function tollgateRequireSignIn(req, res, next) {
      const refusal = core.requireUser(req.signin, requestOf(req))
      if (refusal !== undefined) return send(res, refusal)
      next()
    }

  return Object.assign(signInMiddleware, { requireSignIn, signIn: core })
}
