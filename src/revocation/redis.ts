/**
 * The revocation list shared through Redis (a single server or a Cluster). Every change is one
 * script that updates the hash, bumps a sequence number, logs the change (a Stream of the last
 * ones) and publishes it, so each instance learns it through pub/sub within a round trip and keeps
 * deciding from memory. An instance loads the whole list once, in pages (`redis-reload.ts`); after
 * that it catches up from the log (`redis-changes.ts`) on every (re)connection, on a gap in the
 * sequence and periodically, reading only the changes since the last it applied; a full reload
 * runs again only when the log cannot answer. While the first load runs, a request's token is
 * looked up in Redis directly ({@link RedisSync.lookup}). Revocations made while Redis is away are
 * enforced locally and written when it is back (`redis-writes.ts`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { Emit } from '../events.js'
import {
  identityOf,
  type RevocationEntry,
  type RevocationIdentity,
  type RevocationList,
} from './list.js'
import type { NormalizedRevocationOptions, RevocationRedisClient } from './options.js'
import { applyChange } from './redis-changes.js'
import { RedisLink } from './redis-link.js'
import { type Lookups, startLookups } from './redis-lookup.js'
import { resync, type SyncState } from './redis-resync.js'
import { RETRY_MS, ResyncSchedule } from './redis-schedule.js'
import {
  dropMessage,
  PUBLISH,
  parseDrop,
  parseMessage,
  type VerdictSubject,
} from './redis-scripts.js'
import { PendingWrites } from './redis-writes.js'

/** What the subscriber connection is, as far as this module uses it (ioredis Redis or Cluster). */
interface Subscriber {
  readonly status: string
  /** ioredis's options of a single-server client (a Cluster resubscribes and catches on its own). */
  readonly options?: { autoResubscribe?: boolean }
  on(event: string, listener: (...args: unknown[]) => void): unknown
  subscribe(channel: string): Promise<unknown>
  connect(): Promise<unknown>
  disconnect(): void
}

export interface RevocationSyncContext {
  readonly list: RevocationList
  readonly emit: Emit
  /** Told whether the list is in step with Redis (after each resynchronization, or a failure). */
  readonly onSynced: (synced: boolean) => void
  /** Told when direct lookups can decide requests (the first load runs) and when they no longer can. */
  readonly onLive: (live: boolean) => void
  /**
   * Adds the application's records (`revocation.load`) to the list; rejects when the hook
   * failed. Called before the first load and before the one after a data loss, so that the
   * reload writes back what Redis lacks.
   */
  readonly load: ((trigger: 'start' | 'store_lost') => Promise<void>) | undefined
  /** Told of another instance's drop of cached verdicts (see {@link RedisSync.publishDrop}). */
  readonly onDrop: ((subject: VerdictSubject) => void) | undefined
}

/** The shared side of the revocation list: its state in one place, the steps in small modules. */
export class RedisSync implements SyncState {
  readonly link: RedisLink
  readonly writes: PendingWrites
  readonly list: RevocationList
  readonly emit: Emit
  readonly origin = randomUUID()
  readonly touched = new Map<string, number>()
  lastSeq = 0
  highestSeen = 0
  epoch: string | undefined
  lastChange: string | undefined
  synced = false
  private closedNow = false
  /** Whether the whole list was loaded once. */
  held = false
  readonly lookups: Lookups
  readonly schedule: ResyncSchedule
  /** The `load` hook still to run before the next reload, and why. */
  loadDue: 'start' | 'store_lost' | undefined
  persistenceChecked = false
  /** A full reload that has not finished (a store failure stopped it), and whether Redis lost data. */
  unfinished: boolean | undefined
  readonly subscriber: Subscriber
  readonly closed = () => this.closedNow
  readonly options: NormalizedRevocationOptions
  readonly context: RevocationSyncContext

