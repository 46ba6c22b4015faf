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
import { createTokenEndpoint, type GrantResult } from './endpoint.js'
import { isTokenSourceError, TokenSourceError } from './errors.js'
import type { GrantType, TokenRequestFacts, TokenSourceEvent } from './events.js'
import {
  type NormalizedParameters,
  normalizeParameters,
  normalizeTokenSourceOptions,
  type TokenParameters,
  type TokenSourceOptions,
} from './options.js'
import { scheduleToken } from './schedule.js'
import { resolveSecret } from './secrets.js'
import { createSharedCache, type SharedCache, type SharedToken } from './shared-cache.js'

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

interface Held extends SharedToken {
  readonly renewAt: number
  readonly usableUntil: number
  /** The shared cache's raw value, to delete exactly this entry when the token is refused. */
  readonly sharedRaw: string | undefined
}

interface Slot {
  readonly key: string
  readonly parameters: NormalizedParameters
  readonly facts: TokenRequestFacts
  readonly sharedKey: string | undefined
  current: Held | undefined
  pending: Promise<Held> | undefined
  failures: number
  retryAt: number
  lastError: TokenSourceError | undefined
  lastDroppedAt: number
}

/** A token that arrived, and from where (`undefined`: the held one, kept while another renews). */
interface Arrival {
  readonly held: Held
  readonly from: 'provider' | 'shared_cache' | undefined
  readonly durationMs: number
}

const MAX_SLOTS = 1000
const DROP_INTERVAL_MS = 10_000
const SHARED_CACHE_TIMEOUT_MS = 1000
const SHARED_POLL_MS = 50

