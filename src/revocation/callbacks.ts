/**
 * The endpoints an identity provider calls to revoke, framework-neutral (the adapters only hand
 * over the request and send the answer):
 *
 * - OpenID Connect Back-Channel Logout 1.0: a form POST with `logout_token`; the session it names
 *   (`sid`, else every session of `sub`) is revoked. 200 with `Cache-Control: no-store`, or 400
 *   with a JSON error (§2.8), or 503 with `Retry-After` when the signing keys could not be had
 *   (the token was not judged: the provider's retry may succeed).
 * - Keycloak's admin "push not-before" (`{adminUrl}/k_push_not_before`): a JWS body signed with
 *   the realm's key, `{ action: 'PUSH_NOT_BEFORE', resource, notBefore, expiration, id }`; every
 *   token of that realm issued before `notBefore` is refused (`notBefore: 0` clears it).
 *
 * @module
 */

import type { Emit } from '../events.js'
import { type CallbackRequest, logoutTokenOf, readText } from './callback-body.js'
import {
  LogoutRefusal,
  type LogoutRefusalReason,
  type LogoutTokenRules,
  verifyLogoutToken,
  verifyProviderJWS,
} from './logout-token.js'
import type { Revocation } from './revocation.js'

export type { CallbackRequest } from './callback-body.js'

/** The answer to send, complete: status, headers and body. */
export interface CallbackResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The provider callbacks of one gate. */
export interface RevocationCallbacks {
  backchannelLogout(request: CallbackRequest): Promise<CallbackResponse>
  keycloakPushNotBefore(request: CallbackRequest): Promise<CallbackResponse>
}

const LOGOUT_EVENT_NAMES = { logout: 'backchannel_logout', keycloak: 'keycloak_push' } as const
const KEYCLOAK_MEDIA_TYPES = new Set(['jwt', 'application/jwt'])

const OK: CallbackResponse = Object.freeze({
  status: 200,
  headers: Object.freeze({ 'Cache-Control': 'no-store' }),
  body: '',
})

function failure(status: number, description: string, extra: Record<string, string> = {}) {
  return {
    status,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      ...extra,
    },
    body: JSON.stringify({ error: 'invalid_request', error_description: description }),
  }
}

/**
 * The signing keys could not be had (the key set is down, or the token's key is not fetched yet
 * and a refetch is not allowed now): the token was not judged. 503, not 400: providers that
 * retry do not retry a 4xx, and the logout would be lost.
 */
function keysUnavailable(retryAfterSeconds: number): CallbackResponse {
  return {
    status: 503,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'Retry-After': String(retryAfterSeconds),
    },
    body: JSON.stringify({
      error: 'temporarily_unavailable',
      error_description: 'signing keys unavailable',
    }),
  }
}

const NOT_POST = failure(405, 'method not allowed', { Allow: 'POST' })
const INVALID_LOGOUT = failure(400, 'invalid logout token')
const MISSING_LOGOUT = failure(400, 'one logout_token parameter required')
const INVALID_PUSH = failure(400, 'invalid admin request')