  constructor(
    client: RevocationRedisClient,
    options: NormalizedRevocationOptions,
    context: RevocationSyncContext,
  ) {
    this.options = options
    this.context = context
    this.list = context.list
    this.emit = context.emit
    this.link = new RedisLink(client, options, context.emit)
    this.writes = new PendingWrites(this.link, this.origin)
    this.lookups = startLookups(this, context.onLive)
    this.loadDue = context.load === undefined ? undefined : 'start'
    this.schedule = new ResyncSchedule(
      options.resyncIntervalMs,
      (periodic) => resync(this, periodic),
      () => this.forgetTouched(),
    )
    const subscriber = client.duplicate() as Subscriber
    // Every (re)connection runs a resynchronization, which subscribes and handles its failure.
    // ioredis's own resubscription does not: with `enableOfflineQueue: false` (the documented
    // client settings) a reconnection that drops again at once rejected its SUBSCRIBE with nobody
    // listening, an unhandled rejection that ends a Node process.
    if (subscriber.options !== undefined) subscriber.options.autoResubscribe = false
    this.subscriber = subscriber
    subscriber.on('error', (error) => this.link.storeError(error))
    subscriber.on('message', (channel, text) => this.onMessage(channel, text))
    subscriber.on('ready', () => void this.schedule.now())
    subscriber.on('close', () => {
      this.lookups.stop()
      this.setSynced(false)
    })
    // A duplicate of a `lazyConnect` client waits for a command that would never come.
    if (subscriber.status === 'wait') subscriber.connect().catch((e) => this.link.storeError(e))
  }

  add = (entry: RevocationEntry) => this.change(entry, true)
  remove = (entry: RevocationEntry) => this.change(entry, false)

  /** While the first load runs: what Redis holds for these identities (see `redis-lookup.ts`). */
  lookup(identities: readonly RevocationIdentity[]): Promise<boolean> | boolean {
    return this.held ? true : this.lookups.lookup(identities.map(identityOf))
  }

  /** Records `key` for `ttlMs` unless recorded: `true` the first time, `undefined` when Redis failed. */
  claimOnce(key: string, ttlMs: number): Promise<boolean | undefined> {
    return this.link.claimOnce(key, ttlMs)
  }

  /**
   * Tells the other instances to drop their cached verdicts of `subject`: one message on the
   * list's channel, neither stored nor logged (a verdict lives a few minutes at most, and an
   * instance that misses the message keeps it no longer than that). `false` when Redis did not
   * take it.
   */
  async publishDrop(subject: VerdictSubject): Promise<boolean> {
    try {
      await this.link.run(
        PUBLISH,
        [this.link.keys.entries],
        [this.link.keys.channel, dropMessage(subject, this.origin)],
      )
      return true
    } catch (error) {
      this.link.storeError(error)
      return false
    }
  }

  close(): void {
    this.closedNow = true
    this.lookups.stop()
    this.schedule.close()
    this.subscriber.disconnect()
  }

  /** Called when the lookups of the first load are done: changes seen since may be forgotten. */
  forgetTouched(): void {
    if (this.schedule.busy || this.lookups.busy()) return
    if (this.lastSeq >= this.highestSeen) this.touched.clear()
  }

  private async change(entry: RevocationEntry, add: boolean) {
    const written = await this.writes.change(entry, add)
    if (!written) this.schedule.later(Math.min(RETRY_MS, this.options.resyncIntervalMs))
    return written
  }

  private onMessage(channel: unknown, text: unknown): void {
    if (channel !== this.link.keys.channel || typeof text !== 'string') return
    if (text.startsWith('{')) {
      const drop = parseDrop(text)
      if (drop !== undefined && drop.origin !== this.origin) this.context.onDrop?.(drop.subject)
      return
    }
    const message = parseMessage(text)
    // A gap means a message was lost (pub/sub is at most once): the log has it.
    if (message !== undefined && applyChange(this, message, false)) this.schedule.later(0)
  }

  setSynced(value: boolean): void {
    if (this.closedNow || this.synced === value) return
    this.synced = value
    this.context.onSynced(value)
  }
}
