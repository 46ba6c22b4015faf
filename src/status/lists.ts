/**
 * The status lists a gate holds, by URI (Token Status List §8): each fetched once, with one fetch
 * in flight per list whoever asks, kept for the list's `ttl` clamped by the options and never
 * past its `exp`, and fetched again in the background before then, so that requests never wait on
 * a list they already hold. A list that cannot be had (fetch, verification) leaves the last good
 * one in force for at most `staleIfErrorSeconds` past its time; then a request waits for a fetch,
 * and is answered 503 when that fails. Bounded: at most `maxLists` lists, least recently used out.
 * With `store: { redis }`, a fetch first looks for the list the fleet shares (`fleet.ts`); a
 * request whose list is held never gets that far.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import { LRUCache } from 'lru-cache'

import type { Emit, GateEvent } from '../events.js'
import { FetchFailure, fetchText, urlForOperators } from '../token/fetch-json.js'
import type { IssuerKeys } from '../token/jwks.js'
import type { StatusBitList } from './bits.js'
import { SharedLists } from './fleet.js'
import {
  ListRefusal,
  type ListTokenRules,
  type VerifiedList,
  verifyListToken,
} from './list-token.js'
import { keepSeconds, type NormalizedStatusListOptions } from './options.js'
import { createListStore } from './store.js'

const ACCEPT = 'application/statuslist+jwt'
/** After a failed fetch, the next is not tried before this (then doubling, up to the maximum). */
const FIRST_BACKOFF_MS = 1_000
const MAX_BACKOFF_MS = 30_000
/** The fetch lock outlives a fetch's deadline by this much (ms): verifying and storing the list. */
const LOCK_MARGIN_MS = 1_000

/** One list: what it holds, until when, and its fetch. */
class ListEntry {
  readonly uri: string
  readonly issuer: string
  list: StatusBitList | undefined
  /** `iat` of the list held, in seconds. */
  issuedAt: number | undefined
  /** Until when the list is used without fetching (ms); stale past it. */
  goodUntilMs = 0
  /** When a background fetch starts (ms), before `goodUntilMs`. */
  refreshAtMs = 0
  flight: Promise<void> | undefined
  backoffMs = 0
  nextAttemptMs = 0
  constructor(uri: string, issuer: string) {
    this.uri = uri
    this.issuer = issuer
  }
}

/** What a lookup answers: the list to read, or why there is none. */
export type ListLookup = StatusBitList | 'unavailable'

/** What {@link StatusLists} works with, given once. */
export interface StatusListsContext {
  readonly keysOf: (issuer: string) => IssuerKeys | undefined
  readonly algorithms: ReadonlySet<string>
  readonly clockToleranceSeconds: number
  readonly emit: Emit<GateEvent>
  /** Aborts fetches under way (the gate's `close()`). */
  readonly signal: AbortSignal
  readonly now?: (() => number) | undefined
}

export class StatusLists {
  private readonly entries: LRUCache<string, ListEntry>
  private readonly rules: ListTokenRules
  private readonly options: NormalizedStatusListOptions
  private readonly context: StatusListsContext
  private readonly now: () => number
  private readonly shared: SharedLists | undefined

  constructor(options: NormalizedStatusListOptions, context: StatusListsContext) {
    this.options = options
    this.context = context
    this.now = context.now ?? Date.now
    this.entries = new LRUCache({ max: options.maxLists })
    this.rules = {
      algorithms: context.algorithms,
      clockToleranceSeconds: context.clockToleranceSeconds,
      maxListBytes: options.maxListBytes,
    }
    const lockMs = options.timeoutMs + LOCK_MARGIN_MS
    this.shared =
      options.redis &&
      new SharedLists({
        store: createListStore(options.redis, options.keyPrefix, randomUUID(), {
          timeoutMs: options.storeTimeoutMs,
          lockMs,
          maxBytes: options.maxListTokenBytes,
        }),
        options,
        rules: this.rules,
        lockMs,
        emit: context.emit,
        now: this.now,
        signal: context.signal,
      })
  }

  /**
   * The list at `uri` when it can be used now without waiting (fresh, or stale within the
   * allowance), starting a background fetch when one is due; `undefined` when the caller must
   * wait for {@link load}.
   */
  lookupNow(uri: string, issuer: string): StatusBitList | undefined {
    const entry = this.entries.get(uri)
    if (entry === undefined || entry.issuer !== issuer) return undefined
    const now = this.now()
    if (now >= entry.refreshAtMs) this.refreshInBackground(entry, now)
    if (entry.list === undefined) return undefined
    if (now < entry.goodUntilMs) return entry.list
    // Past its time: only within the stale allowance, and only while fetches fail.
    if (now < entry.goodUntilMs + this.options.staleIfErrorSeconds * 1000 && entry.backoffMs > 0) {
      return entry.list
    }
    return undefined
  }

