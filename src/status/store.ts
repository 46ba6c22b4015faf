/**
 * The Redis operations of shared status lists (`statusList.store: { redis }`): a list's entry (the
 * Status List Token as the issuer served it, with the time it is kept as its Redis TTL) and the
 * short lock of the instance fetching it. Every call is bounded by `storeTimeoutMs`. Nothing
 * here judges what Redis answers: `fleet.ts` verifies it as a fetched list.
 *
 * @module
 */
import { createHash } from 'node:crypto'

import type { StatusListRedisClient } from './options.js'

/** What Redis holds for a list. */
export type StoredList =
  | { readonly jwt: string; readonly ttlMs: number }
  /** An entry longer than `maxListTokenBytes`: not read. */
  | 'too_large'
  | undefined

/** The Redis operations of one gate's shared lists. */
export interface ListStore {
  /** The entry's key for the list at `uri` of `issuer` (hashed: a URI may hold anything). */
  keyOf(issuer: string, uri: string): string
  read(key: string): Promise<StoredList>
  /**
   * Takes the fetch lock for `lockMs` and, when it was free, reads the entry in the same step:
   * an instance stores its list and releases the lock in one step too, so the entry read with
   * the lock is the last one stored. While another instance holds the lock, nothing is sent.
   */
  lock(
    key: string,
  ): Promise<{ readonly locked: true; readonly stored: StoredList } | { readonly locked: false }>
  /** Stores `jwt` for `ttlMs` and releases this instance's lock. */
  write(key: string, jwt: string, ttlMs: number): Promise<void>
  /** Releases this instance's lock, never another's. */
  unlock(key: string): Promise<void>
}

// The entry, after whether the lock was taken: nothing when absent, 0 when over the size bound
// (not sent), else 1, its PTTL (-1 for an entry without one, not written by tollgate) and itself.
const ENTRY = `local size = redis.call('STRLEN', KEYS[1])
if size == 0 then return {locked} end
if size > tonumber(ARGV[1]) then return {locked, 0} end
return {locked, 1, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[1])}`
const READ = `local locked = 0
${ENTRY}`
const LOCK = `if not redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3], 'NX') then return {0} end
local locked = 1
${ENTRY}`
// The entry and the release of the lock in one step: an instance waiting on the lock that finds
// it free finds the list there too.
const WRITE = `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1`
const UNLOCK =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"

/** A Redis call that failed or did not answer in time. */
export class ListStoreFailure extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ListStoreFailure'
  }
}

/**
 * The failure as events show it: name and message, never what ioredis attaches (the command and
 * its arguments, a whole list for a write).
 */
function failureOf(error: unknown): ListStoreFailure {
  const failure = new ListStoreFailure(
    error instanceof Error ? error.message : 'status list store failed',
  )
  if (error instanceof Error) failure.name = error.name
  return failure
}

function entryOf(answer: unknown): StoredList {
  if (!Array.isArray(answer) || answer.length < 2) return undefined
  if (answer[1] === 0) return 'too_large'
  const [, , ttlMs, jwt] = answer as [number, number, unknown, unknown]
  if (typeof jwt !== 'string' || typeof ttlMs !== 'number') return undefined
  // -1: an entry without a TTL; the list's own times bound it (fleet.ts).
  return { jwt, ttlMs: ttlMs < 0 ? Infinity : ttlMs }
}

export function createListStore(
  redis: StatusListRedisClient,
  keyPrefix: string,
  owner: string,
  settings: { readonly timeoutMs: number; readonly lockMs: number; readonly maxBytes: number },
): ListStore {
  const { timeoutMs, lockMs, maxBytes } = settings
  async function run(script: string, keys: string[], ...args: (string | number)[]) {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      // Timers run before the poll phase that reads sockets: after a busy event loop the answer
      // may be waiting unread. Yield once before giving up on it.
      timer = setTimeout(
        () => setImmediate(() => reject(new Error('status list store timed out'))),
        timeoutMs,
      )
      timer.unref()
    })
    try {
      return await Promise.race([redis.eval(script, keys.length, ...keys, ...args), late])
    } catch (error) {
      throw failureOf(error)
    } finally {
      clearTimeout(timer)
    }
  }
  return {
    keyOf(issuer, uri) {
      // The hash tag keeps an entry and its lock in one Cluster slot.
      const hash = createHash('sha256').update(`${issuer}\0${uri}`).digest('base64url')
      return `${keyPrefix}:{${hash.slice(0, 32)}}`
    },
    async read(key) {
      return entryOf(await run(READ, [key], maxBytes))
    },
    async lock(key) {
      const answer = await run(LOCK, [key, `${key}:lock`], maxBytes, owner, lockMs)
      return Array.isArray(answer) && answer[0] === 1
        ? { locked: true, stored: entryOf(answer) }
        : { locked: false }
    },
    async write(key, jwt, ttlMs) {
      await run(WRITE, [key, `${key}:lock`], jwt, Math.max(1, Math.floor(ttlMs)), owner)
    },
    async unlock(key) {
      await run(UNLOCK, [`${key}:lock`], owner)
    },
  }
}
