/**
 * Fetching a key set: one fetch at a time (concurrent callers share it), the keys it brought, when
 * they were fetched, when the last attempt started and how it failed. A bad response never
 * replaces good keys. Each refresh is told as a `jwks_refreshed` or `jwks_refresh_failed` event.
 *
 * @module
 */
import type { Emit } from '../events.js'
import type { JWSAlgorithm } from './algorithms.js'
import { FetchFailure } from './fetch-json.js'
import { warnIfMisconfigured } from './jwks-failure.js'
import { KeySource } from './jwks-source.js'
import { KeyTable } from './jwks-table.js'
import type { KeySetIssuer, NormalizedJWKSOptions } from './jwks-types.js'

/** What a key set is told, and tells, about its refreshes. */
export interface KeySetHooks {
  readonly emit: Emit
  /** Called after a refresh retired keys, so caches can drop what those keys verified. */
  readonly onKeysRetired: (() => void) | undefined
}

export class KeyRefresh {
  /** The keys of the last good fetch. */
  readonly table = new KeyTable()
  /** When the keys held were fetched (ms since epoch); `-Infinity` before the first good fetch. */
  fetchedAt = Number.NEGATIVE_INFINITY
  /** When the last fetch started. */
  lastAttemptAt = Number.NEGATIVE_INFINITY
  /** How the last fetch failed; `undefined` after a good one. */
  lastFailure: FetchFailure | undefined
  /** The fetch under way. */
  pending: Promise<void> | undefined
  /** After a failure, wait `min(cooldownMs, 1 s)` before the next attempt: recover fast, never hammer. */
  readonly failureBackoffMs: number
  /** Aborted by `close()`: no fetch runs or starts after it. */
  private readonly lifetime = new AbortController()
  private readonly source: KeySource
  private readonly issuer: string
  private readonly algorithms: readonly JWSAlgorithm[]
  private readonly options: NormalizedJWKSOptions
  private readonly hooks: KeySetHooks

  constructor(
    issuer: KeySetIssuer,
    algorithms: readonly JWSAlgorithm[],
    options: NormalizedJWKSOptions,
    hooks: KeySetHooks,
  ) {
    this.issuer = issuer.issuer
    this.source = new KeySource(issuer, options)
    this.algorithms = algorithms
    this.options = options
    this.hooks = hooks
    this.failureBackoffMs = Math.min(options.cooldownMs, 1000)
  }

  /** Aborts a fetch under way and starts no other. */
  close(): void {
    this.lifetime.abort()
  }

  /** Whether a fetch may start now: none under way, and past the failure backoff if the last one failed. */
  mayAttempt(now: number): boolean {
    if (this.pending !== undefined) return false
    const backoff = this.lastFailure === undefined ? 0 : this.failureBackoffMs
    return now - this.lastAttemptAt >= backoff
  }

  /** Fetches the keys, or joins the fetch under way. Never rejects. */
  refresh(): Promise<void> {
    if (this.pending !== undefined) return this.pending
    if (this.lifetime.signal.aborted) return Promise.resolve()
    this.lastAttemptAt = Date.now()
    // apply() throws for a document that is not a key set: it must fail like a network error.
    this.pending = this.source
      .fetch(this.lifetime.signal)
      .then((document) => this.apply(document))
      .catch((error: unknown) => this.fail(error))
      .finally(() => {
        this.pending = undefined
      })
    return this.pending
  }

  /** Resolves after `ms`, or at once when the key set closes; never keeps the process alive. */
  sleep(ms: number): Promise<void> {
    const signal = this.lifetime.signal
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      const timer = setTimeout(done, ms)
      timer.unref?.()
      signal.addEventListener('abort', done, { once: true })
      function done() {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        resolve()
      }
    })
  }

  private apply(document: unknown): void {
    const keys = (document as { keys?: unknown } | null)?.keys
    if (!Array.isArray(keys)) {
      throw new FetchFailure('invalid_json', undefined, { url: this.source.urlForOperators })
    }
    const change = this.table.replace(keys, this.algorithms)
    if (change === undefined) {
      this.fail(new FetchFailure('no_usable_keys', undefined, { url: this.source.urlForOperators }))
      return
    }
    this.fetchedAt = Date.now()
    this.lastFailure = undefined
    if (change.retired) this.hooks.onKeysRetired?.()
    this.hooks.emit?.({ type: 'jwks_refreshed', issuer: this.issuer, kids: change.kids })
  }

  private fail(error: unknown): void {
    // Closing aborts the fetch: an expected end, not a provider failure.
    if (this.lifetime.signal.aborted) return
    const failure = error instanceof FetchFailure ? error : new FetchFailure('network', error)
    this.lastFailure = failure
    const { reason, status, url } = failure
    const { emit } = this.hooks
    if (emit !== undefined) {
      emit({ type: 'jwks_refresh_failed', issuer: this.issuer, reason, status, url, error })
    } else warnIfMisconfigured(this.issuer, failure)
    const age = Date.now() - this.fetchedAt
    if (age >= this.options.maxAgeMs && age < this.options.maxAgeMs + this.options.staleIfErrorMs) {
      emit?.({ type: 'jwks_stale', issuer: this.issuer, ageMs: age })
    }
  }
}