  /** The list at `uri` after waiting for its fetch (one per list in flight), or `'unavailable'`. */
  async load(uri: string, issuer: string): Promise<ListLookup> {
    let entry = this.entries.get(uri)
    if (entry === undefined || entry.issuer !== issuer) {
      // A URI is one issuer's list: another issuer naming it gets its own entry, verified with
      // its own keys, and never reads a list verified with someone else's.
      entry = new ListEntry(uri, issuer)
      this.entries.set(uri, entry)
    }
    const now = this.now()
    if (entry.flight === undefined && now >= entry.nextAttemptMs) entry.flight = this.fetch(entry)
    if (entry.flight !== undefined) await entry.flight
    return this.lookupNow(uri, issuer) ?? 'unavailable'
  }

  /** How many lists are held (for tests and the readiness report). */
  get size(): number {
    return this.entries.size
  }

  private refreshInBackground(entry: ListEntry, now: number): void {
    if (entry.flight !== undefined || now < entry.nextAttemptMs) return
    entry.flight = this.fetch(entry)
  }

  private async fetch(entry: ListEntry): Promise<void> {
    const { uri, issuer } = entry
    const shared = this.shared
    let locked = false
    try {
      const keys = this.context.keysOf(issuer)
      if (keys === undefined) throw new ListRefusal('keys')
      if (shared !== undefined) {
        const claim = await shared.claim(entry, keys)
        if ('verified' in claim) {
          this.hold(entry, claim.verified, claim.goodUntilMs, 'store')
          return
        }
        locked = claim.locked
      }
      let text: string
      try {
        text = await fetchText(uri, ACCEPT, {
          fetch: this.options.fetch,
          timeoutMs: this.options.timeoutMs,
          maxBodyBytes: this.options.maxListTokenBytes,
          signal: this.context.signal,
        })
      } catch (error) {
        throw new ListRefusal(
          error instanceof FetchFailure && error.reason === 'too_large' ? 'too_large' : 'fetch',
          error,
        )
      }
      const verified = await verifyListToken(text, uri, issuer, keys, this.rules, this.now())
      let goodUntil = this.now() + keepSeconds(this.options, verified.ttl) * 1000
      if (verified.expiresAt !== undefined) {
        goodUntil = Math.min(goodUntil, verified.expiresAt * 1000)
      }
      this.hold(entry, verified, goodUntil, 'issuer')
      if (shared !== undefined) {
        locked = false
        shared.share(entry, text, verified, goodUntil)
      }
    } catch (error) {
      if (locked) shared?.release(entry)
      const problem = error instanceof ListRefusal ? error.problem : 'fetch'
      const now = this.now()
      entry.backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(FIRST_BACKOFF_MS, entry.backoffMs * 2))
      entry.nextAttemptMs = now + entry.backoffMs
      // Tried again once the backoff has passed, by the next request that reads the list.
      entry.refreshAtMs = Math.min(entry.refreshAtMs, entry.nextAttemptMs)
      this.context.emit?.({
        type: 'status_list_failed',
        issuer,
        url: urlForOperators(uri),
        problem,
        error: error instanceof ListRefusal && error.cause !== undefined ? error.cause : error,
        from: 'issuer',
      })
    } finally {
      entry.flight = undefined
    }
  }

  /** Puts a verified list in force until `goodUntil` (ms). */
  private hold(
    entry: ListEntry,
    verified: VerifiedList,
    goodUntil: number,
    from: 'issuer' | 'store',
  ): void {
    const now = this.now()
    entry.list = verified.list
    entry.issuedAt = verified.issuedAt
    entry.goodUntilMs = goodUntil
    // Fetched again at four fifths of its time, so requests keep reading a list in force.
    entry.refreshAtMs = now + (goodUntil - now) * 0.8
    entry.backoffMs = 0
    entry.nextAttemptMs = 0
    this.context.emit?.({
      type: 'status_list_fetched',
      issuer: entry.issuer,
      url: urlForOperators(entry.uri),
      size: verified.list.size,
      from,
    })
  }
}
