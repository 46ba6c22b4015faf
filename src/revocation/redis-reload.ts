/**
 * A full reload of the revocation list from Redis, in pages: when an instance starts, and when the
 * log of changes cannot bring it up to date (a new epoch, a gap past what the log keeps). Each
 * page is one short script (HSCAN of `PAGE_SIZE` fields, with the sequence number it is as of);
 * expired entries are not loaded, and are dropped from Redis; the event loop runs between pages,
 * and changes published meanwhile are applied as they come. A page's copy of an entry is not applied over a change to it that is
 * newer than the page (`touched`).
 *
 * Redis is not a reliable source of *absence*: restarted from an older RDB snapshot it has lost
 * the revocations made since; `allkeys-lru` may evict the entries hash alone; a write this
 * instance queued may not have reached it yet. So an entry held here that no page returned is kept,
 * and written back, unless its removal is known (a tombstone in Redis, or an unrevoke queued
 * here). Removals are the only way an entry leaves early. When Redis went back in time
 * (`dataLoss`), an entry both hold keeps the stricter copy; otherwise Redis's copy is taken.
 *
 * @module
 */
import { identityOf, type RevocationEntry, type RevocationList } from './list.js'
import { type RedisLink, yieldToLoop } from './redis-link.js'
import { DROP_EXPIRED, PAGE, storedEntryOf, TOMBSTONES } from './redis-scripts.js'
import type { PendingWrites } from './redis-writes.js'

/** Fields per page: a few milliseconds of Redis time and of this process's. */
export const PAGE_SIZE = 1000
/** Entries of the list visited between two yields when looking for those no page returned. */
const WALK_STEP = 10_000
/** Identities per tombstone check. */
const TOMBSTONE_BATCH = 200

/** What a reload works on: the sync's state, in one record. */
export interface ReloadState {
  readonly link: RedisLink
  readonly list: RevocationList
  readonly writes: PendingWrites
  /** The sequence number of the last change applied to each identity lately. */
  readonly touched: Map<string, number>
  readonly closed: () => boolean
}

/** The expiry in a stored `notBefore:expiresAt`; `NaN` when unreadable. */
function expiryOf(value: string): number {
  const sep = value.indexOf(':')
  return sep === -1 ? Number.NaN : Number(value.slice(sep + 1))
}

/** The stricter of two copies of one identity: the later not-before, the later expiry. */
export function stricter(a: RevocationEntry, b: RevocationEntry): RevocationEntry {
  if (b.notBefore <= a.notBefore && b.expiresAt <= a.expiresAt) return a
  return {
    ...a,
    notBefore: Math.max(a.notBefore, b.notBefore),
    expiresAt: Math.max(a.expiresAt, b.expiresAt),
  }
}

/**
 * Applies one stored copy read as of change `asOf`; returns the copy to write back when the
 * one held here is stricter and Redis must learn it.
 */
export function applyStored(
  state: ReloadState,
  field: string,
  value: string,
  asOf: number,
  dataLoss: boolean,
  nowMs: number,
): RevocationEntry | undefined {
  const newer = state.touched.get(field)
  if (newer !== undefined && newer > asOf) return undefined
  const stored = storedEntryOf(field, value)
  if (stored === undefined || stored.expiresAt <= nowMs) return undefined
  const queued = state.writes.queued(field)
  // An unrevoke queued here wins over the copy Redis still has; the queue writes it.
  if (queued === false) return undefined
  const local = state.list.get(stored)
  if (local === undefined || (!dataLoss && queued !== true)) {
    state.list.set(stored)
    return undefined
  }
  const kept = stricter(stored, local)
  state.list.set(kept)
  return kept === stored ? undefined : kept
}

/**
 * Reloads every entry, then writes back what Redis lacks. Rejects on a store failure: what was
 * applied stays.
 */
export async function reloadAll(state: ReloadState, dataLoss: boolean): Promise<void> {
  const { link, list } = state
  const mark = ++list.mark
  const writeBack: RevocationEntry[] = []
  const page = (cursor: string) => {
    const reply = link.run<[string, string, string[]]>(
      PAGE,
      [link.keys.entries, link.keys.seq],
      [cursor, PAGE_SIZE],
    )
    // Awaited on the next turn, or never once closed: its failure is not left unhandled meanwhile.
    reply.catch(() => {})
    return reply
  }
  let pending = page('0')
  for (;;) {
    const [next, seqText, found] = await pending
    if (state.closed()) return
    const cursor = String(next)
    // The next page is asked for before this one is applied: Redis and this process work at once.
    if (cursor !== '0') pending = page(cursor)
    const asOf = Number(seqText) || 0
    const now = Date.now()
    const expired: string[] = []
    for (let i = 0; i + 1 < found.length; i += 2) {
      const field = found[i] as string
      const value = found[i + 1] as string
      // The epoch's field, then what no token can match any more: not loaded, dropped from Redis.
      if (field === '') continue
      if (!(expiryOf(value) > now)) expired.push(field)
      else {
        const back = applyStored(state, field, value, asOf, dataLoss, now)
        if (back !== undefined) writeBack.push(back)
      }
    }
    if (expired.length > 0) await link.run(DROP_EXPIRED, [link.keys.entries], [now, ...expired])
    if (cursor === '0') break
    await yieldToLoop()
  }
  await settleUnseen(state, mark, writeBack)
  const lost = state.writes.writeBack(writeBack)
  if (lost === 0) return
  // Redis lost these (or a queued write of ours has not reached it yet): every instance needs them.
  state.link.storeError(
    new Error(
      `the revocation store lacked ${lost} entries this instance enforces (restarted from an older snapshot, evicted, or not written yet); writing them back`,
    ),
  )
  await state.writes.flush()
}

/** Entries held here that no page returned: dropped when Redis has their tombstone, else written back. */
async function settleUnseen(
  state: ReloadState,
  mark: number,
  writeBack: RevocationEntry[],
): Promise<void> {
  const unseen: (RevocationEntry & { readonly mark: number })[] = []
  let steps = 0
  const now = Date.now()
  for (const entry of state.list.walk()) {
    if (entry.mark !== mark && entry.expiresAt > now) unseen.push(entry)
    if (++steps % WALK_STEP === 0) await yieldToLoop()
  }
  for (let start = 0; start < unseen.length; start += TOMBSTONE_BATCH) {
    const batch = unseen.slice(start, start + TOMBSTONE_BATCH)
    const fields = batch.map(identityOf)
    const removed = new Set(
      await state.link.run<string[]>(
        TOMBSTONES,
        [state.link.keys.removed],
        [Date.now(), ...fields],
      ),
    )
    for (const [index, entry] of batch.entries()) {
      const field = fields[index] as string
      const queued = state.writes.queued(field)
      if (queued === false) continue
      // Changed since the walk (a message, a lookup, a revoke here), or gone: nothing to settle.
      if (state.list.markOf(entry) !== entry.mark) continue
      // Removed on purpose (and not revoked again here since): let it go.
      if (removed.has(field) && queued !== true) state.list.remove(entry)
      else writeBack.push(entry)
    }
  }
}
