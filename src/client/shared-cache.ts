/**
 * The optional cache shared by a fleet through Redis (the limiter's ioredis client): one token per
 * client and request parameters, renewed by whichever instance takes the renewal lock first while
 * the others keep serving theirs, so a fleet asks the provider once, not once per process.
 * Keys carry a Redis Cluster hash tag so a token and its lock live on one node. Refresh tokens
 * never go here.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import { storeCall } from '../deadline.js'

import type { RedisClientLike } from '../limits/rate-limit.js'

/** What the fleet shares for one key: enough to schedule renewal, never a refresh token. */
export interface SharedToken {
  readonly accessToken: string
  /** When the token was requested, ms since the epoch (the renewing instance's clock). */
  readonly obtainedAt: number
  readonly expiresInSeconds: number
}

/** One key's entry in Redis, and the raw value it was read from (to compare before deleting). */
export interface SharedRead {
  readonly token: SharedToken
  readonly raw: string
}

/** Redis operations of the shared cache; each fails after `timeoutMs`. */
export interface SharedCache {
  /** The Redis key of a cache key (its material hashed, so scopes stay out of Redis keys). */
  keyOf(material: string): string
  read(key: string): Promise<SharedRead | undefined>
  /** Takes the renewal lock; `false` when another instance holds it. */
  lock(key: string, owner: string): Promise<boolean>
  /** Stores the token for `ttlMs` and releases the lock if `owner` still holds it. */
  write(key: string, token: SharedToken, ttlMs: number, owner: string): Promise<string>
  unlock(key: string, owner: string): Promise<void>
  /** Deletes the entry if it still is `raw` (a refused token), never a newer one. */
  drop(key: string, raw: string): Promise<void>
}

interface TokenCommands {
  tollgateTokenLock(key: string, owner: string, ttlMs: number): Promise<unknown>
  tollgateTokenWrite(
    key: string,
    lock: string,
    value: string,
    ttlMs: number,
    owner: string,
  ): Promise<unknown>
  tollgateTokenUnlock(lock: string, owner: string): Promise<unknown>
  tollgateTokenRead(key: string): Promise<unknown>
  tollgateTokenDrop(key: string, raw: string): Promise<unknown>
}

// Deletes KEYS[1] only while it still holds ARGV[1]: the lock of its owner, or the refused token.
const DELETE_IF_EQUAL =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"

const COMMANDS = {
  tollgateTokenRead: { numberOfKeys: 1, lua: "return redis.call('GET', KEYS[1])" },
  tollgateTokenLock: {
    numberOfKeys: 1,
    lua: "return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')",
  },
  tollgateTokenWrite: {
    numberOfKeys: 2,
    lua: `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1`,
  },
  tollgateTokenUnlock: { numberOfKeys: 1, lua: DELETE_IF_EQUAL },
  tollgateTokenDrop: { numberOfKeys: 1, lua: DELETE_IF_EQUAL },
} as const

function parse(raw: unknown): SharedRead | undefined {
  if (typeof raw !== 'string') return undefined
  try {
    const value = JSON.parse(raw) as Partial<SharedToken>
    if (
      typeof value.accessToken === 'string' &&
      typeof value.obtainedAt === 'number' &&
      typeof value.expiresInSeconds === 'number'
    ) {
      return { token: value as SharedToken, raw }
    }
  } catch {}
  return undefined
}

/** Defines the cache's Lua commands on `redis` and returns its operations. */
export function createSharedCache(
  redis: RedisClientLike,
  keyPrefix: string,
  lockMs: number,
  timeoutMs: number,
): SharedCache {
  for (const [name, definition] of Object.entries(COMMANDS)) redis.defineCommand(name, definition)
  const commands = redis as unknown as TokenCommands
  // An instance's first token may be asked for while its client still connects (see storeCall).
  const bounded = <T>(call: () => Promise<T>): Promise<T> =>
    storeCall(redis, call, timeoutMs, () => new Error('shared cache timed out'))
  return {
    keyOf: (material) =>
      `${keyPrefix}:{${createHash('sha256').update(material).digest('base64url').slice(0, 32)}}`,
    read: async (key) => parse(await bounded(() => commands.tollgateTokenRead(key))),
    lock: async (key, owner) =>
      (await bounded(() => commands.tollgateTokenLock(`${key}:lock`, owner, lockMs))) === 'OK',
    async write(key, token, ttlMs, owner) {
      const raw = JSON.stringify(token)
      await bounded(() =>
        commands.tollgateTokenWrite(key, `${key}:lock`, raw, Math.max(1, Math.floor(ttlMs)), owner),
      )
      return raw
    },
    async unlock(key, owner) {
      await bounded(() => commands.tollgateTokenUnlock(`${key}:lock`, owner))
    },
    async drop(key, raw) {
      await bounded(() => commands.tollgateTokenDrop(key, raw))
    },
  }
}
