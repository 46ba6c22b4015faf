/**
 * What the receiver remembers: the `jti`s it applied (so that a retry, or the same SET pushed to
 * another instance, is applied once: RFC 8417 §2.2 makes `jti` unique per issuer), what
 * `account-disabled` set (so that `account-enabled` lifts that and nothing else), and, in Redis,
 * what the fleet heard of the stream (`stream-state.ts`). In this process, or in Redis for the
 * fleet. A Redis call that fails or answers late throws
 * {@link StoreUnavailable}: the receiver then answers 503 and acknowledges nothing.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import { storeCall } from '../deadline.js'
import { FifoMap } from '../fifo-map.js'

import type { SignalRedisClient } from './options.js'

/** The store did not answer in time, or failed. */
export class StoreUnavailable extends Error {
  constructor(cause: unknown) {
    super('signal store unavailable', { cause })
    this.name = 'StoreUnavailable'
  }
}

/** The receiver's memory. */
export interface SignalStore {
  /** `true` when this call recorded `key` (for `ttlMs`), `false` when it was recorded already. */
  claim(key: string, ttlMs: number): Promise<boolean>
  /** Forgets a claim whose SET could not be applied, so that the transmitter's retry is. */
  release(key: string): Promise<void>
  get(key: string): Promise<string | undefined>
  set(key: string, value: string, ttlMs: number): Promise<void>
  /**
   * Sets `key` to `record` (as JSON) unless it holds a newer one (its `at`; of two as new, the
   * last written wins): the latest of events that may arrive out of order, whichever instance
   * hears which.
   */
  setNewer(key: string, record: { readonly at: number }, ttlMs: number): Promise<void>
}

/** The `at` of a record {@link SignalStore.setNewer} wrote, or `undefined` for anything else. */
function atOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  try {
    const at = (JSON.parse(text) as { at?: unknown } | null)?.at
    return typeof at === 'number' && Number.isFinite(at) ? at : undefined
  } catch {
    return undefined
  }
}

/** Entries kept in memory at most; past it, the oldest go first. */
const MAX_MEMORY_ENTRIES = 100_000

/** A store key: hashed, so that ids of any length and character fit and nothing is shown. */
export function storeKey(kind: string, ...parts: string[]): string {
  return `${kind}:${createHash('sha256').update(parts.join('\0')).digest('base64url')}`
}

/** This process only. */
export class MemorySignalStore implements SignalStore {
  private readonly entries = new FifoMap<string, { value: string; expiresAt: number }>()

  private readonly now: () => number

  constructor(now: () => number = Date.now) {
    this.now = now
  }

  private live(key: string): { value: string; expiresAt: number } | undefined {
    const entry = this.entries.get(key)
    if (entry !== undefined && entry.expiresAt <= this.now()) {
      this.entries.delete(key)
      return undefined
    }
    return entry
  }

  private put(key: string, value: string, ttlMs: number): void {
    this.entries.delete(key)
    if (this.entries.size >= MAX_MEMORY_ENTRIES) this.entries.shift()
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs })
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    if (this.live(key) !== undefined) return false
    this.put(key, '1', ttlMs)
    return true
  }

  async release(key: string): Promise<void> {
    this.entries.delete(key)
  }

  async get(key: string): Promise<string | undefined> {
    return this.live(key)?.value
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.put(key, value, ttlMs)
  }

  async setNewer(key: string, record: { readonly at: number }, ttlMs: number): Promise<void> {
    const held = atOf(this.live(key)?.value)
    if (held === undefined || held <= record.at) this.put(key, JSON.stringify(record), ttlMs)
  }
}

const CLAIM = "return redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX') and 1 or 0"
const RELEASE = "return redis.call('DEL', KEYS[1])"
const GET = "return redis.call('GET', KEYS[1])"
const SET = "return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])"
// ARGV: the record (JSON), its `at`, the TTL. What is held and cannot be read is replaced.
const SET_NEWER = `local held = redis.call('GET', KEYS[1])
if held then
  local ok, old = pcall(cjson.decode, held)
  if ok and type(old) == 'table' and tonumber(old.at) and tonumber(old.at) > tonumber(ARGV[2]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1`

/** Redis, shared by every instance (the client the gate's revocation uses). */
export class RedisSignalStore implements SignalStore {
  private readonly client: SignalRedisClient
  private readonly prefix: string
  private readonly timeoutMs: number

  constructor(client: SignalRedisClient, prefix: string, timeoutMs: number) {
    this.client = client
    this.prefix = prefix
    this.timeoutMs = timeoutMs
  }

  private async run(script: string, key: string, ...args: (string | number)[]): Promise<unknown> {
    try {
      return await storeCall(
        this.client,
        () => this.client.eval(script, 1, `${this.prefix}:${key}`, ...args),
        this.timeoutMs,
        () => new Error('timeout'),
      )
    } catch (error) {
      throw new StoreUnavailable(error)
    }
  }

  async claim(key: string, ttlMs: number): Promise<boolean> {
    return (await this.run(CLAIM, key, Math.max(1, Math.ceil(ttlMs)))) === 1
  }

  async release(key: string): Promise<void> {
    await this.run(RELEASE, key)
  }

  async get(key: string): Promise<string | undefined> {
    const value = await this.run(GET, key)
    return typeof value === 'string' ? value : undefined
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.run(SET, key, value, Math.max(1, Math.ceil(ttlMs)))
  }

  async setNewer(key: string, record: { readonly at: number }, ttlMs: number): Promise<void> {
    await this.run(SET_NEWER, key, JSON.stringify(record), record.at, Math.max(1, Math.ceil(ttlMs)))
  }
}
