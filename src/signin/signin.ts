/**
 * `createSignIn()`: sign-in for a product backend (OAuth 2.0 Authorization Code with PKCE, OpenID
 * Connect), framework-neutral. It answers the login, callback and logout routes, loads the
 * session of every other request, and hands handlers the user's access tokens, refreshed before
 * they expire, one refresh per session however many requests, tabs or instances ask at once.
 * `tollgate/express`, `tollgate/koa`, `tollgate/fastify`, `tollgate/hono` and `tollgate/fetch`
 * translate requests and responses, nothing more.
 *
 * Each route is a function of its own (`login.ts`, `callback.ts`, `logout.ts`,
 * `backchannel.ts`, `frontchannel.ts`, `session-context.ts`, `require-user.ts`) taking the parts it shares with the
 * others (`deps.ts`); this file validates the options and wires them.
 *
 * @module
 */
import { createBackChannelLogout } from './backchannel.js'
import { callback } from './callback.js'
import { createSignInDeps } from './deps.js'
import { isSignInError } from './errors.js'
import { frontChannelLogout } from './frontchannel.js'
import type {
  SignInContext,
  SignInInternals,
  SignInOutcome,
  SignInRequest,
  SignInResponse,
} from './internals.js'
import { login } from './login.js'
import { logout } from './logout.js'
import { normalizeSignInOptions, type SignInOptions } from './options.js'
import { createRefresher } from './refresh.js'
import { requireUser } from './require-user.js'
import { anonymousContext, loadSession, readOpen, type SessionDeps } from './session-context.js'
import { endSession, sessionEnder } from './session-end.js'

export type {
  SessionEnder,
  SignedInUser,
  SignInContext,
  SignInInternals,
  SignInOutcome,
  SignInRequest,
  SignInResponse,
} from './internals.js'
export { KEY_RING_REREAD_MS } from './key-source.js'

/** Sign-in, framework-neutral. */
export interface SignIn {
  /** Answers a sign-in route, or loads the session of any other request. */
  handle(request: SignInRequest): Promise<SignInOutcome>
  /** `undefined` when the request has a user; otherwise a redirect to sign in (pages) or a 401 (APIs). */
  requireUser(
    context: SignInContext | undefined,
    request: SignInRequest,
  ): SignInResponse | undefined
  /** The redirect URI to register at the provider. */
  readonly redirectUri: string
}

/**
 * Creates sign-in. Validates the options; reads the key ring and contacts the provider on the
 * first request that needs them.
 *
 * @example
 * ```ts
 * import { createRedisSessionStore, createSignIn, fromEnv, keycloak } from 'tollgate/signin'
 *
 * const signIn = createSignIn({
 *   issuer: keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' }),
 *   clientId: 'office-web',
 *   clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com',
 *   keys: fromEnv('SIGNIN_KEYS'),
 *   store: createRedisSessionStore({ redis }),
 *   products: { office: { resource: 'https://office.example.com' } },
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid (naming the option, never a secret).
 */
export function createSignIn(options: SignInOptions): SignIn {
  const settings = normalizeSignInOptions(options)
  const { routes } = settings
  const deps = createSignInDeps(settings)
  const { provider, emit } = deps
  const backChannel = createBackChannelLogout(() => provider.jwksUri())
  const internals: SignInInternals = { sessions: sessionEnder(deps), settings, emit }
  const refresher = createRefresher({
    settings,
    provider,
    emit,
    stored: deps.stored,
    readOpen: (keys, sessionId, key) => readOpen(deps, keys, sessionId, key),
    endSession: (key, session, reason, refusal) =>
      endSession(deps, key, session, reason, [], refusal),
    parametersOf: (product) => deps.productOf(product === '' ? undefined : product).parameters,
  })
  const sessionDeps: SessionDeps = {
    ...deps,
    refresher,
    anonymous: anonymousContext(deps.loginPath),
  }

  const signIn: SignIn = {
    redirectUri: settings.redirectUri,
    async handle(request) {
      const path = new URL(
        `${settings.baseUrl}${request.url.startsWith('/') ? '' : '/'}${request.url}`,
      )
      try {
        switch (path.pathname) {
          case routes.login:
            return { response: await login(deps, request, path) }
          case routes.callback:
            return { response: await callback(deps, request, path) }
          case routes.logout:
            return { response: await logout(deps, request) }
          case routes.backChannelLogout:
            return { response: await backChannel(internals, request) }
          case routes.frontChannelLogout:
            return {
              response: await frontChannelLogout(deps, internals.sessions, request, path),
            }
        }
        return await loadSession(sessionDeps, request)
      } catch (error) {
        if (isSignInError(error)) return { response: deps.errorResponse(error) }
        throw error
      }
    },
    requireUser: (context, request) => requireUser(deps, context, request),
  }
  return Object.freeze(signIn)
}
