/**
 * Revocations and removals this instance writes to Redis: each is one script that updates the
 * hash, bumps the sequence number, logs and publishes the change. A change Redis failed to take
 * (or an entry Redis lost) is queued, by identity, and written when it is back; later changes
 * wait behind the queue so that Redis sees them in order.
 *
 * @module
 */
import { identityOf, type RevocationEntry } from './list.js'
import type { RedisLink } from './redis-link.js'
import { ADD, REMOVE } from './redis-scripts.js'

interface Change {
  readonly entry: RevocationEntry
  readonly add: boolean
}

export class PendingWrites {
  /** Changes made while Redis failed (or that Redis lost), by identity. */
  private readonly pending = new Map<string, Change>()
  /**
   * The sequence number of the last change this instance wrote: Redis answering with a lower one
   * has lost it (restarted from an older snapshot), even before its message came back here.
   */
  lastWritten = 0
  /** Changes being written now, by identity: a page of a reload may have been read before they landed. */
  private readonly writing = new Map<string, boolean>()

  private readonly link: RedisLink
  /** This instance, so that its own messages are not reported as received from a peer. */
  private readonly origin: string

  constructor(link: RedisLink, origin: string) {
    this.link = link
    this.origin = origin
  }

  /** Writes one change now; resolves `false` (and queues it) when Redis failed. */
  async change(entry: RevocationEntry, add: boolean): Promise<boolean> {
    const identity = identityOf(entry)
    try {
      if (this.pending.size > 0) throw new Error('earlier revocation writes are still queued')
      this.writing.set(identity, add)
      await this.write(identity, entry, add)
      return true
    } catch (error) {
      this.pending.set(identity, { entry, add })
      this.link.storeError(error)
      return false
    } finally {
      if (this.writing.get(identity) === add) this.writing.delete(identity)
    }
  }

  /** The change queued or being written for an identity: `true` an add, `false` a removal. */
  queued(identity: string): boolean | undefined {
    return this.pending.get(identity)?.add ?? this.writing.get(identity)
  }

  /** Queues entries Redis lacks (unless being written already); `true` when any was queued. */
  writeBack(entries: readonly RevocationEntry[]): number {
    let queued = 0
    for (const entry of entries) {
      const identity = identityOf(entry)
      if (this.writing.has(identity)) continue
      if (!this.pending.has(identity)) this.pending.set(identity, { entry, add: true })
      queued += 1
    }
    return queued
  }

  /** Writes what is queued, in order; rejects at the first failure (the rest stays queued). */
  async flush(): Promise<void> {
    for (const [identity, change] of [...this.pending]) {
      await this.write(identity, change.entry, change.add)
      if (this.pending.get(identity) === change) this.pending.delete(identity)
    }
  }

  private async write(identity: string, entry: RevocationEntry, add: boolean): Promise<void> {
    const { keys } = this.link
    const sentAt = Date.now()
    const keyList = [keys.entries, keys.seq, keys.removed, keys.log]
    const seq = await (add
      ? this.link.run<number>(ADD, keyList, [
          identity,
          entry.notBefore,
          entry.expiresAt,
          keys.channel,
          sentAt,
          this.origin,
        ])
      : this.link.run<number>(REMOVE, keyList, [
          identity,
          keys.channel,
          sentAt,
          this.origin,
          entry.expiresAt,
        ]))
    if (typeof seq === 'number' && seq > this.lastWritten) this.lastWritten = seq
  }
}