/** Creates the provider callbacks over a gate's revocation step and verification rules. */
export function createRevocationCallbacks(
  revocation: Revocation,
  rules: LogoutTokenRules,
  emit: Emit,
): RevocationCallbacks {
  function refused(
    endpoint: keyof typeof LOGOUT_EVENT_NAMES,
    reason: LogoutRefusalReason | 'request',
    issuer: string | undefined,
    response: CallbackResponse,
  ): CallbackResponse {
    emit?.({ type: 'logout_refused', endpoint: LOGOUT_EVENT_NAMES[endpoint], reason, issuer })
    return response
  }

  /**
   * Runs `verify`, turning its refusals into the endpoint's 400, or 503 when the keys could not be
   * had; other errors are bugs and propagate.
   */
  async function settle(
    endpoint: keyof typeof LOGOUT_EVENT_NAMES,
    invalid: CallbackResponse,
    verify: () => Promise<void>,
  ): Promise<CallbackResponse> {
    try {
      await verify()
      return OK
    } catch (error) {
      if (!(error instanceof LogoutRefusal)) throw error
      const { reason, issuer, retryAfterSeconds } = error
      const answer = retryAfterSeconds === undefined ? invalid : keysUnavailable(retryAfterSeconds)
      return refused(endpoint, reason, issuer, answer)
    }
  }

  /** §2.6 step 7: a logout token is accepted once within its `iat` window. */
  async function once(issuer: string, id: string, untilMs: number, now: number): Promise<void> {
    const ttlMs = Math.max(1000, Math.ceil(untilMs - now))
    const fresh = await revocation.claimOnce(`${issuer}\n${id}`, ttlMs)
    if (!fresh) throw new LogoutRefusal('replayed', issuer)
  }

  return {
    async backchannelLogout(request) {
      if (request.method !== undefined && request.method !== 'POST') {
        return refused('logout', 'request', undefined, NOT_POST)
      }
      const token = await logoutTokenOf(request)
      if (token === undefined) return refused('logout', 'request', undefined, MISSING_LOGOUT)
      return settle('logout', INVALID_LOGOUT, async () => {
        const now = Date.now()
        const logout = await verifyLogoutToken(token, rules, now)
        const windowEnd = (logout.iat + rules.maxAgeSeconds + rules.clockToleranceSeconds) * 1000
        await once(logout.issuer, logout.jti, windowEnd, now)
        // §2.7: with a sid, that session ends; with only a sub, every session of that user.
        const target =
          logout.sid !== undefined
            ? { issuer: logout.issuer, sid: logout.sid }
            : { issuer: logout.issuer, sub: logout.sub as string }
        await revocation.revoke(target, 'backchannel_logout')
      })
    },

    async keycloakPushNotBefore(request) {
      if (request.method !== undefined && request.method !== 'POST') {
        return refused('keycloak', 'request', undefined, NOT_POST)
      }
      const text = await readText(request)
      if (text === undefined) return refused('keycloak', 'request', undefined, INVALID_PUSH)
      return settle('keycloak', INVALID_PUSH, async () => {
        const now = Date.now()
        const { issuer, payload } = await verifyProviderJWS(
          text.trim(),
          rules,
          'any',
          KEYCLOAK_MEDIA_TYPES,
        )
        // Keycloak's admin requests (AdminAction) carry none of these; its access, ID and logout
        // tokens carry all: whatever else a token signed by the realm's key holds, it is no push.
        if (payload.iss !== undefined || payload.typ !== undefined || payload.aud !== undefined) {
          throw new LogoutRefusal('token_type', issuer)
        }
        const { action, resource, notBefore, expiration, id } = payload
        if (action !== 'PUSH_NOT_BEFORE') throw new LogoutRefusal('events', issuer)
        if (typeof resource !== 'string' || !rules.audiences.has(resource)) {
          throw new LogoutRefusal('audience', issuer)
        }
        if (typeof expiration !== 'number' || !Number.isFinite(expiration)) {
          throw new LogoutRefusal('missing_claim', issuer)
        }
        const expiresAt = (expiration + rules.clockToleranceSeconds) * 1000
        if (expiresAt <= now) throw new LogoutRefusal('expired', issuer)
        if (typeof id !== 'string' || id === '' || id.length > 256) {
          throw new LogoutRefusal('missing_claim', issuer)
        }
        if (
          typeof notBefore !== 'number' ||
          !Number.isInteger(notBefore) ||
          notBefore < 0 ||
          notBefore > now / 1000 + 60
        ) {
          throw new LogoutRefusal('malformed_claim', issuer)
        }
        await once(issuer, id, expiresAt, now)
        // Keycloak's "Clear" pushes 0: the realm has no not-before any more.
        if (notBefore === 0) await revocation.unrevoke({ issuer, all: true }, 'keycloak_push')
        else await revocation.revoke({ issuer, all: true, notBefore }, 'keycloak_push')
      })
    },
  }
}

/** The callback endpoints as an adapter exposes them, each returning that framework's middleware. */
export interface CallbackEndpoints<Middleware> {
  /**
   * Route middleware answering OpenID Connect Back-Channel Logout requests: mount it at the
   * client's *Backchannel logout URL* with POST. Works with or without a body parser before it.
   *
   * @throws TypeError at creation without `revocation.callbacks`.
   */
  backchannelLogout(): Middleware
  /**
   * Route middleware answering Keycloak's admin "push not-before": mount it at
   * `{client's Admin URL}/k_push_not_before` with POST.
   *
   * @throws TypeError at creation without `revocation.callbacks`.
   */
  keycloakPushNotBefore(): Middleware
}

type Handle = (request: CallbackRequest) => Promise<CallbackResponse>

/** Builds an adapter's callback endpoints from its one way of turning a handler into middleware. */
export function callbackEndpoints<Middleware>(
  gate: RevocationCallbacks & { readonly acceptsCallbacks: boolean },
  wrap: (handle: Handle) => Middleware,
): CallbackEndpoints<Middleware> {
  const endpoint = (name: keyof RevocationCallbacks) => (): Middleware => {
    if (!gate.acceptsCallbacks) {
      throw new TypeError(`${name}(): the gate needs "revocation.callbacks" ({ clientIds })`)
    }
    return wrap(gate[name])
  }
  return {
    backchannelLogout: endpoint('backchannelLogout'),
    keycloakPushNotBefore: endpoint('keycloakPushNotBefore'),
  }
}
