/**
 * A token through the shared cache: a newer one another instance of the fleet stored, or one
 * this instance asks the provider for under the Redis lock (storing it for the others); while
 * another instance holds the lock, the held token is served, or the stored one, or this one waits
 * for theirs.
 *
 * @module
 */
import { type ArrivalContext, delay, hold, usable } from './arrival-context.js'
import { requestWithRetries } from './arrival-provider.js'
import { isTokenSourceError } from './errors.js'
import type { SharedCache, SharedToken } from './shared-cache.js'
import type { Arrival, Held, Slot } from './slot.js'

const SHARED_POLL_MS = 50

function adopt(held: Held): Arrival {
  return { held, from: 'shared_cache', durationMs: 0 }
}

/**
 * Reports a Redis failure with its name and message only: ioredis attaches the failed command
 * and its arguments to the error (`command.args`), which for a write hold the access token.
 */
export function reportSharedError(context: ArrivalContext, error: unknown): void {
  const { emit, settings } = context
  const { clientId } = settings
  const issuer = settings.server.issuer
  emit?.({ type: 'shared_cache_error', issuer, clientId, error: redisFailure(error) })
}

/** With a shared cache: take a newer token another instance stored, or renew under the lock. */
export async function viaSharedCache(
  context: ArrivalContext,
  slot: Slot,
  cache: SharedCache,
  key: string,
): Promise<Arrival> {
  const { settings, owner, stopped } = context
  const { now } = settings
  const sharedError = (error: unknown) => reportSharedError(context, error)
  let locked = false
  try {
    const seen = await cache.read(key)
    const seenHeld =
      seen === undefined || seen.raw === slot.current?.sharedRaw || seen.raw === slot.refusedRaw
        ? undefined
        : hold(context, seen.token, seen.raw)
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
        const nextHeld = hold(context, next.token, next.raw)
        return now() < nextHeld.usableUntil ? nextHeld : undefined
      }
      while (performance.now() < until && !stopped.aborted) {
        await delay(context, SHARED_POLL_MS, slot)
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
    arrival = await requestWithRetries(context, slot)
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

/** A Redis failure without what ioredis attaches to it (the command and its arguments). */
function redisFailure(error: unknown): Error {
  const name = error instanceof Error ? error.name : 'Error'
  const message = error instanceof Error ? error.message : 'shared cache failed'
  const failure = new Error(message)
  failure.name = name
  return failure
}
