/**
 * The revocation list shared through Redis (a single server or a Cluster). Redis holds the
 * entries (one hash) and a sequence number; every change is made by a script that updates both
 * and publishes the change, so each instance learns it through pub/sub within a round trip and
 * keeps deciding from memory. A full resynchronization runs on every (re)connection, on a gap in
 * the sequence and periodically. Revocations made while Redis is away are enforced locally and
 * written when it is back. A resynchronization merges rather than replaces (`revocation-merge.ts`):
 * a Redis that lost data (restarted empty or from an older snapshot, entries evicted) is healed
 * from what the instances still know; only a removal (a tombstone, a message) drops an entry early.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'

import type { Emit } from '../events.js'
import { warnOnce } from '../warnings.js'
import { identityOf, type RevocationEntry, type RevocationList } from './list.js'
import { mergeSnapshot } from './merge.js'
import type { NormalizedRevocationOptions, RevocationRedisClient } from './options.js'
import {
  ADD,
  CLAIM,
  entryOf,
  INFO_PERSISTENCE,
  type Message,
  parseMessage,
  REMOVE,
  SNAPSHOT,
} from './redis-scripts.js'

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
/** After a failed `revocation.load`, the next attempt waits this long. */
const LOAD_RETRY_MS = 1000

/** Starts synchronizing `list` through `client`; the subscriber is a `duplicate()` of it. */
export function createRedisSync(
  client: RevocationRedisClient,
  options: NormalizedRevocationOptions,
  context: {
    readonly list: RevocationList
    readonly emit: Emit
    readonly onSynced: (synced: boolean) => void
    /**
     * Adds the application's records (`revocation.load`) to the list; rejects when the hook
     * failed. Called before the first snapshot and before the one after a data loss, so that the
     * snapshot's merge writes back what Redis lacks.
     */
    readonly load: ((trigger: 'start' | 'store_lost') => Promise<void>) | undefined
  },
): RevocationSync {
  const { list, emit } = context
  const tag = `{${options.keyPrefix}}`
  const keys = {
    entries: `${tag}:entries`,
    seq: `${tag}:seq`,
    epoch: `${tag}:epoch`,
    removed: `${tag}:removed`,
  }
  const channel = `${options.keyPrefix}:events`
  const subscriber = client.duplicate() as Subscriber
  /** This instance, so that its own messages are not reported as received from a peer. */
  const origin = randomUUID()
  /** Changes made while Redis failed (or that Redis lost), by identity. */
  const pending = new Map<string, { readonly entry: RevocationEntry; readonly add: boolean }>()
  /** Changes being written now, by identity: a snapshot may have been read before they landed. */
  const writing = new Map<string, boolean>()
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
  /** The `load` hook still to run before the next snapshot, and why. */
  let loadDue: 'start' | 'store_lost' | undefined = context.load === undefined ? undefined : 'start'
  let persistenceChecked = false

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
    return withDeadline(client.eval(script, keyList.length, ...keyList, ...args) as Promise<T>)
  }

  function withDeadline<T>(call: Promise<T>): Promise<T> {
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
    call.catch(() => {})
    return Promise.race([call, deadline]).finally(() => clearTimeout(timer))
  }

  function write(identity: string, entry: RevocationEntry, add: boolean): Promise<unknown> {
    const sentAt = Date.now()
    const keyList = [keys.entries, keys.seq, keys.removed]
    return add
      ? command(ADD, keyList, [identity, entry.notBefore, entry.expiresAt, channel, sentAt, origin])
      : command(REMOVE, keyList, [identity, channel, sentAt, origin, entry.expiresAt])
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
    for (const [identity, change] of [...pending]) {
      await write(identity, change.entry, change.add)
      if (pending.get(identity) === change) pending.delete(identity)
    }
  }

  async function snapshot(): Promise<void> {
    buffered = []
    try {
      const [storeEpoch, seqText, pairs, tombstones] = await command<
        [string, string, string[], string[]]
      >(SNAPSHOT, [keys.entries, keys.seq, keys.epoch, keys.removed], [Date.now(), randomUUID()])
      const stored = new Map<string, RevocationEntry>()
      for (let i = 0; i + 1 < pairs.length; i += 2) {
        const field = pairs[i] as string
        const [nb, x] = (pairs[i + 1] as string).split(':').map(Number)
        const entry = entryOf(field, nb as number, x as number)
        if (entry !== undefined) stored.set(field, entry)
      }
      const storedSeq = Number(seqText) || 0
      const removed = new Set(tombstones)
      // A removal published while the snapshot was taken is in it already: not a loss.
      for (const message of buffered) if (message[1] === 'del') removed.add(message[2])
      // A restore from an older RDB snapshot brings the old epoch back, with an older sequence.
      const dataLoss = epoch !== undefined && (storeEpoch !== epoch || storedSeq < lastSeq)
      // The application's records may hold revocations no running instance knows: reload them.
      if (dataLoss && context.load !== undefined) {
        loadDue = 'store_lost'
        scheduleResync(0)
      }
      const queued = new Map(writing)
      for (const [identity, change] of pending) queued.set(identity, change.add)
      const merged = mergeSnapshot(
        list.entries(),
        { stored, removed, dataLoss },
        queued,
        Date.now(),
      )
      epoch = storeEpoch
      lastSeq = storedSeq
      list.replace(merged.entries)
      const late = buffered
      buffered = undefined
      for (const message of late) if (message[0] > lastSeq) apply(message)
      // Redis lost these (or a queued write of ours has not reached it yet): every instance needs them.
      const lost = merged.writeBack.filter((entry) => !writing.has(identityOf(entry)))
      if (lost.length > 0) {
        for (const entry of lost) {
          const identity = identityOf(entry)
          if (!pending.has(identity)) pending.set(identity, { entry, add: true })
        }
        storeError(
          new Error(
            `the revocation store lacked ${lost.length} entries this instance enforces (restarted from an older snapshot, evicted, or not written yet); writing them back`,
          ),
        )
        await flushPending()
      }
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
      const due = loadDue
      let loadFailed = false
      if (due !== undefined && context.load !== undefined) {
        // The hook reports its own failure (`revocation_load_failed`); Redis is not at fault.
        loadFailed = await context.load(due).then(
          () => false,
          () => true,
        )
        if (!loadFailed && loadDue === due) loadDue = undefined
      }
      await snapshot()
      if (!persistenceChecked) {
        persistenceChecked = true
        // Once, before the list counts as held: ready() resolving means the operator was told.
        await checkPersistence()
      }
      setSynced(true)
      if (loadFailed) scheduleResync(LOAD_RETRY_MS)
    } catch (error) {
      setSynced(false)
      storeError(error)
      scheduleResync(Math.min(RETRY_MS, options.resyncIntervalMs))
    }
  }

  /**
   * Whether this Redis keeps anything across a restart. Without AOF or RDB save points a restart
   * of Redis and of every instance forgets every revocation (issue 19): say so once, at start.
   * INFO runs in a script so that on a Cluster it reaches the node holding the list.
   */
  async function checkPersistence(): Promise<void> {
    let persistence: 'none' | 'unknown'
    try {
      const info = await command<string>(INFO_PERSISTENCE, [keys.entries], [])
      if (/^aof_enabled:1\s*$/m.test(String(info))) return
    } catch {
      return
    }
    try {
      if (client.call === undefined) throw new Error('no generic command')
      const reply = await withDeadline(client.call('CONFIG', 'GET', 'save'))
      const points = Array.isArray(reply) ? reply[1] : undefined
      if (typeof points !== 'string') throw new Error('unexpected CONFIG GET reply')
      if (points.trim() !== '') return
      persistence = 'none'
    } catch {
      // Managed Redis (ElastiCache, Memorystore…) refuses CONFIG: persistence cannot be told.
      persistence = 'unknown'
    }
    if (closed) return
    const loader = context.load !== undefined
    emit?.({ type: 'revocation_store_volatile', persistence, loader })
    // With a loader the application's records cover a restart: nothing to warn about.
    if (emit !== undefined || loader) return
    warnOnce({
      code: 'TOLLGATE_REVOCATION_STORE_VOLATILE',
      subject: options.keyPrefix,
      message:
        persistence === 'none'
          ? `tollgate: the Redis holding the revocation list (${options.keyPrefix}) persists nothing (no AOF, no RDB save points): if it restarts with every gateway instance, revoked tokens are admitted again. Enable persistence, or give revocation.load to reload revocations from your records.`
          : `tollgate: could not tell whether the Redis holding the revocation list (${options.keyPrefix}) persists anything (no AOF, CONFIG GET save refused): if it persists nothing and restarts with every gateway instance, revoked tokens are admitted again. Check its persistence, or give revocation.load to reload revocations from your records.`,
    })
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
      writing.set(identity, add)
      await write(identity, entry, add)
      return true
    } catch (error) {
      pending.set(identity, { entry, add })
      storeError(error)
      scheduleResync(Math.min(RETRY_MS, options.resyncIntervalMs))
      return false
    } finally {
      if (writing.get(identity) === add) writing.delete(identity)
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
