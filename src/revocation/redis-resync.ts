/**
 * One resynchronization of the shared list (`redis.ts` decides when): subscribe, write what is
 * queued, run the `load` hook when due, catch up from the log, and reload in full, in pages, when
 * the log cannot answer; then the list is held. A failure leaves what was applied and retries.
 *
 * @module
 */
import type { NormalizedRevocationOptions } from './options.js'
import { type ChangesState, catchUp } from './redis-changes.js'
import type { Lookups } from './redis-lookup.js'
import { checkPersistence } from './redis-persistence.js'
import { reloadAll } from './redis-reload.js'
import { RETRY_MS, type ResyncSchedule } from './redis-schedule.js'
import { sweepExpired } from './redis-sweep.js'

/** The subscriber connection, as far as a resynchronization uses it. */
export interface SubscriberState {
  readonly status: string
  subscribe(channel: string): Promise<unknown>
}

/** The state of the shared list a resynchronization reads and moves (`RedisSync`'s). */
export interface SyncState extends ChangesState {
  readonly subscriber: SubscriberState
  readonly lookups: Lookups
  readonly schedule: ResyncSchedule
  readonly options: NormalizedRevocationOptions
  readonly context: {
    readonly load: ((trigger: 'start' | 'store_lost') => Promise<void>) | undefined
  }
  /** Whether the whole list was loaded once. */
  held: boolean
  /** The `load` hook still to run before the next reload, and why. */
  loadDue: 'start' | 'store_lost' | undefined
  persistenceChecked: boolean
  /** A full reload that has not finished (a store failure stopped it), and whether Redis lost data. */
  unfinished: boolean | undefined
  setSynced(synced: boolean): void
}

/** After a failed `revocation.load`, the next attempt waits this long. */
const LOAD_RETRY_MS = 1000

export async function resync(sync: SyncState, periodic: boolean): Promise<void> {
  try {
    const { status } = sync.subscriber
    if (status !== 'ready' && status !== 'connect') {
      throw new Error('revocation subscriber is not connected')
    }
    await sync.subscriber.subscribe(sync.link.keys.channel)
    await sync.writes.flush()
    let loadFailed = await runLoad(sync)
    let needed = await catchUp(sync)
    if (sync.unfinished !== undefined) {
      const epoch = sync.epoch as string
      needed = {
        epoch,
        seq: sync.lastSeq,
        ...needed,
        dataLoss: sync.unfinished || !!needed?.dataLoss,
      }
    }
    if (needed !== undefined) {
      if (needed.dataLoss && sync.context.load !== undefined) {
        // The application's records may hold revocations no running instance knows: reload them.
        sync.loadDue = 'store_lost'
        loadFailed = (await runLoad(sync)) || loadFailed
      }
      sync.epoch = needed.epoch
      sync.lastSeq = needed.seq
      if (needed.dataLoss) {
        // Another data set, another sequence: numbers seen before say nothing of this one's.
        sync.touched.clear()
        sync.highestSeen = needed.seq
        sync.writes.lastWritten = needed.seq
      } else sync.highestSeen = Math.max(sync.highestSeen, needed.seq)
      if (!sync.held && !loadFailed) sync.lookups.start()
      sync.unfinished = needed.dataLoss
      await reloadAll(sync, needed.dataLoss)
      sync.unfinished = undefined
    }
    if (!sync.persistenceChecked) {
      sync.persistenceChecked = true
      // Once, before the list counts as held: ready() resolving means the operator was told.
      await checkPersistence(sync.link, {
        keyPrefix: sync.options.keyPrefix,
        emit: sync.emit,
        loader: sync.context.load !== undefined,
        closed: sync.closed,
      })
    }
    sync.held = true
    sync.lookups.stop()
    sync.setSynced(true)
    sync.emit?.({ type: 'revocation_synced', entries: sync.list.size })
    if (loadFailed) sync.schedule.later(LOAD_RETRY_MS)
    if (periodic) await sweepExpired(sync.link)
  } catch (error) {
    sync.setSynced(false)
    sync.link.storeError(error)
    sync.schedule.later(Math.min(RETRY_MS, sync.options.resyncIntervalMs))
  }
}

/** Runs the `load` hook when due; resolves `true` when it failed (it reports that itself). */
async function runLoad(sync: SyncState): Promise<boolean> {
  const due = sync.loadDue
  if (due === undefined || sync.context.load === undefined) return false
  const failed = await sync.context.load(due).then(
    () => false,
    () => true,
  )
  if (!failed && sync.loadDue === due) sync.loadDue = undefined
  return failed
}
