/**
 * The revocation list shared through Redis (a single server or a Cluster). Redis holds the
 * entries (one hash) and a sequence number; every change is made by a script that updates both
 * and publishes the change, so each instance learns it through pub/sub within a round trip and
 * keeps deciding from memory. A full resynchronization runs on every (re)connection, on a gap in
 * the sequence and periodically. Revocations made while Redis is away are enforced locally and
 * written when it is back; a Redis that lost its data (restarted without persistence) is healed
 * from what the instances still know.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'

import type { Emit } from './events.js'
import { identityOf, type RevocationEntry, type RevocationList } from './revocation-list.js'
import type { NormalizedRevocationOptions, RevocationRedisClient } from './revocation-options.js'
import {
  ADD,
  CLAIM,
  entryOf,
  type Message,
  parseMessage,
  REMOVE,
  SNAPSHOT,
} from './revocation-redis-scripts.js'

/** What the subscriber connection is, as far as this module uses it (ioredis Redis or Cluster). */
interface Subscriber {
  readonly status: string
  on(event: string, listener: (...args: unknown[]) => void): unknown
  subscribe(channel: string): Promise<unknown>
  connect(): Promise<unknown>
  disconnect(): void
}

/** The shared side of the revocation list. */
export interface RevocationSync {
  /** Stores an entry and tells every instance; `false` when Redis failed (the write is queued). */
  add(entry: RevocationEntry): Promise<boolean>
  /** Removes an entry everywhere; `false` when Redis failed (the removal is queued). */
  remove(entry: RevocationEntry): Promise<boolean>
  /**
   * Records `key` for `ttlMs` unless already recorded: `true` the first time, `false` after,
   * `undefined` when Redis failed.
   */
  claimOnce(key: string, ttlMs: number): Promise<boolean | undefined>
  /** Whether the last resynchronization succeeded and pub/sub is connected. */
  readonly synced: boolean
  close(): void
}

const STORE_ERROR_EVENT_INTERVAL_MS = 1000
/** After a failed resynchronization, the next attempt waits this long (or the resync interval, if shorter). */
const RETRY_MS = 250

