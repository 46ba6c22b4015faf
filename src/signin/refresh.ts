/**
 * Refreshing a session's access token: one refresh per session at a time in this process (the
 * others wait for it), and across instances through the session's lock in the store, so two tabs
 * or two pods never spend the same rotating refresh token twice (RFC 9700 §4.14.2: a provider that
 * detects reuse revokes the whole grant). The rotated refresh token and the new access token are
 * written in one replace, only while the lock is held and the session still exists.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import { isTokenSourceError } from '../client/errors.js'
import type { NormalizedParameters } from '../client/parameters.js'
import type { Emit } from '../events.js'
import { isSignInError, SignInError } from './errors.js'
import type { RefreshRefusal, SessionEndReason, SignInEvent } from './events.js'
import type { KeyRing } from './key-ring.js'
import type { NormalizedSignInOptions } from './options.js'
import { isClientRefusal, providerWords, type SignInProvider } from './provider.js'
import { type OpenSession, sealSession } from './session.js'

/** How often a waiting instance looks for the refreshing instance's result, in ms. */
const POLL_MS = 50

/** What the refresher needs from sign-in. */
export interface RefreshContext {
  readonly settings: NormalizedSignInOptions
  readonly provider: SignInProvider
  readonly emit: Emit<SignInEvent>
  /** A store operation whose failure becomes a 503. */
  stored<T>(operation: Promise<T>): Promise<T>
  /** Reads and opens a session; `ERR_SIGNIN_REQUIRED` when it is gone, unreadable or expired. */
  readOpen(keys: KeyRing, sessionId: string, key: string): Promise<OpenSession>
  endSession(
    key: string,
    session: Pick<OpenSession, 'issuer' | 'subject' | 'sid'> | undefined,
    reason: SessionEndReason,
    refusal?: RefreshRefusal,
  ): Promise<void>
  /** The request parameters of a product (`''`: the sign-in's own token). */
  parametersOf(product: string): NormalizedParameters | undefined
}

/** Refreshes sessions' access tokens, single-flight. */
export interface Refresher {
  /** `true` when the session holds a token for `product` with more than `marginMs` left. */
  fresh(session: OpenSession, product: string, marginMs: number): boolean
  /** The session after a refresh of `product` (here, or by another instance). */
  refreshed(keys: KeyRing, sessionId: string, key: string, product: string): Promise<OpenSession>
}

