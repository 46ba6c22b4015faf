/**
 * The DPoP replay cache (RFC 9449 §11.1): each proof is accepted once while its `iat` is within
 * the window. In process memory, in Redis with `SET NX PX`, which is atomic on the server, or in
 * the application's `SharedStore` with `claimOnce` (atomic by its contract), so that a proof
 * accepted by one instance is refused by every other one sharing the store.
 *
 * @module
 */
import { hash } from 'node:crypto'
import { storeCall } from '../deadline.js'
import { InvalidDpopProofError, ServiceUnavailableError } from '../errors.js'
import { FifoMap } from '../fifo-map.js'
import { checkedClaim, type SharedStore } from '../shared-store.js'
import type { DpopRedisClientLike } from './options.js'

/** Remembers proofs. */
export interface ReplayCache {
  /**
   * Records the proof `jti` of key `jkt` for `ttlMs`. Resolves when it had not been seen.
   *
   * @throws InvalidDpopProofError (`dpop_replayed`) when it had been, within its window.
   * @throws ServiceUnavailableError (503 `ERR_DPOP_REPLAY_UNAVAILABLE`) when the store fails, does
   * not answer within its deadline, or (memory) is full of unexpired proofs.
   */
  claim(jkt: string, jti: string, ttlMs: number, nowMs: number): Promise<void>
}

const replayed = () => new InvalidDpopProofError({ reason: 'dpop_replayed' })
const unavailable = (cause?: unknown, retryAfterSeconds = 1) =>
  new ServiceUnavailableError({
    code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
    retryAfterSeconds,
    ...(cause === undefined ? {} : { cause }),
  })

// `jti` is the client's text, of any length: the stored key is a fixed-size hash, per key so that
// one client cannot spend another's jti values.
function entryKey(jkt: string, jti: string): string {
  return hash('sha256', `${jkt}.${jti}`, 'base64url')
}

/**
 * Proofs in this process's memory. Every entry lives as long as the others, so insertion order is
 * expiry order and expired entries are dropped from the front. Full of unexpired entries, it
 * refuses new proofs (503) rather than forget one early, which would let it be replayed. One proof
 * key may hold at most `maxEntriesPerKey` of them, so that one client sending proofs as fast as it
 * can is refused (503) alone instead of filling the cache for everyone.
 */
export function createMemoryReplayCache(
  maxEntries: number,
  maxEntriesPerKey: number = maxEntries,
): ReplayCache {
  const seen = new FifoMap<string, { readonly expiresAt: number; readonly jkt: string }>()
  const perKey = new Map<string, number>()

  function forget(key: string, jkt: string): void {
    seen.delete(key)
    const held = (perKey.get(jkt) ?? 1) - 1
    if (held === 0) perKey.delete(jkt)
    else perKey.set(jkt, held)
  }

  return {
    async claim(jkt, jti, ttlMs, nowMs) {
      for (let oldest = seen.oldest(); oldest !== undefined; oldest = seen.oldest()) {
        const [key, entry] = oldest
        if (entry.expiresAt > nowMs) break
        forget(key, entry.jkt)
      }
      const key = entryKey(jkt, jti)
      const entry = seen.get(key)
      if (entry !== undefined && entry.expiresAt > nowMs) throw replayed()
      const held = perKey.get(jkt) ?? 0
      if (held >= maxEntriesPerKey || seen.size >= maxEntries) throw unavailable()
      if (entry !== undefined) forget(key, entry.jkt)
      seen.set(key, { expiresAt: nowMs + ttlMs, jkt })
      perKey.set(jkt, (perKey.get(jkt) ?? 0) + 1)
    },
  }
}

/**
 * Bounds what one proof key writes to a shared store (Redis or `shared`), which keeps every claim
 * for its window and has no per-key bound of its own: the DPoP step runs before the rate limit,
 * so without this one bound token with fresh proofs would write a claim per request, as fast as
 * it can send them. At most `maxPerKey` claims of a key are sent to the store in each window of
 * `ttlMs`, counted in this process and checked before the store is called; past it, that key's
 * proofs are answered 503 until its window ends, and other keys are not affected (as the memory
 * cache's per-key bound). N instances sharing the store write at most N × `maxPerKey` claims per
 * key and window. The windows of at most `maxKeys` keys are held; past that the oldest is
 * dropped, which only lets that key start a new window early.
 */
export function capClaimsPerKey(
  cache: ReplayCache,
  maxKeys: number,
  maxPerKey: number,
): ReplayCache {
  // Every window lasts the gate's one replay TTL, so insertion order is end order.
  const windows = new FifoMap<string, { count: number; readonly endsAt: number }>()
  return {
    async claim(jkt, jti, ttlMs, nowMs) {
      for (let oldest = windows.oldest(); oldest !== undefined; oldest = windows.oldest()) {
        if (oldest[1].endsAt > nowMs) break
        windows.delete(oldest[0])
      }
      let window = windows.get(jkt)
      if (window === undefined) {
        if (windows.size >= maxKeys) windows.shift()
        window = { count: 0, endsAt: nowMs + ttlMs }
        windows.set(jkt, window)
      }
      if (window.count >= maxPerKey) {
        throw unavailable(undefined, Math.ceil((window.endsAt - nowMs) / 1000))
      }
      // Counted before the call: a claim the store took after its deadline is written all the same.
      window.count += 1
      return cache.claim(jkt, jti, ttlMs, nowMs)
    },
  }
}

/**
 * What the store answered within `timeoutMs` (once `client` has connected, when it is an ioredis
 * client still connecting), or the 503 when it rejected, threw or did not answer in time.
 */
async function answerWithin(
  client: object,
  call: () => Promise<unknown>,
  timeoutMs: number,
): Promise<unknown> {
  try {
    return await storeCall(client, call, timeoutMs, () => new Error('replay store timeout'))
  } catch (error) {
    throw unavailable(error)
  }
}

/** Proofs in Redis, shared by every instance that uses the same store and prefix. */
export function createRedisReplayCache(
  redis: DpopRedisClientLike,
  options: { readonly keyPrefix: string; readonly storeTimeoutMs: number },
): ReplayCache {
  const prefix = `${options.keyPrefix}:`
  return {
    async claim(jkt, jti, ttlMs) {
      const answer = await answerWithin(
        redis,
        () => redis.set(`${prefix}${entryKey(jkt, jti)}`, '1', 'PX', Math.ceil(ttlMs), 'NX'),
        options.storeTimeoutMs,
      )
      if (answer === null) throw replayed()
      if (answer !== 'OK') throw unavailable()
    },
  }
}

/**
 * Proofs in the application's {@link SharedStore}, under the keys the Redis store uses: every
 * instance sharing the store (and prefix) refuses a proof another one accepted.
 */
export function createSharedReplayCache(
  shared: SharedStore,
  options: { readonly keyPrefix: string; readonly storeTimeoutMs: number },
): ReplayCache {
  const prefix = `${options.keyPrefix}:`
  return {
    async claim(jkt, jti, ttlMs) {
      const answer = await answerWithin(
        shared,
        () => shared.claimOnce(`${prefix}${entryKey(jkt, jti)}`, Math.ceil(ttlMs)),
        options.storeTimeoutMs,
      )
      let claimed: boolean
      try {
        claimed = checkedClaim(answer)
      } catch (error) {
        throw unavailable(error)
      }
      if (!claimed) throw replayed()
    },
  }
}
