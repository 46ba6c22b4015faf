/**
 * `createTokenSource()`: access tokens for a backend (Client Credentials, or a refresh token),
 * answered from a cache, renewed before they expire, one request per set of parameters however
 * many callers wait, retried with backoff, and shared by a fleet through Redis when asked to.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import { inspect } from 'node:util'

import { createEmit, type Emit } from '../events.js'
import { createArrivals, type Held, type Slot } from './arrival.js'
import { createTokenEndpoint, warnIfInsecure } from './endpoint.js'
import type { TokenSourceError } from './errors.js'
import type { GrantType, TokenSourceEvent } from './events.js'
import { normalizeTokenSourceOptions, type TokenSourceOptions } from './options.js'
import {
  type NormalizedParameters,
  normalizeParameters,
  type TokenParameters,
} from './parameters.js'
import { createRefreshTokenHolder } from './refresh-token.js'
import { createSharedCache, type SharedCache } from './shared-cache.js'

/** Hands out access tokens for one client at one provider. */
export interface TokenSource {
  /**
   * An access token for `parameters` (default: the source's `scope`, `resource`, `audience`).
   * Answers from the cache; past the renewal point it still answers from the cache and renews in
   * the background; with no usable token it waits for the one request in flight for exactly these
   * parameters (issuer, client, grant, scope, resource, audience).
   *
   * @throws TokenSourceError when no usable token can be had; `retryable` says whether to try later.
   * @throws TypeError when `parameters` are invalid.
   */
  get(parameters?: TokenParameters): Promise<string>
  /**
   * Reports that a resource server refused `accessToken` (401 `invalid_token`): the source drops
   * it, at most once every 10 seconds per parameters, so the next `get()` obtains a new one.
   * Returns `true` when the next `get()` will answer with another token.
   */
  invalidate(accessToken: string, parameters?: TokenParameters): boolean
  /** Stops: retries and waits end, every later `get()` fails with `ERR_TOKEN_SOURCE_CLOSED`. */
  close(): void
  readonly issuer: string
  readonly clientId: string
}

const MAX_SLOTS = 1000
const DROP_INTERVAL_MS = 10_000
const SHARED_CACHE_TIMEOUT_MS = 1000
const SHARED_RECHECK_MS = 1000

/**
 * Creates a token source. Validates the options; makes no request until the first `get()`.
 *
 * @example
 * ```ts
 * import { createTokenSource, fromEnv, keycloak } from 'tollgate/client'
 *
 * const office = createTokenSource({
 *   issuer: keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' }),
 *   clientId: 'billing-sync',
 *   clientSecret: fromEnv('BILLING_SYNC_SECRET'),
 *   scope: 'office:records:read',
 *   resource: 'https://office.example.com',
 * })
 * const token = await office.get()
 * ```
 * @throws TypeError at creation when `options` are invalid (the message names the option, never a secret).
 */