/** Starts synchronizing `list` through `client`; the subscriber is a `duplicate()` of it. */
export function createRedisSync(
  client: RevocationRedisClient,
  options: NormalizedRevocationOptions,
  context: {
    readonly list: RevocationList
    readonly emit: Emit
    readonly onSynced: (synced: boolean) => void
  },
): RevocationSync {
  const { list, emit } = context
  const tag = `{${options.keyPrefix}}`
  const keys = { entries: `${tag}:entries`, seq: `${tag}:seq`, epoch: `${tag}:epoch` }
  const channel = `${options.keyPrefix}:events`
  const subscriber = client.duplicate() as Subscriber
  /** This instance, so that its own messages are not reported as received from a peer. */
  const origin = randomUUID()
  /** Changes made while Redis failed, by identity: the entry to add, or `null` to remove. */
  const pending = new Map<string, RevocationEntry | null>()
  let synced = false
  let closed = false
  let lastSeq = 0
  let epoch: string | undefined
  /** Messages received while a snapshot is being taken, applied after it when newer. */
  let buffered: Message[] | undefined
  let resyncing: Promise<void> | undefined
  let again = false
  let retryTimer: NodeJS.Timeout | undefined
  let lastErrorEventAt = Number.NEGATIVE_INFINITY

  function storeError(error: unknown): void {
    const now = Date.now()
    if (now - lastErrorEventAt < STORE_ERROR_EVENT_INTERVAL_MS) return
    lastErrorEventAt = now
    emit?.({ type: 'revocation_store_error', error })
  }

  function setSynced(value: boolean): void {
    if (closed || synced === value) return
    synced = value
    context.onSynced(value)
  }

  function command<T>(script: string, keyList: string[], args: (string | number)[]): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(
          `revocation store did not answer within ${options.storeTimeoutMs} ms`,
        )
        error.name = 'TimeoutError'
        reject(error)
      }, options.storeTimeoutMs)
      timer.unref()
    })
    const call = client.eval(script, keyList.length, ...keyList, ...args) as Promise<T>
    call.catch(() => {})
    return Promise.race([call, deadline]).finally(() => clearTimeout(timer))
  }

  function write(identity: string, entry: RevocationEntry | null): Promise<unknown> {
    const sentAt = Date.now()
    return entry === null
      ? command(REMOVE, [keys.entries, keys.seq], [identity, channel, sentAt, origin])
      : command(
          ADD,
          [keys.entries, keys.seq],
          [identity, entry.notBefore, entry.expiresAt, channel, sentAt, origin],
        )
  }

  function apply(message: Message): void {
    const [seq, op, field, nb, x, sentAt, from] = message
    // A gap means a message was lost (pub/sub is at most once): apply this one, then resync.
    if (seq > lastSeq + 1) scheduleResync(0)
    if (seq > lastSeq) lastSeq = seq
    const entry = entryOf(field, nb, x)
    if (entry === undefined) return
    const lagMs = Math.max(0, Date.now() - sentAt)
    if (op === 'add') list.add(entry)
    else if (!list.remove(entry)) return
    if (from === origin) return
    emit?.({
      type: 'revocation_received',
      issuer: entry.issuer,
      by: entry.kind,
      removed: op === 'del',
      lagMs,
    })
  }

  function onMessage(received: unknown, text: unknown): void {
    if (received !== channel || typeof text !== 'string') return
    const message = parseMessage(text)
    if (message === undefined) return
    if (buffered !== undefined) buffered.push(message)
    else apply(message)
  }

  async function flushPending(): Promise<void> {
    for (const [identity, entry] of [...pending]) {
      await write(identity, entry)
      if (pending.get(identity) === entry) pending.delete(identity)
    }
  }

  async function snapshot(): Promise<void> {
    buffered = []
    try {
      const reply = await command<string[]>(
        SNAPSHOT,
        [keys.entries, keys.seq, keys.epoch],
        [Date.now(), randomUUID()],
      )
      const [storeEpoch, seqText] = reply
      const entries = new Map<string, RevocationEntry>()
      for (let i = 2; i + 1 < reply.length; i += 2) {
        const field = reply[i] as string
        const [nb, x] = (reply[i + 1] as string).split(':').map(Number)
        const entry = entryOf(field, nb as number, x as number)
        if (entry !== undefined) entries.set(field, entry)
      }
      if (epoch !== undefined && storeEpoch !== epoch) {
        // Redis lost its data (a restart without persistence): what this instance still knows
        // is written back, so that the fleet keeps enforcing it.
        for (const entry of list.entries()) {
          const identity = identityOf(entry)
          if (!entries.has(identity) && entry.expiresAt > Date.now()) {
            await write(identity, entry)
            entries.set(identity, entry)
          }
        }
      }
      epoch = storeEpoch
      lastSeq = Number(seqText) || 0
      list.replace(entries.values())
      const late = buffered
      buffered = undefined
      for (const message of late) if (message[0] > lastSeq) apply(message)
      emit?.({ type: 'revocation_synced', entries: list.size })
    } finally {
      buffered = undefined
    }
  }

  async function resync(): Promise<void> {
    try {
      if (subscriber.status !== 'ready' && subscriber.status !== 'connect') {
        throw new Error('revocation subscriber is not connected')
      }
      await subscriber.subscribe(channel)
      await flushPending()
      await snapshot()
      setSynced(true)
    } catch (error) {
      setSynced(false)
      storeError(error)
      scheduleResync(Math.min(RETRY_MS, options.resyncIntervalMs))
    }
  }

  /** Single flight: a request during a resync runs one more after it. */
  function runResync(): Promise<void> {
    if (closed) return Promise.resolve()
    if (resyncing !== undefined) {
      again = true
      return resyncing
    }
    resyncing = resync().finally(() => {
      resyncing = undefined
      if (again) {
        again = false
        void runResync()
      }
    })
    return resyncing
  }

  function scheduleResync(delayMs: number): void {
    if (closed || retryTimer !== undefined) return
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      void runResync()
    }, delayMs)
    retryTimer.unref()
  }

  subscriber.on('error', storeError)
  subscriber.on('message', onMessage)
  subscriber.on('ready', () => void runResync())
  subscriber.on('close', () => setSynced(false))
  // A duplicate of a `lazyConnect` client waits for a command that would never come.
  if (subscriber.status === 'wait') subscriber.connect().catch(storeError)
  const periodic = setInterval(() => void runResync(), options.resyncIntervalMs)
  periodic.unref()

  async function change(entry: RevocationEntry, add: boolean): Promise<boolean> {
    const identity = identityOf(entry)
    try {
      if (pending.size > 0) throw new Error('earlier revocation writes are still queued')
      await write(identity, add ? entry : null)
      return true
    } catch (error) {
      pending.set(identity, add ? entry : null)
      storeError(error)
      scheduleResync(Math.min(RETRY_MS, options.resyncIntervalMs))
      return false
    }
  }

  return {
    add: (entry) => change(entry, true),
    remove: (entry) => change(entry, false),
    async claimOnce(key, ttlMs) {
      const hashed = createHash('sha256').update(key).digest('base64url')
      try {
        const reply = await command<string | null>(CLAIM, [`${tag}:seen:${hashed}`], [ttlMs])
        return reply === 'OK'
      } catch (error) {
        storeError(error)
        return undefined
      }
    },
    get synced() {
      return synced
    },
    close() {
      closed = true
      clearInterval(periodic)
      clearTimeout(retryTimer)
      subscriber.disconnect()
    },
  }
}
