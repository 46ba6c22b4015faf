/**
 * `createTokenSource()`: access tokens for a backend (Client Credentials, or a refresh token),
 * answered from a cache, renewed before they expire, one request per set of parameters however
 * many callers wait, retried with backoff, and shared by a fleet through Redis when asked to.
 * The parts, each with its state: `slot-table.ts` (a slot per set of parameters), `slot.ts` (what
 * a slot holds), `flights.ts` (answering from a slot, its one flight), `arrival.ts` (how a token
 * arrives: from the provider, or from another instance through the shared cache).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import { inspect } from 'node:util'

import { createEmit, type Emit } from '../events.js'
import { createArrivals } from './arrival.js'
import { createTokenEndpoint, warnIfInsecure } from './endpoint.js'
import type { GrantType, TokenSourceEvent } from './events.js'
import { Flights } from './flights.js'
import { normalizeTokenSourceOptions, type TokenSourceOptions } from './options.js'
import type { TokenParameters } from './parameters.js'
import { createRefreshTokenHolder } from './refresh-token.js'
import { createSharedCache, type SharedCache } from './shared-cache.js'
import { SlotTable } from './slot-table.js'

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

const DROP_INTERVAL_MS = 10_000
const SHARED_CACHE_TIMEOUT_MS = 1000

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
  const { clientId, server, now } = settings
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
  const arrivals = createArrivals({
    settings,
    grant,
    endpoint: createTokenEndpoint(settings, stopped.signal),
    refresh,
    emit,
    shared,
    owner: randomUUID(),
    stopped: stopped.signal,
  })
  const flights = new Flights(arrivals, settings, emit, stopped.signal)
  const slots = new SlotTable(
    { issuer, tokenEndpoint: server.tokenEndpoint, clientId, grant },
    settings.parameters,
    shared,
  )

  const source: TokenSource = {
    issuer,
    clientId,
    get(parameters) {
      return flights.serve(slots.of(parameters))
    },
    invalidate(accessToken, parameters) {
      const slot = slots.of(parameters)
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
        shared.drop(slot.sharedKey, held.sharedRaw).catch(arrivals.sharedError)
      }
      return true
    },
    close() {
      stopped.abort()
      slots.forgetTokens()
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
