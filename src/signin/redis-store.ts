/**
 * The session store for a fleet: Redis, through the ioredis client the limiter and the token
 * source's shared cache already use. Lua scripts keep each step atomic: read-and-touch, and
 * replace-only-while-locked-and-present, so a refresh never overwrites a logout or another
 * instance's rotation. A session and its lock share a Redis Cluster hash tag.
 *
 * @module
 */
import { storeCall } from '../deadline.js'
import type { RedisClientLike } from '../limits/rate-limit.js'
import { redisKeyPrefix, validateFor } from '../validate.js'
import type { SessionStore } from './store.js'

/** Options of {@link createRedisSessionStore}. */
export interface RedisSessionStoreOptions {
  /** An ioredis `Redis` or `Cluster` client. */
  readonly redis: RedisClientLike
  /** Prefix of every key. Default `'tollgate:session'`. */
  readonly keyPrefix?: string
  /** Deadline of one Redis operation, in ms; past it the request is answered 503. Default 1000. */
  readonly timeoutMs?: number
}

interface SessionCommands {
  tollgateSessionRead(key: string, idleMs: number): Promise<unknown>
  tollgateSessionReplace(
    key: string,
    lock: string,
    value: string,
    ttlMs: number,
    owner: string,
  ): Promise<unknown>
  tollgateSessionLock(lock: string, owner: string, ttlMs: number): Promise<unknown>
  tollgateSessionUnlock(lock: string, owner: string): Promise<unknown>
  tollgateSessionIndex(index: string, member: string, ttlMs: number): Promise<unknown>
}

const COMMANDS = {
  tollgateSessionRead: {
    numberOfKeys: 1,
    lua: `local value = redis.call('GET', KEYS[1])
if value then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return value`,
  },
  tollgateSessionReplace: {
    numberOfKeys: 2,
    lua: `if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`,
  },
  tollgateSessionLock: {
    numberOfKeys: 1,
    lua: "return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')",
  },
  tollgateSessionUnlock: {
    numberOfKeys: 1,
    lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
  },
  // An index lives as long as the longest session in it may: its lifetime is only ever lengthened
  // (PEXPIRE ... GT, which Redis 6 lacks). A shorter one would let an active session drop out of
  // it, and a back-channel logout by sid or sub would no longer find it.
  tollgateSessionIndex: {
    numberOfKeys: 1,
    lua: `redis.call('SADD', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`,
  },
} as const

/**
 * A session store in Redis. Defines its scripts on the client.
 *
 * @throws TypeError when `redis` is not an ioredis client or `keyPrefix` is malformed.
 */
export function createRedisSessionStore(options: RedisSessionStoreOptions): SessionStore {
  const client = options?.redis as unknown as Record<string, unknown> | undefined
  if (typeof client?.['defineCommand'] !== 'function') {
    throw new TypeError(
      'createRedisSessionStore(options): "redis" must be an ioredis Redis or Cluster client',
    )
  }
  const prefix = validateFor('createRedisSessionStore(options):', () =>
    redisKeyPrefix(options.keyPrefix, 'keyPrefix', 'tollgate:session'),
  )
  const timeoutMs = options.timeoutMs ?? 1000
  if (!Number.isInteger(timeoutMs) || timeoutMs < 10 || timeoutMs > 60_000) {
    throw new TypeError(
      'createRedisSessionStore(options): "timeoutMs" must be a whole number from 10 to 60000',
    )
  }
  const redis = options.redis
  // The application's first requests may come while its client still connects (see storeCall).
  const bounded = <T>(call: () => Promise<T>) =>
    storeCall(redis, call, timeoutMs, () => new Error('session store timed out'))
  for (const [name, definition] of Object.entries(COMMANDS)) redis.defineCommand(name, definition)
  const commands = redis as unknown as SessionCommands & {
    del(key: string): Promise<unknown>
    exists(key: string): Promise<number>
    set(key: string, value: string, mode: 'PX', ms: number): Promise<unknown>
    smembers(key: string): Promise<string[]>
    srem(key: string, ...members: string[]): Promise<unknown>
  }
  const sessionKey = (key: string) => `${prefix}:{${key}}`
  const lockKey = (key: string) => `${prefix}:{${key}}:lock`
  const indexKey = (name: string) => `${prefix}:index:${name}`
  /**
   * The members of an index whose session still exists; the others are removed from it. A
   * session that ended by its idle expiry (Redis dropped the key, nobody called delete) leaves
   * its index this way. A member whose key is gone can never come back (ids are never reused),
   * so removing it races with nothing. One EXISTS per member: the session keys sit in other
   * Cluster slots than the index, so no script can see both.
   */
  async function liveMembers(name: string): Promise<string[]> {
    const members = await bounded(() => commands.smembers(indexKey(name)))
    const exists = await Promise.all(
      members.map((member) => bounded(() => commands.exists(sessionKey(member)))),
    )
    const ended = members.filter((_, at) => exists[at] === 0)
    if (ended.length > 0) await bounded(() => commands.srem(indexKey(name), ...ended))
    return members.filter((_, at) => exists[at] !== 0)
  }
  return {
    async read(key, idleMs) {
      const value = await bounded(() =>
        commands.tollgateSessionRead(sessionKey(key), Math.max(1, idleMs)),
      )
      return typeof value === 'string' ? value : undefined
    },
    async create(key, value, ttlMs, indexes, indexTtlMs = ttlMs) {
      await bounded(() => commands.set(sessionKey(key), value, 'PX', Math.max(1, ttlMs)))
      const indexLifetime = Math.max(1, ttlMs, indexTtlMs)
      for (const name of indexes) {
        await bounded(() => commands.tollgateSessionIndex(indexKey(name), key, indexLifetime))
        // A user who signs in often would otherwise keep every ended session in the index until
        // the index itself expires, which each sign-in postpones.
        await liveMembers(name)
      }
    },
    async replace(key, value, ttlMs, owner) {
      const written = await bounded(() =>
        commands.tollgateSessionReplace(
          sessionKey(key),
          lockKey(key),
          value,
          Math.max(1, ttlMs),
          owner,
        ),
      )
      return written === 1
    },
    async delete(key, indexes = []) {
      await bounded(() => commands.del(sessionKey(key)))
      for (const name of indexes) await bounded(() => commands.srem(indexKey(name), key))
    },
    async lock(key, owner, ttlMs) {
      const answer = await bounded(() =>
        commands.tollgateSessionLock(lockKey(key), owner, Math.max(1, ttlMs)),
      )
      return answer === 'OK'
    },
    async unlock(key, owner) {
      await bounded(() => commands.tollgateSessionUnlock(lockKey(key), owner))
    },
    async indexed(name) {
      return liveMembers(name)
    },
  }
}
