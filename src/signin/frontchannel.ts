/**
 * OpenID Connect Front-Channel Logout 1.0 for sign-in, for providers without back-channel
 * logout: when a user signs out at the provider (or in another application of that provider
 * session), the provider's logout page loads this route in an iframe with `iss` and `sid` (§2,
 * the client registered with `frontchannel_logout_session_required`), and the sessions of that
 * provider session end here, found by their `sid` index as a back-channel logout finds them.
 *
 * The request carries no proof (no signed token, and in a cross-site iframe no cookie): a `sid`
 * (the provider's opaque session id, in no URL but this one) names what ends, and `iss`, when
 * sent, must be this sign-in's issuer. Microsoft Entra sends `sid` alone: the spec wants `iss`
 * because a `sid` is unique per issuer only, and a sign-in has one issuer, under which the `sid`
 * is looked up. Without `sid` nothing ends: the spec's fallback, the session of the cookie, would
 * let any page that frames this route sign a user out.
 *
 * @module
 */
import { methodNotAllowed, type SignInDeps } from './deps.js'
import { SignInError } from './errors.js'
import type { SessionEnder, SignInRequest, SignInResponse } from './internals.js'

/** A provider's session id is short and opaque (oidc-provider's: 21 characters). */
const SID = /^[\x21-\x7E]{1,255}$/

const PAGE = '<!doctype html>\n<html lang="en"><head><title>Signed out</title></head></html>\n'

/** Answers the front-channel logout route (`GET ?iss=…&sid=…`). */
export async function frontChannelLogout(
  deps: SignInDeps,
  sessions: SessionEnder,
  request: SignInRequest,
  url: URL,
): Promise<SignInResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(deps, 'GET')
  const iss = url.searchParams.getAll('iss')
  const sid = url.searchParams.getAll('sid')
  // §2: with frontchannel_logout_session_required, both are sent, each once (Entra: sid only).
  if (iss.length > 1 || sid.length !== 1 || !SID.test(sid[0] as string)) {
    throw new SignInError('ERR_SIGNIN_BAD_REQUEST', 'front_channel_request')
  }
  if (iss.length === 1 && iss[0] !== deps.issuer) {
    throw new SignInError('ERR_SIGNIN_BAD_REQUEST', 'front_channel_issuer')
  }
  await sessions.endSessions(deps.issuer, { sid: sid[0] }, 'front_channel_logout')
  return {
    status: 200,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      // §4: the answer must not be cached (a cached one would end nothing the next time).
      'Cache-Control': 'no-cache, no-store',
      Pragma: 'no-cache',
      // The provider's logout page frames it: its origins only (the issuer's, the end-session
      // endpoint's). frame-ancestors overrides an X-Frame-Options the application sets on every
      // answer (CSP Level 3 §6.4.2), so that page can show it.
      'Content-Security-Policy': `default-src 'none'; frame-ancestors ${(await deps.provider.logoutPageOrigins()).join(' ')}`,
    },
    body: PAGE,
  }
}
