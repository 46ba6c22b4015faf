/**
 * The session of a request that is not a sign-in route: read from the store by the signed id
 * in its cookie, opened under the key ring, and handed to the application as a
 * {@link SignInContext} whose `accessToken()` refreshes through the refresher.
 *
 * @module
 */
import { readCookie } from './cookies.js'
import type { SignInDeps } from './deps.js'
import { isSignInError, SignInError } from './errors.js'
import type { SignInContext, SignInOutcome, SignInRequest } from './internals.js'
import type { KeyRing } from './key-ring.js'
import type { Refresher } from './refresh.js'
import { type OpenSession, openSession, sealedUnderUnknownKey, storeKeyOf } from './session.js'
import { endSession } from './session-end.js'
import { stepUpPath } from './step-up.js'

/** What loading a session needs besides the routes' shared parts. */
export interface SessionDeps extends SignInDeps {
  readonly refresher: Refresher
  /** The context of a request without a live session. */
  readonly anonymous: SignInContext
}

/** The context of a request without a live session: no user, `accessToken()` refuses. */
export function anonymousContext(loginPath: (returnTo?: string) => string): SignInContext {
  const context: SignInContext = {
    user: undefined,
    accessToken: async () => {
      throw new SignInError('ERR_SIGNIN_REQUIRED', 'no_session')
    },
    loginPath,
    stepUpPath: (options) => stepUpPath(loginPath, options),
  }
  return Object.freeze(context)
}

/** Reads and opens a session; a missing, unreadable or expired one ends with ERR_SIGNIN_REQUIRED. */
export async function readOpen(
  deps: SignInDeps,
  keys: KeyRing,
  sessionId: string,
  key: string,
): Promise<OpenSession> {
  const { settings } = deps
  const raw = await deps.stored(settings.store.read(key, settings.idleTimeoutMs))
  if (raw === undefined) throw new SignInError('ERR_SIGNIN_REQUIRED', 'no_session')
  const session = openSession(keys, sessionId, deps.issuer, raw)
  if (session === undefined && sealedUnderUnknownKey(keys, raw)) {
    // Sealed under a key this instance's ring does not hold yet (a rolling deploy adding a
    // key): not signed in here, but the session is left in the store for the instances that
    // can open it. A key retired from every ring leaves such sessions to their store expiry.
    throw new SignInError('ERR_SIGNIN_REQUIRED', 'session_key_unknown')
  }
  if (session === undefined) {
    // Tampered, another session's ciphertext, or a key no longer in the ring: fail closed.
    await endSession(deps, key, undefined, 'unreadable')
    throw new SignInError('ERR_SIGNIN_REQUIRED', 'session_unreadable')
  }
  if (settings.now() >= session.expiresAt) {
    await endSession(deps, key, session, 'expired')
    throw new SignInError('ERR_SIGNIN_REQUIRED', 'session_expired')
  }
  return session
}

/** The context of an open session; `accessToken()` keeps the session it last refreshed. */
function contextFor(
  deps: SessionDeps,
  keys: KeyRing,
  sessionId: string,
  key: string,
  session: OpenSession,
): SignInContext {
  const { settings, refresher } = deps
  let current = session
  return {
    user: Object.freeze({
      issuer: deps.issuer,
      subject: session.subject,
      sid: session.sid,
      claims: Object.freeze({ ...session.claims }),
    }),
    async accessToken(product) {
      const { name } = deps.productOf(product)
      if (refresher.fresh(current, name, settings.refreshBeforeExpiryMs)) {
        return (current.accessTokens[name] as { token: string }).token
      }
      current = await refresher.refreshed(keys, sessionId, key, name)
      const held = current.accessTokens[name]
      if (held === undefined || held.expiresAt < settings.now()) {
        throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'provider_unavailable')
      }
      return held.token
    },
    loginPath: deps.loginPath,
    stepUpPath: (options) => stepUpPath(deps.loginPath, options),
  }
}

/**
 * The session of any request that is not a sign-in route: its context, and a `Set-Cookie`
 * clearing the cookie of a session that ended.
 */
export async function loadSession(
  deps: SessionDeps,
  request: SignInRequest,
): Promise<SignInOutcome> {
  const { anonymous, emit } = deps
  const signed = readCookie(request.headers['cookie'], deps.settings.cookieName)
  if (signed === undefined) return { context: anonymous, headers: {} }
  const keys = await deps.keyRing()
  const sessionId = keys.verify(signed)
  const signedOut = { context: anonymous, headers: { 'Set-Cookie': [deps.cookies.clearSession] } }
  // Not signed in here, but the cookie is kept: it may be another instance's, signed or sealed
  // under a key this ring does not hold yet (a rolling deploy); a forged one is harmless.
  const notHere = { context: anonymous, headers: {} }
  if (sessionId === undefined) {
    // A cookie this ring did not sign (forged, altered, signed by a retired key or by a key
    // another instance already has).
    emit?.({
      type: 'signin_refused',
      code: 'ERR_SIGNIN_REQUIRED',
      reason: 'session_unreadable',
      error: undefined,
    })
    return notHere
  }
  const key = storeKeyOf(sessionId)
  try {
    const session = await readOpen(deps, keys, sessionId, key)
    return { context: contextFor(deps, keys, sessionId, key, session), headers: {} }
  } catch (error) {
    if (isSignInError(error) && error.reason === 'session_key_unknown') {
      emit?.({
        type: 'signin_refused',
        code: error.code,
        reason: error.reason,
        error: undefined,
      })
      return notHere
    }
    if (isSignInError(error) && error.code === 'ERR_SIGNIN_REQUIRED') return signedOut
    throw error
  }
}
