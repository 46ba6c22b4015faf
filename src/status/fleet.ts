/**
 * Status lists shared by a fleet through Redis (`statusList.store: { redis }`), so that the
 * instances fetch each list once per refresh rather than once each. Before fetching a list, an
 * instance looks in Redis: a list another instance stored is taken when it passes every check a
 * fetched list passes (Redis is not the issuer: its content is verified with the issuer's keys,
 * as if fetched) and is newer than the one held; otherwise the instance takes a short lock and
 * fetches, or, when another instance holds the lock, waits for its list. The instance that
 * fetched stores the Status List Token as the issuer served it, for as long as it keeps it.
 *
 * What Redis cannot do: forge a list (the signature), bring back an older list than the one an
 * instance holds (`iat` must grow), or keep a list longer than its issuer's `iat` plus the time
 * this gate keeps a list (the entry's TTL only ever shortens that). What it can do, failing or
 * answering late, is cost the fetch it was to save: the list is then fetched directly.
 *
 * @module
 */
import type { Emit, GateEvent } from '../events.js'
import { urlForOperators } from '../token/fetch-json.js'
import type { IssuerKeys } from '../token/jwks.js'
import {
  ListRefusal,
  type ListTokenRules,
  type VerifiedList,
  verifyListToken,
} from './list-token.js'
import { keepSeconds, type NormalizedStatusListOptions } from './options.js'
import type { ListStore, StoredList } from './store.js'

/** How often an instance waiting on another's fetch looks for its list, in ms. */
const POLL_MS = 50
/** After a failure, Redis is left alone this long (ms): lists are fetched directly meanwhile. */
const PASS_BY_MS = 5_000

/** An entry over the size bound, judged once. */
const TOO_LARGE = Symbol('too large')

/** The entry last judged by one claim. */
interface Judged {
  jwt: string | typeof TOO_LARGE | undefined
}

/** What the fleet knows of a list this instance holds. */
export interface HeldList {
  readonly uri: string
  readonly issuer: string
  /** `iat` of the list held, in seconds; `undefined` when none is held. */
  readonly issuedAt: number | undefined
}

/** A list taken from Redis, verified, with the time it may be used until (ms). */
export interface TakenList {
  readonly verified: VerifiedList
  readonly goodUntilMs: number
}

/** Before a fetch: a list to use, or a fetch to make (holding the lock, or not). */
export type Claim = TakenList | { readonly locked: boolean }

export interface SharedListsContext {
  readonly store: ListStore
  readonly options: NormalizedStatusListOptions
  readonly rules: ListTokenRules
  /** How long an instance waits on another's fetch before fetching itself (the lock's time). */
  readonly lockMs: number
  readonly emit: Emit<GateEvent>
  readonly now: () => number
  readonly signal: AbortSignal
}

export class SharedLists {
  private readonly context: SharedListsContext
  /** Until when (ms) Redis is passed by, after a failure. */
  private passByUntilMs = 0

  constructor(context: SharedListsContext) {
    this.context = context
  }

  /**
   * Until when a verified list may be used by an instance that did not fetch it: never past its
   * `iat` plus the time this gate keeps a list, nor its `exp`, nor `storedForMs` from now.
   */
  usableUntil(verified: VerifiedList, storedForMs: number): number {
    const now = this.context.now()
    const keepMs = keepSeconds(this.context.options, verified.ttl) * 1000
    let until = Math.min(now + storedForMs, now + keepMs, verified.issuedAt * 1000 + keepMs)
    if (verified.expiresAt !== undefined) until = Math.min(until, verified.expiresAt * 1000)
    return until
  }

  /** Before fetching `held`'s list: one from Redis, or the fetch to make. Never throws. */
  async claim(held: HeldList, keys: IssuerKeys): Promise<Claim> {
    const { store, signal } = this.context
    if (this.context.now() < this.passByUntilMs) return { locked: false }
    const key = store.keyOf(held.issuer, held.uri)
    // The entry last judged here, not judged twice while waiting.
    const judged: Judged = { jwt: undefined }
    try {
      // A first look without the lock: most often, another instance stored the list already.
      const taken = await this.take(held, keys, await store.read(key), judged)
      if (taken !== undefined) return taken
      // The lock, and with it the last list stored: while another instance holds the lock, it is
      // fetching, and its list comes with the release. Real time, not the clock option: this
      // waits for another process.
      const until = performance.now() + this.context.lockMs
      for (;;) {
        const attempt = await store.lock(key)
        if (attempt.locked) {
          const next = await this.take(held, keys, attempt.stored, judged)
          if (next === undefined) return { locked: true }
          this.release(held)
          return next
        }
        if (performance.now() >= until || signal.aborted) break
        await pause(POLL_MS)
      }
    } catch (error) {
      this.failed(held, error)
    }
    return { locked: false }
  }

  /** After a fetch: stores the list for the fleet and releases the lock, in the background. */
  share(held: HeldList, jwt: string, verified: VerifiedList, goodUntilMs: number): void {
    const { store } = this.context
    if (this.context.now() < this.passByUntilMs) return
    const key = store.keyOf(held.issuer, held.uri)
    const ttlMs = Math.min(goodUntilMs, this.usableUntil(verified, Infinity)) - this.context.now()
    // A list too old for any other instance to use is not stored; the lock is released all the same.
    const done = ttlMs >= 1 ? store.write(key, jwt, ttlMs) : store.unlock(key)
    done.catch((error: unknown) => this.failed(held, error))
  }

  /** After a failed fetch: releases the lock, so that another instance tries. */
  release(held: HeldList): void {
    const { store } = this.context
    store.unlock(store.keyOf(held.issuer, held.uri)).catch((error: unknown) => {
      this.failed(held, error)
    })
  }

  /** The list `stored` for `held`, when it passes every check and is newer than the one held. */
  private async take(
    held: HeldList,
    keys: IssuerKeys,
    stored: StoredList,
    judged: Judged,
  ): Promise<TakenList | undefined> {
    const { rules, now } = this.context
    if (stored === undefined) return undefined
    if (stored === 'too_large') {
      if (judged.jwt !== TOO_LARGE) this.refused(held, new ListRefusal('too_large'))
      judged.jwt = TOO_LARGE
      return undefined
    }
    if (stored.jwt === judged.jwt) return undefined
    judged.jwt = stored.jwt
    let verified: VerifiedList
    try {
      verified = await verifyListToken(stored.jwt, held.uri, held.issuer, keys, rules, now())
    } catch (error) {
      this.refused(held, error instanceof ListRefusal ? error : new ListRefusal('malformed', error))
      return undefined
    }
    // Never back to an older list (one replayed into Redis): a newer one, or a fetch.
    if (held.issuedAt !== undefined && verified.issuedAt <= held.issuedAt) return undefined
    const goodUntilMs = this.usableUntil(verified, stored.ttlMs)
    return goodUntilMs > now() ? { verified, goodUntilMs } : undefined
  }

  private refused(held: HeldList, refusal: ListRefusal): void {
    this.context.emit?.({
      type: 'status_list_failed',
      issuer: held.issuer,
      url: urlForOperators(held.uri),
      problem: refusal.problem,
      error: refusal.cause ?? refusal,
      from: 'store',
    })
  }

  private failed(held: HeldList, error: unknown): void {
    this.passByUntilMs = this.context.now() + PASS_BY_MS
    this.context.emit?.({
      type: 'status_list_store_error',
      url: urlForOperators(held.uri),
      error: error instanceof Error ? error : new Error(String(error)),
    })
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