export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const settings = normalizeTokenSourceOptions(options)
  const { clientId, server, now, retry } = settings
  const issuer = server.issuer
  const grant: GrantType =
    settings.refreshToken === undefined ? 'client_credentials' : 'refresh_token'
  warnIfInsecure(server.tokenEndpoint ?? issuer, clientId)
  const emit: Emit<TokenSourceEvent> = createEmit(settings.onEvent)
  const shared: SharedCache | undefined =
    settings.sharedCache === undefined
      ? undefined
      : createSharedCache(
          settings.sharedCache.redis,
          settings.sharedCache.keyPrefix,
          settings.sharedCache.lockMs,
          SHARED_CACHE_TIMEOUT_MS,
        )
  const stopped = new AbortController()
  const slots = new Map<string, Slot>()
  const refresh =
    settings.refreshToken === undefined
      ? undefined
      : createRefreshTokenHolder(
          settings.refreshToken,
          { clientId, issuer },
          {
            onRefreshToken: settings.onRefreshToken,
            timeoutMs: settings.timeoutMs,
            failed: (reason) =>
              emit?.({ type: 'refresh_token_store_failed', issuer, clientId, reason }),
          },
        )
  const { arrive, closedError, sharedError } = createArrivals({
    settings,
    grant,
    endpoint: createTokenEndpoint(settings, stopped.signal),
    refresh,
    emit,
    shared,
    owner: randomUUID(),
    stopped: stopped.signal,
  })
  // Callers waiting for a flight are released by close(), whatever the flight is waiting on.
  const whenStopped = new Promise<never>((_, reject) => {
    stopped.signal.addEventListener('abort', () => reject(closedError()), { once: true })
  })
  whenStopped.catch(() => undefined)

  function keyOf(parameters: NormalizedParameters): string {
    return JSON.stringify([
      issuer,
      server.tokenEndpoint ?? '',
      clientId,
      grant,
      parameters.scope ?? '',
      parameters.resource,
      parameters.audience ?? '',
    ])
  }

  function slotOf(parameters: NormalizedParameters): Slot {
    const key = keyOf(parameters)
    let slot = slots.get(key)
    if (slot !== undefined) return slot
    if (slots.size >= MAX_SLOTS) {
      for (const [oldKey, old] of slots) {
        if (old.pending === undefined && old !== defaultSlot) {
          slots.delete(oldKey)
          break
        }
      }
    }
    slot = {
      key,
      parameters,
      facts: {
        issuer,
        clientId,
        grant,
        scope: parameters.scope,
        resource: parameters.resource,
        audience: parameters.audience,
      },
      sharedKey: shared?.keyOf(key),
      current: undefined,
      pending: undefined,
      failures: 0,
      retryAt: 0,
      lastError: undefined,
      lastDroppedAt: Number.NEGATIVE_INFINITY,
      refusedRaw: undefined,
      awaited: false,
      sleeping: undefined,
    }
    slots.set(key, slot)
    return slot
  }

  const defaultSlot = slotOf(settings.parameters)

  /** The one flight of a slot: its result replaces the held token; its failure pauses the slot. */
  function fly(slot: Slot): Promise<Held> {
    const flight = (async () => {
      const arrival = await Promise.race([arrive(slot), whenStopped])
      if (stopped.signal.aborted) throw closedError()
      return arrival
    })()
    slot.pending = flight.then(
      ({ held, from, durationMs }) => {
        slot.pending = undefined
        if (from === undefined && slot.current !== held) {
          // The held token was kept while another instance renews, but invalidate() dropped it
          // meanwhile: never put it back; wait for a new one instead.
          return fly(slot)
        }
        const renewal = slot.current !== undefined
        slot.current = held
        slot.failures = 0
        // Another instance holds the renewal lock: look for its token again in a second, not on
        // every get() in between.
        slot.retryAt = from === undefined ? now() + SHARED_RECHECK_MS : 0
        slot.lastError = undefined
        slot.awaited = false
        // Reported once the new token is in place: a listener calling get() already receives it.
        if (from !== undefined) {
          emit?.({
            type: renewal ? 'token_renewed' : 'token_obtained',
            ...slot.facts,
            from,
            expiresInSeconds: held.expiresInSeconds,
            durationMs,
          })
        }
        return held
      },
      (error: unknown) => {
        const failure = error as TokenSourceError
        slot.failures++
        const pauseMs = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** slot.failures)
        slot.retryAt = now() + pauseMs
        failure.retryAfterSeconds = failure.retryable ? Math.ceil(pauseMs / 1000) : undefined
        slot.lastError = failure
        slot.pending = undefined
        slot.awaited = false
        throw failure
      },
    )
    return slot.pending
  }

  function obtain(slot: Slot): Promise<string> {
    if (stopped.signal.aborted) return Promise.reject(closedError())
    if (slot.pending !== undefined) {
      awaitFlight(slot)
      return slot.pending.then(accessTokenOf)
    }
    if (slot.lastError !== undefined && now() < slot.retryAt) return Promise.reject(slot.lastError)
    awaitFlight(slot)
    return fly(slot).then(accessTokenOf)
  }

  /** A caller waits for `slot`'s flight: from now on its timers keep the process alive. */
  function awaitFlight(slot: Slot): void {
    slot.awaited = true
    slot.sleeping?.ref()
  }

  function serve(slot: Slot): Promise<string> {
    const held = slot.current
    if (held !== undefined) {
      const at = now()
      if (at < held.renewAt) return Promise.resolve(held.accessToken)
      if (at < held.usableUntil) {
        if (slot.pending === undefined && at >= slot.retryAt && !stopped.signal.aborted) {
          // Background renewal: its failure is reported as an event; callers keep this token.
          fly(slot).catch(() => undefined)
        }
        return Promise.resolve(held.accessToken)
      }
    }
    return obtain(slot)
  }

  const source: TokenSource = {
    issuer,
    clientId,
    get(parameters) {
      if (parameters === undefined) return serve(defaultSlot)
      return serve(slotOf(normalizeParameters(parameters, settings.parameters)))
    },
    invalidate(accessToken, parameters) {
      const slot =
        parameters === undefined
          ? defaultSlot
          : slotOf(normalizeParameters(parameters, settings.parameters))
      const held = slot.current
      if (held === undefined || held.accessToken !== accessToken) return true
      const at = now()
      if (at - slot.lastDroppedAt < DROP_INTERVAL_MS) return false
      slot.lastDroppedAt = at
      slot.current = undefined
      slot.refusedRaw = held.sharedRaw
      // A failed request must not keep the slot paused: the caller wants a new token now.
      slot.retryAt = 0
      slot.lastError = undefined
      if (shared !== undefined && slot.sharedKey !== undefined && held.sharedRaw !== undefined) {
        shared.drop(slot.sharedKey, held.sharedRaw).catch(sharedError)
      }
      return true
    },
    close() {
      stopped.abort()
      for (const slot of slots.values()) slot.current = undefined
    },
  }
  const description = () => ({
    issuer,
    clientId,
    grant,
    clientAuth: settings.clientAuth,
    credential: settings.credentialSource,
    sharedCache: shared !== undefined,
  })
  Object.defineProperties(source, {
    toJSON: { value: description },
    [inspect.custom]: { value: () => `TokenSource ${inspect(description())}` },
  })
  return Object.freeze(source)
}

function accessTokenOf(held: Held): string {
  return held.accessToken
}
