/**
 * Fastify sign-in (Fastify 4 and 5): `app.register(signIn(options))` answers the login, callback,
 * logout, back-channel and front-channel logout routes and sets `request.signin` on every other
 * request.
 * Translation only; the behaviour is `createSignIn()`'s.
 *
 * @module
 */
import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify'
import fastifyPlugin from 'fastify-plugin'

import type { SignInOptions } from '../../src/signin/options.js'
import {
  createSignIn,
  type SignIn,
  type SignInContext,
  type SignInRequest,
  type SignInResponse,
} from '../../src/signin/signin.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `signIn()`: the signed-in user (or `undefined`) and `accessToken(product)`. */
    signin: SignInContext | undefined
  }
}

/** A hook in callback style: a `preHandler` for a route's `preHandler` option. */
export type SignInHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void

/** The plugin, with a guard for routes that need a user and the core behind it. */
export interface SignInPlugin extends FastifyPluginCallback {
  /** A route guard: no user → redirect to sign in (pages) or 401 `login_required` (APIs). */
  requireSignIn(): SignInHook
  readonly signIn: SignIn
}

/**
 * The request as sign-in sees it. In `onRequest` no parser has run: the back-channel logout route
 * reads the raw stream, so it needs no form parser of the application's.
 */
function requestOf(request: FastifyRequest): SignInRequest {
  const { headers, method, url, body, raw } = request
  return { method, url, headers, body, stream: raw }
}

function send(reply: FastifyReply, { status, headers, body }: SignInResponse): void {
  // No payload for an empty body: Fastify would give a string one a text/plain type.
  reply
    .code(status)
    .headers(headers as Record<string, string | string[]>)
    .send(body === '' ? undefined : body)
}

/**
 * A Fastify plugin that answers the sign-in routes and loads the session of every other request,
 * in an `onRequest` hook (so a sign-in route answers every method, as in Express: 405 with
 * `Allow` for the wrong one, and needs no route of the application's). Wrapped with
 * fastify-plugin: the hook applies to the context it is registered in and its children; register
 * it at the root so that the sign-in routes are found.
 *
 * @example
 * ```ts
 * const auth = signIn({ issuer, clientId: 'office-web', clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com', keys: fromEnv('SIGNIN_KEYS'), products: { office: { resource } } })
 * await app.register(auth)
 * app.get('/records', { preHandler: auth.requireSignIn() }, async (request) => {
 *   const token = await request.signin!.accessToken('office')
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function signIn(options: SignInOptions): SignInPlugin {
  const core = createSignIn(options)

  function tollgateSignIn(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    // Two-argument then: a throw in a later hook can never come back here.
    core.handle(requestOf(request)).then(
      (outcome) => {
        if (outcome.response !== undefined) return send(reply, outcome.response)
        request.signin = outcome.context
        for (const [name, values] of Object.entries(outcome.headers)) {
          reply.header(name, [...values])
        }
        done()
      },
      (error: unknown) => done(error as Error),
    )
  }

  function plugin(instance: FastifyInstance, _options: unknown, done: (error?: Error) => void) {
    if (!instance.hasRequestDecorator('signin')) instance.decorateRequest('signin', undefined)
    instance.addHook('onRequest', tollgateSignIn)
    done()
  }

  const requireSignIn = (): SignInHook =>
    function tollgateRequireSignIn(request, reply, done) {
      const refusal = core.requireUser(request.signin, requestOf(request))
      if (refusal !== undefined) return send(reply, refusal)
      done()
    }

  const wrapped = fastifyPlugin(plugin, { name: 'tollgate-signin' })
  return Object.assign(wrapped, { requireSignIn, signIn: core })
}
