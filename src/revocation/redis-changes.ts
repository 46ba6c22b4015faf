/**
 * Changes to the shared list as they reach an instance: published (pub/sub, within a round trip,
 * at most once) and logged (a Stream of the last `LOG_LENGTH` changes, read to catch up with what
 * pub/sub lost). Both carry the change's sequence number: `lastSeq` is the number up to which
 * every change is applied; a message beyond `lastSeq + 1` (a gap) is applied at once and the log
 * read from `lastSeq + 1`, and what the log cannot answer (another epoch, Redis's sequence behind
 * ours, changes trimmed from the log) needs a full reload (`redis-reload.ts`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import type { Emit } from '../events.js'
import { yieldToLoop } from './redis-link.js'
import type { ReloadState } from './redis-reload.js'
import { entryOf, loggedChange, type Message, SYNC } from './redis-scripts.js'

/** Changes read from the log per script. */
const LOG_PAGE = 500

/** Where this instance stands in the shared sequence of changes. */
export interface ChangesState extends ReloadState {
  /** Every change up to this one is applied. */
  lastSeq: number
  /** The highest change applied (beyond `lastSeq` while a gap is being filled). */
  highestSeen: number
  /** The data set the list was loaded from; `undefined` before the first load. */
  epoch: string | undefined
  /**
   * Who made change `lastSeq`, and when (`origin:sentAt`), once known: the log's entry for it
   * must say the same, or Redis's history is no longer the one this instance followed (restored
   * from an older snapshot, then written again up to the same number).
   */
  lastChange: string | undefined
  readonly emit: Emit
  readonly origin: string
}

/** Why the log could not bring the list up to date, and what Redis stands at. */
export interface ReloadNeeded {
  readonly epoch: string
  readonly seq: number
  /** Redis went back in time (another epoch, or a sequence behind ours). */
  readonly dataLoss: boolean
}

/**
 * Applies one change, unless a newer change to the same identity came first (the log and pub/sub
 * may deliver one change twice, in either order). Returns `true` when a published change reveals
 * a gap.
 */
export function applyChange(state: ChangesState, message: Message, logged: boolean): boolean {
  const [seq, op, field, nb, x, sentAt, from] = message
  const entry = entryOf(field, nb, x)
  // A foreign writer's garbage changes nothing, not even where this instance stands.
  if (entry === undefined) return false
  const newer = state.touched.get(field)
  if (newer !== undefined && newer > seq) return false
  let gap = false
  if (!logged && seq > state.lastSeq) {
    if (seq === state.lastSeq + 1 && state.highestSeen <= state.lastSeq) {
      state.lastSeq = seq
      state.lastChange = `${from}:${sentAt}`
    } else gap = true
  }
  state.touched.set(field, Math.max(seq, newer ?? 0))
  if (seq > state.highestSeen) state.highestSeen = seq
  const lagMs = Math.max(0, Date.now() - sentAt)
  if (op === 'add') state.list.add(entry)
  else if (!state.list.remove(entry)) return gap
  if (from === state.origin || logged) return gap
  state.emit?.({
    type: 'revocation_received',
    issuer: entry.issuer,
    by: entry.kind,
    removed: op === 'del',
    lagMs,
  })
  return gap
}

/**
 * Brings the list up to date from the log; resolves `undefined` when it did, or what a full
 * reload needs to know when the log cannot.
 */
export async function catchUp(state: ChangesState): Promise<ReloadNeeded | undefined> {
  const { link } = state
  for (;;) {
    // From `lastSeq` itself when there is one: its entry shows the history is still ours.
    const from = Math.max(1, state.lastSeq)
    const [epoch, seqText, changes] = await link.run<[string, string, unknown[]]>(
      SYNC,
      [link.keys.entries, link.keys.seq, link.keys.log],
      [randomUUID(), from, LOG_PAGE],
    )
    const seq = Number(seqText) || 0
    if (state.epoch === undefined) return { epoch, seq, dataLoss: false }
    // Behind what this instance applied or wrote: Redis went back in time (an older snapshot).
    if (epoch !== state.epoch || seq < Math.max(state.lastSeq, state.writes.lastWritten)) {
      return { epoch, seq, dataLoss: true }
    }
    let items = changes
    if (state.lastSeq > 0) {
      const head = loggedChange(items[0])
      if (head.seq === state.lastSeq && head.message !== undefined) {
        const [, , , , , sentAt, origin] = head.message
        const made = `${origin}:${sentAt}`
        if (state.lastChange !== undefined && state.lastChange !== made) {
          return { epoch, seq, dataLoss: true }
        }
        state.lastChange = made
        items = items.slice(1)
      } else if (seq > state.lastSeq) return { epoch, seq, dataLoss: false }
    }
    if (seq === state.lastSeq) break
    for (const item of items) {
      const change = loggedChange(item)
      // Trimmed from the log, written without a log entry, or unreadable: the log cannot answer.
      if (change.seq !== state.lastSeq + 1 || change.message === undefined) {
        return { epoch, seq, dataLoss: false }
      }
      applyChange(state, change.message, true)
      state.lastSeq = change.seq
      state.lastChange = `${change.message[6]}:${change.message[5]}`
    }
    if (items.length === 0) return { epoch, seq, dataLoss: false }
    if (state.lastSeq > state.highestSeen) state.highestSeen = state.lastSeq
    await yieldToLoop()
  }
  if (state.lastSeq > state.highestSeen) state.highestSeen = state.lastSeq
  return undefined
}