/** Builds the refresher of one sign-in (its own id in the store's locks). */
export function createRefresher(context: RefreshContext): Refresher {
  const { settings, provider, emit, stored, readOpen, endSession, parametersOf } = context
  const { store, now } = settings
  const issuer = provider.issuer
  const owner = randomUUID()
  const flights = new Map<string, Promise<OpenSession>>()

  const fresh = (session: OpenSession, product: string, marginMs: number) => {
    const held = session.accessTokens[product]
    return held !== undefined && held.expiresAt - now() > marginMs
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      setTimeout(resolve, ms).unref()
    })

  /** One refresh of a session, under its lock in the store (single-flight across instances). */
  async function refreshOnce(
    keys: KeyRing,
    sessionId: string,
    key: string,
    product: string,
  ): Promise<OpenSession> {
    const parameters = parametersOf(product)
    const margin = settings.refreshBeforeExpiryMs
    // Real time, not the clock option: this waits for another instance, in this world.
    const giveUpAt = performance.now() + settings.lockMs
    while (!(await stored(store.lock(key, owner, settings.lockMs)))) {
      // Another instance (or tab, through it) is refreshing: take its result from the store.
      await sleep(POLL_MS)
      const session = await readOpen(keys, sessionId, key)
      if (fresh(session, product, margin)) {
        emit?.({
          type: 'session_refreshed',
          issuer,
          subject: session.subject,
          product,
          by: 'other_instance',
        })
        return session
      }
      if (performance.now() > giveUpAt) {
        throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'store_unavailable')
      }
    }
    try {
      // Under the lock, read again: a refresh may have finished between our read and our lock.
      const session = await readOpen(keys, sessionId, key)
      if (fresh(session, product, margin)) return session
      if (session.refreshToken === undefined) {
        await endSession(key, session, 'refresh_refused')
        throw new SignInError('ERR_SIGNIN_REQUIRED', 'refresh_refused')
      }
      let tokens: Awaited<ReturnType<typeof provider.refresh>>
      try {
        tokens = await provider.refresh(session.refreshToken, parameters)
      } catch (error) {
        if (isSignInError(error)) throw error
        // Only a network failure, a timeout, a 5xx, a 429 or temporarily_unavailable is an
        // outage (503, the session kept for when the provider is back).
        if (isTokenSourceError(error)) {
          if (error.code === 'ERR_REFRESH_TOKEN_REFUSED') {
            // Refused for good (spent, revoked, expired or deleted): the session cannot go on,
            // and answering 503 would send the same dead token on every later request.
            await endSession(key, session, 'refresh_refused', {
              error: providerWords(error.oauthError, 64),
              status: error.status,
            })
            throw new SignInError('ERR_SIGNIN_REQUIRED', 'refresh_refused', error)
          }
          // The client, not the session, was refused: the session stays for when it is fixed.
          if (isClientRefusal(error)) {
            throw new SignInError('ERR_CLIENT_REFUSED', 'client_refused', error)
          }
          // invalid_scope, invalid_target: this product's parameters, not the grant, were
          // refused. Ending the session would discard a refresh token that still serves the
          // other products, and sign the user in again into the same refusal.
          if (error.code === 'ERR_TOKEN_REQUEST_REFUSED') {
            throw new SignInError('ERR_CLIENT_REFUSED', 'product_refused', error)
          }
        }
        throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'provider_unavailable', error)
      }
      const at = now()
      const next: OpenSession = {
        ...session,
        refreshToken: tokens.refreshToken ?? session.refreshToken,
        idToken: tokens.idToken ?? session.idToken,
        accessTokens: {
          ...session.accessTokens,
          [product]: { token: tokens.accessToken, expiresAt: at + tokens.expiresInSeconds * 1000 },
        },
        generation: session.generation + 1,
      }
      const ttlMs = Math.min(settings.idleTimeoutMs, session.expiresAt - at)
      const written = await stored(
        store.replace(key, sealSession(keys, sessionId, next), ttlMs, owner),
      )
      if (!written) {
        // Still there: this refresh outlasted its lock (another owner, or none, holds it now), so
        // the rotated tokens could not be stored. Not a sign-out: reported, answered 503.
        if ((await stored(store.read(key, settings.idleTimeoutMs))) !== undefined) {
          emit?.({ type: 'refresh_lock_lost', issuer, subject: session.subject, product })
          throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'refresh_lock_lost')
        }
        // Gone: the session ended while we refreshed (logout, back-channel logout).
        throw new SignInError('ERR_SIGNIN_REQUIRED', 'no_session')
      }
      emit?.({
        type: 'session_refreshed',
        issuer,
        subject: session.subject,
        product,
        by: 'this_instance',
      })
      return next
    } finally {
      store.unlock(key, owner).catch((error: unknown) => emit?.({ type: 'store_error', error }))
    }
  }

  /** Single-flight within this process: one refresh per session at a time, others wait for it. */
  async function refreshed(
    keys: KeyRing,
    sessionId: string,
    key: string,
    product: string,
  ): Promise<OpenSession> {
    for (let running = flights.get(key); running !== undefined; running = flights.get(key)) {
      const session = await running
      if (fresh(session, product, 0)) return session
    }
    const flight = refreshOnce(keys, sessionId, key, product).finally(() => flights.delete(key))
    flights.set(key, flight)
    return flight
  }

  return { fresh, refreshed }
}
