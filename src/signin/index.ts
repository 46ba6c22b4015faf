/**
 * `tollgate/signin`: sign-in for product backends, framework-neutral (the spec's Authorization
 * Code flow with PKCE): login, callback and logout routes, server-side sessions whose tokens are
 * encrypted at rest under a rotating key ring, access tokens per product refreshed before they
 * expire, once per session across instances. `signIn()` in `tollgate/express`, `tollgate/koa`,
 * `tollgate/fastify`, `tollgate/hono` and `tollgate/fetch` makes it middleware (a plugin, a
 * `Request` → `Response` wrapper). Protocol work is openid-client's.
 *
 * @module
 */

export type { TokenParameters } from '../client/parameters.js'
export type { EnvReference, SecretInput } from '../client/secrets.js'
export { fromEnv } from '../client/secrets.js'
export type { IssuerOptions, KeycloakOptions } from '../token/issuers.js'
export { keycloak } from '../token/issuers.js'
export type { ProviderErrorWords, SignInErrorCode, SignInRefusalReason } from './errors.js'
export { isSignInError, SignInError } from './errors.js'
export type {
  RefreshRefusal,
  SessionEndReason,
  SignInEvent,
  SignInEventListener,
} from './events.js'
export type { SignInKey } from './key-ring.js'
export type {
  SessionOptions,
  SessionRefreshOptions,
  SignInOptions,
  SignInRoutes,
} from './options.js'
export type { RedisSessionStoreOptions } from './redis-store.js'
export { createRedisSessionStore } from './redis-store.js'
export type {
  SignedInUser,
  SignIn,
  SignInContext,
  SignInOutcome,
  SignInRequest,
  SignInResponse,
} from './signin.js'
export { createSignIn } from './signin.js'
export type { StepUpOptions } from './step-up.js'
export type { MemorySessionStore, MemorySessionStoreOptions, SessionStore } from './store.js'
export { createMemorySessionStore } from './store.js'