/**
 * Creates a token source. Validates the options; makes no request until the first `get()`.
 *
 * @example
 * ```ts
 * import { keycloak } from 'tollgate'
 * import { createTokenSource, fromEnv } from 'tollgate/client'
 *
 * const office = createTokenSource({
 *   issuer: keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] }),
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
  const { clientId, server, now, retry, renewal } = settings
  const issuer = server.issuer
  const grant: GrantType =
    settings.refreshToken === undefined ? 'client_credentials' : 'refresh_token'
  warnIfInsecure(server.tokenEndpoint ?? issuer, clientId)
  const endpoint = createTokenEndpoint(settings)
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
  const owner = randomUUID()
  const stopped = new AbortController()
  const slots = new Map<string, Slot>()
  let refreshToken: string | undefined
  let refreshChain: Promise<unknown> = Promise.resolve()

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
    }
    slots.set(key, slot)
    return slot
  }

  const defaultSlot = slotOf(settings.parameters)

  function hold(token: SharedToken, sharedRaw: string | undefined): Held {
    const schedule = scheduleToken(token.obtainedAt, token.expiresInSeconds, renewal, Math.random())
    return { ...token, renewAt: schedule.renewAt, usableUntil: schedule.usableUntil, sharedRaw }
  }

  function closedError(): TokenSourceError {
    return new TokenSourceError({
      code: 'ERR_TOKEN_SOURCE_CLOSED',
      message: `token source of client "${clientId}" is closed`,
      retryable: false,
      clientId,
      issuer,
    })
  }

  function delay(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (stopped.signal.aborted) return reject(closedError())
      const onAbort = () => {
        clearTimeout(timer)
        reject(closedError())
      }
      const timer = setTimeout(() => {
        stopped.signal.removeEventListener('abort', onAbort)
        resolve()
      }, ms)
      timer.unref()
      stopped.signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** One grant request. Refresh-token requests run one at a time: each uses the latest token. */
  function requestOnce(slot: Slot): Promise<GrantResult> {
    if (grant === 'client_credentials') return endpoint.request(grant, slot.parameters)
    const run = refreshChain.then(async () => {
      refreshToken ??= await resolveSecret<string>(
        settings.refreshToken as string,
        { clientId, issuer, option: 'refreshToken' },
        (value): value is string => typeof value === 'string',
      )
      const result = await endpoint.request('refresh_token', slot.parameters, refreshToken)
      if (result.refreshToken !== undefined && result.refreshToken !== refreshToken) {
        // RFC 9700 §4.14.2: a rotated refresh token replaces the old one at once, before any
        // other request can pick the old one up (the chain holds them back until then).
        refreshToken = result.refreshToken
        try {
          await settings.onRefreshToken?.(result.refreshToken)
        } catch {
          // The new token is held in memory either way; the old one no longer works.
        }
      }
      return result
    })
    refreshChain = run.catch(() => undefined)
    return run
  }

  function usable(slot: Slot, at: number): boolean {
    return slot.current !== undefined && at < slot.current.usableUntil
  }

  /** Asks the provider, retrying retryable failures with exponential backoff and full jitter. */
  async function requestWithRetries(slot: Slot): Promise<Arrival> {
    const renewal = slot.current !== undefined
    const startedAt = performance.now()
    for (let attempt = 1; ; attempt++) {
      if (stopped.signal.aborted) throw closedError()
      emit?.({ type: 'token_requested', ...slot.facts, attempt, renewal })
      const requestedAt = now()
      try {
        const result = await requestOnce(slot)
        const token: SharedToken = {
          accessToken: result.accessToken,
          obtainedAt: requestedAt,
          expiresInSeconds: result.expiresInSeconds,
        }
        return {
          held: hold(token, undefined),
          from: 'provider',
          durationMs: performance.now() - startedAt,
        }
      } catch (error) {
        const failure = isTokenSourceError(error)
          ? error
          : new TokenSourceError({
              code: 'ERR_TOKEN_RESPONSE_INVALID',
              message: `token request of client "${clientId}" failed unexpectedly`,
              retryable: false,
              clientId,
              issuer,
            })
        const willRetry = failure.retryable && attempt < retry.attempts && !stopped.signal.aborted
        emit?.({
          type: 'token_request_failed',
          ...slot.facts,
          code: failure.code,
          retryable: failure.retryable,
          willRetry,
          servingCached: usable(slot, now()),
          error: failure,
        })
        if (!willRetry) throw failure
        const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1))
        await delay(Math.random() * ceiling)
      }
    }
  }

  function adopt(token: SharedToken, raw: string): Arrival {
    return { held: hold(token, raw), from: 'shared_cache', durationMs: 0 }
  }

  function sharedError(error: unknown): void {
    emit?.({ type: 'shared_cache_error', issuer, clientId, error })
  }

  /** With a shared cache: take a newer token another instance stored, or renew under the lock. */
  async function viaSharedCache(slot: Slot, cache: SharedCache, key: string): Promise<Arrival> {
    let locked = false
    try {
      const seen = await cache.read(key)
      const fresh = (read: typeof seen) =>
        read !== undefined &&
        read.raw !== slot.current?.sharedRaw &&
        now() < hold(read.token, read.raw).renewAt
      if (seen !== undefined && fresh(seen)) return adopt(seen.token, seen.raw)
      locked = await cache.lock(key, owner)
      if (!locked) {
        // Another instance is renewing: keep serving ours if we may, else wait for theirs.
        if (slot.current !== undefined && usable(slot, now())) {
          return { held: slot.current, from: undefined, durationMs: 0 }
        }
        // Real time, not the clock option: this waits for another instance, in this world.
        const until = performance.now() + (settings.sharedCache?.lockMs ?? 0)
        while (performance.now() < until && !stopped.signal.aborted) {
          await delay(SHARED_POLL_MS)
          const next = await cache.read(key)
          if (
            next !== undefined &&
            next.raw !== seen?.raw &&
            now() < hold(next.token, next.raw).usableUntil
          ) {
            return adopt(next.token, next.raw)
          }
        }
      }
    } catch (error) {
      if (isTokenSourceError(error)) throw error
      sharedError(error)
    }
    let arrival: Arrival
    try {
      arrival = await requestWithRetries(slot)
    } catch (error) {
      if (locked) cache.unlock(key, owner).catch(sharedError)
      throw error
    }
    const { held } = arrival
    try {
      const token: SharedToken = {
        accessToken: held.accessToken,
        obtainedAt: held.obtainedAt,
        expiresInSeconds: held.expiresInSeconds,
      }
      const raw = await cache.write(key, token, held.usableUntil - now(), owner)
      return { ...arrival, held: { ...held, sharedRaw: raw } }
    } catch (error) {
      sharedError(error)
      return arrival
    }
  }

  /** The one flight of a slot: its result replaces the held token; its failure pauses the slot. */
  function fly(slot: Slot): Promise<Held> {
    const flight = (async () => {
      const arrival =
        shared !== undefined && slot.sharedKey !== undefined
          ? await viaSharedCache(slot, shared, slot.sharedKey)
          : await requestWithRetries(slot)
      if (stopped.signal.aborted) throw closedError()
      return arrival
    })()
    slot.pending = flight.then(
      ({ held, from, durationMs }) => {
        const renewal = slot.current !== undefined
        slot.current = held
        slot.failures = 0
        slot.retryAt = 0
        slot.lastError = undefined
        slot.pending = undefined
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
        throw failure
      },
    )
    return slot.pending
  }

  function obtain(slot: Slot): Promise<string> {
    if (stopped.signal.aborted) return Promise.reject(closedError())
    if (slot.pending !== undefined) return slot.pending.then(accessTokenOf)
    if (slot.lastError !== undefined && now() < slot.retryAt) return Promise.reject(slot.lastError)
    return fly(slot).then(accessTokenOf)
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

/** Plain http beyond loopback is allowed only when asked for, and never silently. */
function warnIfInsecure(endpoint: string, clientId: string): void {
  const url = new URL(endpoint)
  if (url.protocol !== 'http:') return
  if (url.hostname === 'localhost' || url.hostname === '[::1]' || url.hostname.startsWith('127.'))
    return
  process.emitWarning(
    `token source of client "${clientId}" sends its credentials over plain http to ${url.host} (allowInsecureHttp: true)`,
    { code: 'TOLLGATE_INSECURE_HTTP' },
  )
}

function accessTokenOf(held: Held): string {
  return held.accessToken
}
