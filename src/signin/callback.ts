/**
 * The callback route: completes the sign-in this browser started (its transaction cookie),
 * exchanges the code, and opens a new session under a new id.
 *
 * @module
 */

import { methodNotAllowed, respond, type SignInDeps } from './deps.js'
import { isSignInError, SignInError } from './errors.js'
import type { SignInRequest, SignInResponse } from './internals.js'
import {
  newSessionId,
  type OpenSession,
  PROFILE_CLAIMS,
  sealSession,
  storeKeyOf,
} from './session.js'
import { indexesOf } from './session-end.js'
import { checkAcr, checkAuthTime } from './step-up.js'
import { readTransactions, sealTransactions, TRANSACTION_SECONDS } from './transactions.js'

/** Answers the callback route (`GET ?code=…&state=…`, or the provider's error). */
export async function callback(
  deps: SignInDeps,
  request: SignInRequest,
  url: URL,
): Promise<SignInResponse> {
  const { settings, provider, issuer, cookies: cookie, stored } = deps
  const { store, now } = settings
  if (request.method !== 'GET') return methodNotAllowed(deps, 'GET')
  const cookies = [cookie.transaction('', 0)]
  try {
    const keys = await deps.keyRing()
    const transactions = readTransactions(keys, request, settings.transactionCookieName, now)
    if (transactions.length === 0) {
      throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'transaction_missing')
    }
    // The sign-in this callback answers; openid-client checks the state again below.
    const state = url.searchParams.get('state')
    const transaction = transactions.find((item) => item.s === state)
    // Its own reason, apart from openid-client's `state` check below, so that a test can tell
    // which layer refused.
    if (transaction === undefined) {
      throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'state_unknown')
    }
    // Used once, whatever the outcome; the other tabs' sign-ins stay.
    const others = transactions.filter((item) => item !== transaction)
    if (others.length > 0) {
      cookies[0] = cookie.transaction(sealTransactions(keys, others), TRANSACTION_SECONDS)
    }
    const callbackUrl = new URL(settings.redirectUri)
    callbackUrl.search = url.search
    const { name, parameters } = deps.productOf(undefined)
    const tokens = await provider.exchangeCode(
      callbackUrl,
      {
        state: transaction.s,
        nonce: transaction.n,
        codeVerifier: transaction.v,
        maxAge: typeof transaction.m === 'number' ? transaction.m : undefined,
      },
      parameters,
    )
    const claims = tokens.claims as Record<string, unknown>
    checkAcr(typeof transaction.a === 'string' ? transaction.a : undefined, claims)
    checkAuthTime(
      typeof transaction.m === 'number' ? transaction.m : undefined,
      claims,
      now(),
      settings.clockToleranceSeconds,
    )
    const subject = claims['sub'] as string
    const sid = typeof claims['sid'] === 'string' ? claims['sid'] : undefined
    // A new session id at every sign-in (session fixation): whatever the browser held ends.
    const previous = deps.readSessionId(keys, request)
    if (previous !== undefined) await stored(store.delete(storeKeyOf(previous)))
    const sessionId = newSessionId()
    const at = now()
    const profile: Record<string, unknown> = {}
    for (const claim of PROFILE_CLAIMS) if (claim in claims) profile[claim] = claims[claim]
    const session: OpenSession = {
      issuer,
      subject,
      sid,
      createdAt: at,
      expiresAt: at + settings.absoluteTimeoutMs,
      claims: profile,
      refreshToken: tokens.refreshToken,
      idToken: tokens.idToken,
      accessTokens: {
        [name]: { token: tokens.accessToken, expiresAt: at + tokens.expiresInSeconds * 1000 },
      },
      generation: 1,
    }
    await stored(
      store.create(
        storeKeyOf(sessionId),
        sealSession(keys, sessionId, session),
        Math.min(settings.idleTimeoutMs, settings.absoluteTimeoutMs),
        indexesOf(session),
        // The index outlives every read that extends the session (back-channel logout).
        settings.absoluteTimeoutMs,
      ),
    )
    cookies.push(cookie.session(keys.sign(sessionId), settings.absoluteTimeoutMs / 1000))
    deps.emit?.({ type: 'signed_in', issuer, subject })
    return respond(302, { Location: transaction.r, 'Set-Cookie': cookies })
  } catch (error) {
    if (isSignInError(error)) return deps.errorResponse(error, cookies)
    throw error
  }
}
