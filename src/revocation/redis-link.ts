/**
 * tollgate's connection to the Redis that holds the revocation list: its key names, scripts run
 * with a deadline (`storeTimeoutMs`), and store errors reported at most once a second.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import { storeCall } from '../deadline.js'
import type { Emit } from '../events.js'
import type { NormalizedRevocationOptions, RevocationRedisClient } from './options.js'
import { CLAIM } from './redis-scripts.js'

const STORE_ERROR_EVENT_INTERVAL_MS = 1000

/** The Redis keys of one list (one hash slot: `{<prefix>}`) and its channel. */
export interface RevocationKeys {
  readonly entries: string
  readonly seq: string
  readonly removed: string
  readonly log: string
  readonly sweep: string
  /** The replay memory of one logout token (`claimOnce`). */
  seen(hashed: string): string
  readonly channel: string
}

export function revocationKeys(keyPrefix: string): RevocationKeys {
  const tag = `{${keyPrefix}}`
  return {
    entries: `${tag}:entries`,
    seq: `${tag}:seq`,
    removed: `${tag}:removed`,
    log: `${tag}:log`,
    sweep: `${tag}:sweep`,
    seen: (hashed) => `${tag}:seen:${hashed}`,
    channel: `${keyPrefix}:events`,
  }
}

/** Runs the list's scripts on the application's client, each within `storeTimeoutMs`. */
export class RedisLink {
  readonly keys: RevocationKeys
  private lastErrorEventAt = Number.NEGATIVE_INFINITY

  readonly client: RevocationRedisClient
  private readonly options: Pick<NormalizedRevocationOptions, 'storeTimeoutMs' | 'keyPrefix'>
  private readonly emit: Emit

  constructor(
    client: RevocationRedisClient,
    options: Pick<NormalizedRevocationOptions, 'storeTimeoutMs' | 'keyPrefix'>,
    emit: Emit,
  ) {
    this.client = client
    this.options = options
    this.emit = emit
    this.keys = revocationKeys(options.keyPrefix)
  }

  /**
   * `EVAL script` with these keys and arguments, once the client has connected when it is
   * connecting now (a gateway's first requests and logouts may come first); rejects past the
   * deadline.
   */
  run<T>(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return this.withDeadline(
      () => this.client.eval(script, keys.length, ...keys, ...args) as Promise<T>,
    )
  }

  /** `call()` as {@link run} calls a script. */
  withDeadline<T>(call: () => Promise<T>): Promise<T> {
    return storeCall(this.client, call, this.options.storeTimeoutMs, () => {
      const error = new Error(
        `revocation store did not answer within ${this.options.storeTimeoutMs} ms`,
      )
      error.name = 'TimeoutError'
      return error
    })
  }

  /** Records `key` for `ttlMs` unless recorded: `true` the first time, `undefined` when Redis failed. */
  async claimOnce(key: string, ttlMs: number): Promise<boolean | undefined> {
    const hashed = createHash('sha256').update(key).digest('base64url')
    try {
      const reply = await this.run<string | null>(CLAIM, [this.keys.seen(hashed)], [ttlMs])
      return reply === 'OK'
    } catch (error) {
      this.storeError(error)
      return undefined
    }
  }

  /** A `revocation_store_error` event, at most one a second. */
  storeError(error: unknown): void {
    const now = Date.now()
    if (now - this.lastErrorEventAt < STORE_ERROR_EVENT_INTERVAL_MS) return
    this.lastErrorEventAt = now
    this.emit?.({ type: 'revocation_store_error', error })
  }
}

/** Lets the event loop run what is waiting (requests, messages) between two pages of work. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
