/**
 * How one token arrives for a set of parameters: from the provider, with bounded retries and
 * exponential backoff with full jitter; or, with a shared cache, from another instance of the
 * fleet, which renews under a Redis lock while the others keep serving theirs.
 *
 * @module
 */
import { type GrantResult, mayResend, type TokenEndpoint } from './endpoint.js'
import { isTokenSourceError, TokenSourceError } from './errors.js'
import type { GrantType, TokenSourceEvent } from './events.js'
import type { NormalizedTokenSourceOptions } from './options.js'
import type { RefreshTokenHolder } from './refresh-token.js'
import { scheduleToken } from './schedule.js'
import type { SharedCache, SharedToken } from './shared-cache.js'
import type { Arrival, Held, Slot } from './slot.js'

export type { Arrival, Held, Slot } from './slot.js'

const SHARED_POLL_MS = 50

/** What {@link createArrivals} needs from its source. */
export interface ArrivalContext {
  readonly settings: NormalizedTokenSourceOptions
  readonly grant: GrantType
  readonly endpoint: TokenEndpoint
  readonly refresh: RefreshTokenHolder | undefined
  readonly emit: ((event: TokenSourceEvent) => void) | undefined
  readonly shared: SharedCache | undefined
  /** This instance's id in the shared cache's lock. */
  readonly owner: string
  /** Aborted by the source's `close()`. */
  readonly stopped: AbortSignal
}

/** Obtains tokens for the slots of one source. */
export interface Arrivals {
  /** The next token of `slot`: through the shared cache when there is one. */
  arrive(slot: Slot): Promise<Arrival>
  closedError(): TokenSourceError
  sharedError(error: unknown): void
}

/** Builds how the slots of one source obtain their tokens. */
export function createArrivals(context: ArrivalContext): Arrivals {
  const { settings, grant, endpoint, refresh, emit, shared, owner, stopped } = context
  const { clientId, now, retry, renewal } = settings
  const issuer = settings.server.issuer

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

  /**
   * Waits `ms` for `slot`'s flight. Only a background renewal lets the process exit meanwhile: a
   * caller waiting for a token (a batch job whose only work is `get()`) must keep it alive.
   */
  function delay(ms: number, slot: Slot): Promise<void> {
    return new Promise((resolve, reject) => {
      if (stopped.aborted) return reject(closedError())
      const onAbort = () => {
        clearTimeout(timer)
        slot.sleeping = undefined
        reject(closedError())
      }
      const timer = setTimeout(() => {
        stopped.removeEventListener('abort', onAbort)
        slot.sleeping = undefined
        resolve()
      }, ms)
      if (!slot.awaited) timer.unref()
      slot.sleeping = timer
      stopped.addEventListener('abort', onAbort, { once: true })
    })
  }

  /**
   * One grant request; `sending` is called as it goes out. Refresh-token requests run one at a
   * time, each with the latest token; none goes out with a refresh token already refused.
   */
  function requestOnce(slot: Slot, sending: () => void): Promise<GrantResult> {
    if (refresh === undefined) {
      sending()
      return endpoint.request(grant, slot.parameters)
    }
    return refresh.run((refreshToken) => {
      sending()
      return endpoint.request('refresh_token', slot.parameters, refreshToken)
    })
  }

  function usable(slot: Slot, at: number): boolean {
    return slot.current !== undefined && at < slot.current.usableUntil
  }

  /** Asks the provider, retrying retryable failures with exponential backoff and full jitter. */
  async function requestWithRetries(slot: Slot): Promise<Arrival> {
    const isRenewal = slot.current !== undefined
    const startedAt = performance.now()
    for (let attempt = 1; ; attempt++) {
      if (stopped.aborted) throw closedError()
      const requestedAt = now()
      try {
        const result = await requestOnce(slot, () =>
          emit?.({ type: 'token_requested', ...slot.facts, attempt, renewal: isRenewal }),
        )
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
        // A refresh token may have been spent (and rotated) by a request whose answer was lost:
        // sending it again would look like reuse and revoke the grant (RFC 9700 §4.14.2).
        const willRetry =
          failure.retryable &&
          (refresh === undefined || mayResend(failure)) &&
          attempt < retry.attempts &&
          !stopped.aborted
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
        await delay(Math.random() * ceiling, slot)
      }
    }
  }

  function adopt(held: Held): Arrival {
    return { held, from: 'shared_cache', durationMs: 0 }
  }

  /**
   * Reports a Redis failure with its name and message only: ioredis attaches the failed command
   * and its arguments to the error (`command.args`), which for a write hold the access token.
   */
  function sharedError(error: unknown): void {
    emit?.({ type: 'shared_cache_error', issuer, clientId, error: redisFailure(error) })
  }

  /** With a shared cache: take a newer token another instance stored, or renew under the lock. */
  async function viaSharedCache(slot: Slot, cache: SharedCache, key: string): Promise<Arrival> {
    let locked = false
    try {
      const seen = await cache.read(key)
      const seenHeld =
        seen === undefined || seen.raw === slot.current?.sharedRaw || seen.raw === slot.refusedRaw
          ? undefined
          : hold(seen.token, seen.raw)
      if (seenHeld !== undefined && now() < seenHeld.renewAt) return adopt(seenHeld)
      locked = await cache.lock(key, owner)
      if (!locked) {
        // Another instance is renewing: keep serving ours if we may, else take the stored one
        // while it is usable, else wait for theirs.
        if (slot.current !== undefined && usable(slot, now())) {
          return { held: slot.current, from: undefined, durationMs: 0 }
        }
        if (seenHeld !== undefined && now() < seenHeld.usableUntil) return adopt(seenHeld)
        // Real time, not the clock option: this waits for another instance, in this world.
        const until = performance.now() + (settings.sharedCache?.lockMs ?? 0)
        const stored = async (): Promise<Held | undefined> => {
          const next = await cache.read(key)
          if (next === undefined || next.raw === seen?.raw || next.raw === slot.refusedRaw) {
            return undefined
          }
          const nextHeld = hold(next.token, next.raw)
          return now() < nextHeld.usableUntil ? nextHeld : undefined
        }
        while (performance.now() < until && !stopped.aborted) {
          await delay(SHARED_POLL_MS, slot)
          // The other instance stores its token and releases the lock in one step: a free lock
          // means its token is there, or it failed (or died) and this instance renews.
          locked = await cache.lock(key, owner)
          const next = await stored()
          if (next !== undefined) {
            if (locked) cache.unlock(key, owner).catch(sharedError)
            return adopt(next)
          }
          if (locked) break
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
    // A token that may not be served again (expires_in 0) is not stored for the fleet either.
    if (now() >= held.usableUntil) {
      if (locked) cache.unlock(key, owner).catch(sharedError)
      return arrival
    }
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

  return {
    arrive: (slot) =>
      shared !== undefined && slot.sharedKey !== undefined
        ? viaSharedCache(slot, shared, slot.sharedKey)
        : requestWithRetries(slot),
    closedError,
    sharedError,
  }
}

/** A Redis failure without what ioredis attaches to it (the command and its arguments). */
function redisFailure(error: unknown): Error {
  const name = error instanceof Error ? error.name : 'Error'
  const message = error instanceof Error ? error.message : 'shared cache failed'
  const failure = new Error(message)
  failure.name = name
  return failure
}
