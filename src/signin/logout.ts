/**
 * The logout route: ends the session here, clears its cookie, and sends the browser to the
 * provider's end-session endpoint (RP-Initiated Logout) when it has one.
 *
 * @module
 */
import { methodNotAllowed, respond, type SignInDeps } from './deps.js'
import { isSignInError, SignInError } from './errors.js'
import type { SignInRequest, SignInResponse } from './internals.js'
import { openSession, storeKeyOf } from './session.js'
import { endSession } from './session-end.js'

/**
 * `true` when a browser says the request comes from another site: an `Origin` other than
 * `baseUrl`'s (`null` included), or `Sec-Fetch-Site: cross-site`. A request without either
 * (an old browser, a script) is not refused; `SameSite=Lax` keeps its cookie off cross-site POSTs.
 */
export function crossSite(request: SignInRequest, baseUrl: string): boolean {
  const header = (name: string) => {
    const value = request.headers[name]
    return Array.isArray(value) ? value.join(',') : value
  }
  const origin = header('origin')
  if (origin !== undefined && origin !== new URL(baseUrl).origin) return true
  return header('sec-fetch-site')?.trim().toLowerCase() === 'cross-site'
}

/** Answers the logout route (`POST`). */
export async function logout(deps: SignInDeps, request: SignInRequest): Promise<SignInResponse> {
  const { settings, provider, cookies } = deps
  if (request.method !== 'POST') return methodNotAllowed(deps, 'POST')
  // Logout CSRF: a form on another site must not sign the user out.
  if (crossSite(request, settings.baseUrl)) {
    throw new SignInError('ERR_SIGNIN_BAD_REQUEST', 'cross_site')
  }
  const keys = await deps.keyRing()
  const sessionId = deps.readSessionId(keys, request)
  let idToken: string | undefined
  if (sessionId !== undefined) {
    const key = storeKeyOf(sessionId)
    try {
      const raw = await deps.stored(settings.store.read(key, settings.idleTimeoutMs))
      const session = raw === undefined ? undefined : openSession(keys, sessionId, deps.issuer, raw)
      idToken = session?.idToken
      if (raw !== undefined) await endSession(deps, key, session, 'logout')
    } catch (error) {
      // The store is down (503): the user asked to sign out, so this browser's cookie goes
      // all the same; the stored session ends at its idle timeout.
      if (isSignInError(error)) return deps.errorResponse(error, [cookies.clearSession])
      throw error
    }
  }
  const parameters: Record<string, string> = {
    post_logout_redirect_uri: settings.postLogoutRedirectUri,
  }
  if (idToken !== undefined) parameters['id_token_hint'] = idToken
  const target = (await provider.endSessionUrl(parameters))?.href ?? settings.postLogoutRedirectUri
  return respond(303, { Location: target, 'Set-Cookie': [cookies.clearSession] })
}
