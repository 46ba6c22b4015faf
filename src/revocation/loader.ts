/**
 * The application's own records of revocations (`revocation.load`): called at start, when Redis is
 * found to have lost its data, and every `reloadIntervalMs` with the memory store. Requests drive
 * the retries and reloads, not timers: on Workers a timer (and the I/O it starts) does not outlive
 * the request that created it (test/runtimes/revocation-reload.test.ts).
 *
 * @module
 */
import type { Emit } from '../events.js'
import { warnOnce } from '../warnings.js'
import { type EntryRules, entryOfTarget, SELECTORS } from './entry.js'
import type { RevocationEntry, RevocationList } from './list.js'
import type { NormalizedRevocationOptions } from './options.js'
import type { RevokeOptions } from './target.js'

export type LoadTrigger = 'start' | 'store_lost' | 'reload'

/** After a failed start `load` with the memory store, the next attempt. */
const LOAD_RETRY_MS = 1000

interface InFlight {
  readonly done: Promise<void>
  readonly startedAt: number
}

export class LoadHook {
  /** The start load in flight (memory store), and when a failed one may be tried again. */
  private startLoad: InFlight | undefined
  private startRetryAt = 0
  /** With `reloadIntervalMs`: when the next reload is due, and the one in flight. */
  private reloadDueAt: number
  private reload: InFlight | undefined
  private closed = false

  private readonly options: NormalizedRevocationOptions
  private readonly rules: EntryRules
  private readonly list: RevocationList
  private readonly emit: Emit
  /** Told when the start load succeeded: the list may now be held. */
  private readonly onStartLoaded: () => void

  constructor(
    options: NormalizedRevocationOptions,
    rules: EntryRules,
    list: RevocationList,
    emit: Emit,
    onStartLoaded: () => void,
  ) {
    this.options = options
    this.rules = rules
    this.list = list
    this.emit = emit
    this.onStartLoaded = onStartLoaded
    const interval = options.reloadIntervalMs
    this.reloadDueAt = interval === undefined ? 0 : Date.now() + interval
  }

  /** Adds the application's records to the list; rejects when the hook does (the caller retries). */
  async load(trigger: LoadTrigger): Promise<void> {
    const loader = this.options.load
    if (loader === undefined) return
    let targets: readonly RevokeOptions[]
    try {
      targets = await loader()
      if (!Array.isArray(targets)) throw new TypeError('revocation.load must resolve to an array')
    } catch (error) {
      this.emit?.({ type: 'revocation_load_failed', trigger, error })
      this.report(trigger, error, 0)
      throw error
    }
    let entries = 0
    let skipped = 0
    const nowMs = Date.now()
    for (const target of targets) {
      const entry = this.entryOf(target, nowMs)
      if (entry === undefined) skipped += 1
      else if (entry !== null) {
        this.list.add(entry)
        entries += 1
      }
    }
    this.emit?.({ type: 'revocation_loaded', trigger, entries, skipped })
    if (skipped > 0) this.report(trigger, undefined, skipped)
    if (trigger === 'start') this.onStartLoaded()
  }

  /** With the memory store, nothing else calls `load`: retried until it succeeds ({@link LoadHook.retryStart}). */
  startWithoutStore(): void {
    const done = this.load('start')
      .catch(() => {
        this.startRetryAt = Date.now() + LOAD_RETRY_MS
      })
      .finally(() => {
        if (this.startLoad?.done === done) this.startLoad = undefined
      })
    this.startLoad = { done, startedAt: Date.now() }
  }

  /**
   * Retries a failed start `load` when a request (or `gate.ready()`) waits for the list, at most
   * once per `LOAD_RETRY_MS`. A load in flight past `storeTimeoutMs` may belong to an ended
   * request, which Workers cancel: it no longer blocks a retry.
   */
  retryStart(): void {
    if (this.closed) return
    const now = Date.now()
    const { startLoad } = this
    if (
      startLoad !== undefined
        ? now - startLoad.startedAt <= this.options.storeTimeoutMs
        : now < this.startRetryAt
    ) {
      return
    }
    this.startWithoutStore()
  }

  /**
   * With `reloadIntervalMs`: the reload a request waits for, started by the first request that
   * comes once the interval has passed. Only requests need the list, so none goes unserved.
   */
  reloadPending(): Promise<void> | undefined {
    const interval = this.options.reloadIntervalMs
    if (interval === undefined || this.closed) return undefined
    const now = Date.now()
    if (this.reload !== undefined) {
      // Past its deadline the reload's request may have ended, and Workers cancel what an ended
      // request left running: a reload that never settles must not block the next one.
      if (now - this.reload.startedAt <= this.options.storeTimeoutMs) return this.reload.done
      this.reload = undefined
    }
    if (now < this.reloadDueAt) return undefined
    this.reloadDueAt = now + interval
    // A failed reload keeps what is held (`load` only adds) and reports itself.
    const done = this.load('reload')
      .catch(() => {})
      .finally(() => {
        if (this.reload?.done === done) this.reload = undefined
      })
    this.reload = { done, startedAt: now }
    return done
  }

  close(): void {
    this.closed = true
  }

  /** The entry, `null` when every token it matches has expired, `undefined` when invalid. */
  private entryOf(target: RevokeOptions, nowMs: number): RevocationEntry | null | undefined {
    let entry: RevocationEntry
    try {
      // Without the recorded not-before, the default (now) would sign out everyone it names.
      const kind = SELECTORS.find((name) => (target as RevokeOptions)?.[name] !== undefined)
      if (kind !== 'jti' && (target as RevokeOptions)?.notBefore === undefined) {
        throw new TypeError('notBefore required')
      }
      entry = entryOfTarget(target, 'load', this.rules, nowMs)
    } catch {
      return undefined
    }
    const { maxTokenLifetimeSeconds, clockToleranceSeconds } = this.rules
    // Every token it matches was issued before its not-before and has expired: nothing to hold.
    const gone = (entry.notBefore + maxTokenLifetimeSeconds + clockToleranceSeconds) * 1000 <= nowMs
    return entry.kind !== 'jti' && gone ? null : entry
  }

  /** Reports a load failure or skipped entries: the event, else a process warning. */
  private report(trigger: LoadTrigger, error: unknown, skipped: number): void {
    if (this.emit !== undefined) return
    const message =
      error !== undefined
        ? `tollgate: revocation.load failed (${error instanceof Error ? error.name : 'error'}); tokens revoked in the application's records may be admitted until it succeeds (retried)`
        : `tollgate: revocation.load returned ${skipped} invalid entries, skipped (each needs exactly one of jti, sid, sub, clientId, all: true, and sid/sub/clientId/all a notBefore)`
    warnOnce({
      code:
        error !== undefined
          ? 'TOLLGATE_REVOCATION_LOAD_FAILED'
          : 'TOLLGATE_REVOCATION_LOAD_INVALID',
      subject: `${this.options.keyPrefix}:${trigger}`,
      message,
    })
  }
}
