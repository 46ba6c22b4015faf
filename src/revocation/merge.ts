/**
 * How a full resynchronization combines Redis's copy of the revocation list with this instance's.
 * Redis is not a reliable source of *absence*: restarted from an older RDB snapshot it has lost
 * the revocations made since, with the same epoch; `allkeys-lru` may evict the entries hash alone;
 * a write this instance queued may not have reached it yet. So an entry held here that Redis lacks
 * is kept, and written back, unless its removal is known (a tombstone in Redis, a `del` message,
 * or an unrevoke queued here). Removals are the only way an entry leaves early.
 *
 * @module
 */
import { identityOf, type RevocationEntry } from './list.js'

/** What one snapshot of Redis said, and what this instance knows beside it. */
export interface SnapshotView {
  /** Redis's entries, by identity. */
  readonly stored: ReadonlyMap<string, RevocationEntry>
  /** Identities known to be removed: Redis's tombstones and `del` messages seen meanwhile. */
  readonly removed: ReadonlySet<string>
  /**
   * Redis went back in time (a new epoch, or a sequence number below the last one seen): an entry
   * it holds may have lost a later not-before or expiry, so the stricter of both copies is kept.
   */
  readonly dataLoss: boolean
}

/** Changes queued here while Redis failed, by identity: `true` to add, `false` to remove. */
export type PendingView = ReadonlyMap<string, boolean>

/** The merged list, and the entries Redis lacks (or holds weaker) that must be written back. */
export interface Merged {
  readonly entries: RevocationEntry[]
  readonly writeBack: RevocationEntry[]
}

function stricter(a: RevocationEntry, b: RevocationEntry): RevocationEntry {
  if (b.notBefore <= a.notBefore && b.expiresAt <= a.expiresAt) return a
  return {
    ...a,
    notBefore: Math.max(a.notBefore, b.notBefore),
    expiresAt: Math.max(a.expiresAt, b.expiresAt),
  }
}

/** Merges `local` (this instance's list) into `view` (a snapshot of Redis). */
export function mergeSnapshot(
  local: readonly RevocationEntry[],
  view: SnapshotView,
  pending: PendingView,
  nowMs: number,
): Merged {
  const merged = new Map<string, RevocationEntry>()
  for (const [identity, entry] of view.stored) {
    // An unrevoke queued here wins over the copy Redis still has; the queue writes it.
    if (pending.get(identity) !== false) merged.set(identity, entry)
  }
  const writeBack: RevocationEntry[] = []
  for (const entry of local) {
    if (entry.expiresAt <= nowMs) continue
    const identity = identityOf(entry)
    const queued = pending.get(identity)
    if (queued === false) continue
    const stored = view.stored.get(identity)
    if (stored === undefined) {
      // Removed on purpose (and not revoked again here since): let it go.
      if (view.removed.has(identity) && queued !== true) continue
      merged.set(identity, entry)
      writeBack.push(entry)
    } else if (view.dataLoss || queued === true) {
      const kept = stricter(stored, entry)
      if (kept !== stored) {
        merged.set(identity, kept)
        writeBack.push(kept)
      }
    }
  }
  return { entries: [...merged.values()], writeBack }
}
