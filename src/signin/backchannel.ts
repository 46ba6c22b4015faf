/**
 * OpenID Connect Back-Channel Logout 1.0 for sign-in: the provider POSTs a logout token when a
 * user signs out elsewhere (or an administrator ends their session), and the sessions it names end
 * here too: by `sid` (that provider session), or by `sub` (every session of the user) (§2.7).
 * The token is verified by the gate's verifier (`logout-token.ts`: the issuer's keys through
 * tollgate's key sets, algorithm allow-list, `events`, no `nonce`, `iat` window, `sid`/`sub`);
 * its `jti` is accepted once, through the session store's lock (§2.6 step 7), and the claim is
 * released when the sessions could not be ended, so that the provider's retry still counts.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'
import { logoutTokenOf } from '../revocation/callback-body.js'
import {
  LogoutRefusal,
  type LogoutTokenRules,
  verifyLogoutToken,
} from '../revocation/logout-token.js'
import { DEFAULT_ALGORITHMS } from '../token/algorithms.js'
import { IssuerKeys } from '../token/jwks.js'
import { SignInError } from './errors.js'
import type { SignInInternals, SignInRequest, SignInResponse } from './internals.js'

/** How far back a logout token's `iat` may lie, in seconds (§2.6 step 5's "acceptable range"). */
const MAX_AGE_SECONDS = 120
const MAX_TOKEN_BYTES = 8192

const OK: SignInResponse = { status: 200, headers: { 'Cache-Control': 'no-store' }, body: '' }

/** The back-channel logout route of one sign-in; `jwksUri` is read from the provider once. */
export function createBackChannelLogout(jwksUri: () => Promise<string | undefined>) {
  let rules: Promise<LogoutTokenRules> | undefined

  function rulesOf(internals: SignInInternals): Promise<LogoutTokenRules> {
    rules ??= (async () => {
      const { client } = internals.settings
      const issuer = client.server.issuer
      const keys = new IssuerKeys(
        { issuer, jwksUri: await jwksUri(), discovery: false },
        DEFAULT_ALGORITHMS,
        {
          timeoutMs: client.timeoutMs,
          cooldownMs: 30_000,
          minCooldownMs: 500,
          maxAgeMs: 600_000,
          staleIfErrorMs: 3_600_000,
          maxBodyBytes: 262_144,
          allowInsecureHttp: client.allowInsecureHttp,
          fetch: client.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args)),
        },
        { emit: undefined, onKeysRetired: undefined },
      )
      return {
        keys: new Map([[issuer, { keys }]]),
        algorithms: new Set<string>(DEFAULT_ALGORITHMS),
        maxTokenBytes: MAX_TOKEN_BYTES,
        clockToleranceSeconds: internals.settings.clockToleranceSeconds,
        // §2.6 step 3: the token is for this client.
        audiences: new Set([client.clientId]),
        maxAgeSeconds: MAX_AGE_SECONDS,
        requireExp: internals.settings.logoutTokenRequireExp,
      }
    })().catch((error: unknown) => {
      rules = undefined
      throw error
    })
    return rules
  }

  return async function backChannelLogout(
    internals: SignInInternals,
    request: SignInRequest,
  ): Promise<SignInResponse> {
    const { settings, sessions } = internals
    if (request.method !== 'POST') {
      const refusal = new SignInError('ERR_SIGNIN_BAD_REQUEST', 'method')
      return {
        status: refusal.status,
        headers: {
          'Content-Type': 'application/json; charset=utf-8',
          'Cache-Control': 'no-store',
          Allow: 'POST',
        },
        body: JSON.stringify({ error: refusal.error, error_description: refusal.message }),
      }
    }
    const token = await logoutTokenOf(request)
    if (token === undefined) throw new SignInError('ERR_LOGOUT_TOKEN_INVALID', 'logout_token')
    const now = settings.now()
    let logout: Awaited<ReturnType<typeof verifyLogoutToken>>
    try {
      logout = await verifyLogoutToken(token, await rulesOf(internals), now)
    } catch (error) {
      // Keys that could not be had leave the token unjudged: 503, so that a provider that retries
      // does (it does not retry a 400, and the logout would be lost).
      if (error instanceof LogoutRefusal && error.retryAfterSeconds === undefined) {
        // The check that refused it, on the event's own reason (operators need not dig in `error`).
        throw new SignInError('ERR_LOGOUT_TOKEN_INVALID', `logout_token_${error.reason}`, error)
      }
      throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'keys_unavailable', error)
    }
    // §2.6 step 7: each jti once while its iat window lasts; the store's lock is a claim-once.
    const windowEnd = (logout.iat + MAX_AGE_SECONDS + settings.clockToleranceSeconds) * 1000
    const id = createHash('sha256').update(`${logout.issuer}\0${logout.jti}`).digest('base64url')
    const claim = `logout-jti.${id}`
    const claimant = randomUUID()
    let fresh: boolean
    try {
      fresh = await settings.store.lock(claim, claimant, Math.max(1000, windowEnd - now))
    } catch (error) {
      internals.emit?.({ type: 'store_error', error })
      throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'store_unavailable', error)
    }
    if (!fresh) {
      throw new SignInError(
        'ERR_LOGOUT_TOKEN_INVALID',
        'logout_token_replayed',
        new LogoutRefusal('replayed', logout.issuer),
      )
    }
    try {
      await sessions.endSessions(
        logout.issuer,
        logout.sid !== undefined ? { sid: logout.sid } : { sub: logout.sub },
      )
    } catch (error) {
      // The sessions did not end (503): release the claim, so that the provider's retry of this
      // very token is not refused as a replay and ends them then.
      await settings.store
        .unlock(claim, claimant)
        .catch((unlockError: unknown) =>
          internals.emit?.({ type: 'store_error', error: unlockError }),
        )
      throw error
    }
    return OK
  }
}
