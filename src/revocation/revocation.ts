/**
 * Revocation of tokens before their `exp`: `gate.revoke()` / `gate.unrevoke()`, the check every
 * request passes (cache hits included), and the store behind it (this process's memory, or Redis
 * shared by every instance). The check reads only memory; Redis is kept in sync in the background.
 *
 * @module
 */
import { InvalidTokenError, ServiceUnavailableError, type TollgateError } from '../errors.js'
import type { Emit, RevocationSource, RevocationStorage } from '../events.js'
import type { Admission } from '../types.js'
import { warnOnce } from '../warnings.js'
import { type RevocationEntry, type RevocationKind, RevocationList } from './list.js'
import type { NormalizedRevocationOptions } from './options.js'
import { createRedisSync, type RevocationSync } from './redis.js'
import type { RevocationTarget, RevokeOptions } from './target.js'

export type { RevocationKind } from './list.js'
export type { RevocationTarget, RevokeOptions } from './target.js'

/** What `gate.revoke()` and `gate.unrevoke()` resolve to. */
export interface RevocationReceipt {
  /**
   * `memory`: enforced by this process (the memory store). `redis`: stored and published, every
   * instance enforces it within a round trip. `queued`: Redis failed; this instance enforces it
   * and writes it when Redis is back (a `revocation_store_error` event says why).
   */
  readonly stored: RevocationStorage
}

/** The revocation step of one gate. */
export interface Revocation {
  /** The refusal for this admission, if any: the hot path, memory only. */
  refusal(auth: Admission): TollgateError | undefined
  revoke(target: RevokeOptions, source: RevocationSource): Promise<RevocationReceipt>
  unrevoke(target: RevocationTarget, source: RevocationSource): Promise<RevocationReceipt>
  /** `true` the first time `key` is seen within `ttlMs` (shared through Redis when it answers). */
  claimOnce(key: string, ttlMs: number): Promise<boolean>
  /**
   * `undefined` once this instance holds the revocation list (first Redis synchronization and
   * `load` done) and no reload is due (`reloadIntervalMs`); before, or while a reload runs, a
   * promise that resolves when it is done or `storeTimeoutMs` after the call, whichever comes
   * first. Never rejects.
   */
  whenHeld(): Promise<void> | undefined
  /** Whether this instance holds the revocation list (see {@link Revocation.whenHeld}). */
  readonly held: boolean
  close(): void
}

const SELECTORS = ['jti', 'sid', 'sub', 'clientId', 'all'] as const
const TARGET_KEYS = new Set<string>(['issuer', 'notBefore', ...SELECTORS])
const MAX_VALUE_LENGTH = 1024
const MAX_FUTURE_SECONDS = 3600
const SWEEP_INTERVAL_MS = 60_000
/** Bound on remembered logout-token ids when Redis does not answer. */
const MAX_SEEN = 100_000
/** After a failed `load`, the next attempt (memory store; with Redis, the resynchronization retries). */
const LOAD_RETRY_MS = 1000

type LoadTrigger = 'start' | 'store_lost' | 'reload'

function invalidTarget(method: string, problem: string): never {
  throw new TypeError(`gate.${method}(target): ${problem}`)
}

/** Creates the revocation step from validated options. */
export function createRevocation(
  options: NormalizedRevocationOptions,
  context: {
    readonly issuers: readonly string[]
    readonly clockToleranceSeconds: number
    readonly emit: Emit
  },
): Revocation {
  const { emit, issuers } = context
  const maxLifetime = options.maxTokenLifetimeSeconds
  const list = new RevocationList()
  const seen = new Map<string, number>()
  let denying = false
  let denyTimer: NodeJS.Timeout | undefined
  let everSynced = false
  /** Whether a `revocation_fallback` with `engaged: true` was the last one emitted. */
  let engaged = false
  /** What this instance still lacks to hold the list: the first synchronization, the first load. */
  let awaitingSync = options.redis !== undefined
  let awaitingLoad = options.load !== undefined
  const heldWaiters = new Set<() => void>()
  /** Memory store: the start `load` in flight, and when a failed one may be tried again. */
  let startLoad: { readonly done: Promise<void>; readonly startedAt: number } | undefined
  let startRetryAt = 0
  let closed = false

  function checkHeld(): void {
    if (awaitingSync || awaitingLoad) return
    for (const wake of heldWaiters) wake()
    heldWaiters.clear()
  }

  /**
   * With `reloadIntervalMs`: the reload a request waits for, started by the first request that
   * comes once the interval has passed. Requests start it, not a timer: on Workers a timer (and
   * the I/O it starts) does not outlive the request that created it, so a background reload
   * never ran there (test/runtimes/revocation-reload.test.ts); a request's own wait keeps the
   * reload's I/O inside that request. Only requests need the list, so none goes unserved.
   */
  const reloadIntervalMs = options.reloadIntervalMs
  let reloadDueAt = reloadIntervalMs === undefined ? 0 : Date.now() + reloadIntervalMs
  let reload: { readonly done: Promise<void>; readonly startedAt: number } | undefined

  function reloadPending(): Promise<void> | undefined {
    if (reloadIntervalMs === undefined || closed) return undefined
    const now = Date.now()
    if (reload !== undefined) {
      // Past its deadline the reload's request may have ended, and Workers cancel what an ended
      // request left running: a reload that never settles must not block the next one.
      if (now - reload.startedAt <= options.storeTimeoutMs) return reload.done
      reload = undefined
    }
    if (now < reloadDueAt) return undefined
    reloadDueAt = now + reloadIntervalMs
    // A failed reload keeps what is held (`load` only adds) and reports itself.
    const done = load('reload')
      .catch(() => {})
      .finally(() => {
        if (reload?.done === done) reload = undefined
      })
    reload = { done, startedAt: now }
    return done
  }

  /** `pending`, or `storeTimeoutMs` from now, whichever comes first. */
  function bounded(pending: Promise<void>): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.storeTimeoutMs)
      timer.unref()
      pending.then(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  function whenHeld(): Promise<void> | undefined {
    if (!awaitingSync && !awaitingLoad) {
      const pending = reloadPending()
      return pending === undefined ? undefined : bounded(pending)
    }
    retryStartLoad()
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        heldWaiters.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, options.storeTimeoutMs)
      timer.unref()
      heldWaiters.add(wake)
    })
  }

  /** Reports a load failure or skipped entries: the event, else a process warning. */
  function reportLoad(trigger: LoadTrigger, error: unknown, skipped: number): void {
    if (emit !== undefined) return
    const message =
      error !== undefined
        ? `tollgate: revocation.load failed (${error instanceof Error ? error.name : 'error'}); tokens revoked in the application's records may be admitted until it succeeds (retried)`
        : `tollgate: revocation.load returned ${skipped} invalid entries, skipped (each needs exactly one of jti, sid, sub, clientId, all: true, and sid/sub/clientId/all a notBefore)`
    warnOnce({
      code:
        error !== undefined
          ? 'TOLLGATE_REVOCATION_LOAD_FAILED'
          : 'TOLLGATE_REVOCATION_LOAD_INVALID',
      subject: `${options.keyPrefix}:${trigger}`,
      message,
    })
  }

  /** Adds the application's records to the list; rejects when the hook does (the caller retries). */
  async function load(trigger: LoadTrigger): Promise<void> {
    const loader = options.load
    if (loader === undefined) return
    let targets: readonly RevokeOptions[]
    try {
      targets = await loader()
      if (!Array.isArray(targets)) throw new TypeError('revocation.load must resolve to an array')
    } catch (error) {
      emit?.({ type: 'revocation_load_failed', trigger, error })
      reportLoad(trigger, error, 0)
      throw error
    }
    let entries = 0
    let skipped = 0
    const nowMs = Date.now()
    for (const target of targets) {
      let entry: RevocationEntry
      try {
        // Without the recorded not-before, the default (now) would sign out everyone it names.
        const kind = SELECTORS.find((name) => (target as RevokeOptions)?.[name] !== undefined)
        if (kind !== 'jti' && (target as RevokeOptions)?.notBefore === undefined) {
          throw new TypeError('notBefore required')
        }
        entry = entryOf(target, 'load')
      } catch {
        skipped += 1
        continue
      }
      // Every token it matches was issued before its not-before and has expired: nothing to hold.
      if (
        entry.kind !== 'jti' &&
        (entry.notBefore + maxLifetime + context.clockToleranceSeconds) * 1000 <= nowMs
      ) {
        continue
      }
      list.add(entry)
      entries += 1
    }
    emit?.({ type: 'revocation_loaded', trigger, entries, skipped })
    if (skipped > 0) reportLoad(trigger, undefined, skipped)
    if (trigger === 'start') {
      awaitingLoad = false
      checkHeld()
    }
  }

  /** With the memory store, nothing else calls `load`: retried until it succeeds (see below). */
  function loadAtStart(): void {
    const done = load('start')
      .catch(() => {
        startRetryAt = Date.now() + LOAD_RETRY_MS
      })
      .finally(() => {
        if (startLoad?.done === done) startLoad = undefined
      })
    startLoad = { done, startedAt: Date.now() }
  }

  /**
   * Retries a failed start `load` when a request (or `gate.ready()`) waits for the list, at most
   * once per `LOAD_RETRY_MS`. Requests drive it, not a timer: on Workers a timer does not outlive
   * the request that set it, and a failed first load was never retried there (every request
   * answered 503). A load in flight past `storeTimeoutMs` may belong to an ended request, which
   * Workers cancel: it no longer blocks a retry.
   */
  function retryStartLoad(): void {
    if (sync !== undefined || !awaitingLoad || closed) return
    const now = Date.now()
    if (
      startLoad !== undefined
        ? now - startLoad.startedAt <= options.storeTimeoutMs
        : now < startRetryAt
    ) {
      return
    }
    loadAtStart()
  }

  function engage(): void {
    if (engaged) return
    engaged = true
    emit?.({ type: 'revocation_fallback', engaged: true, policy: options.onStoreError })
  }

  function startDenyTimer(): void {
    if (options.onStoreError !== 'deny' || denyTimer !== undefined || denying) return
    denyTimer = setTimeout(() => {
      denyTimer = undefined
      denying = true
      engage()
    }, options.denyAfterMs)
    denyTimer.unref()
  }

  function onSynced(synced: boolean): void {
    if (synced) {
      everSynced = true
      awaitingSync = false
      checkHeld()
      clearTimeout(denyTimer)
      denyTimer = undefined
      denying = false
      if (engaged) {
        engaged = false
        emit?.({ type: 'revocation_fallback', engaged: false, policy: options.onStoreError })
      }
    } else if (options.onStoreError === 'deny') startDenyTimer()
    // Before the first synchronization there is nothing known to fall back on, and nothing to say.
    else if (everSynced) engage()
  }

  const sync: RevocationSync | undefined =
    options.redis === undefined
      ? undefined
      : createRedisSync(options.redis, options, {
          list,
          emit,
          onSynced,
          load: options.load === undefined ? undefined : load,
        })
  if (sync === undefined && options.load !== undefined) loadAtStart()
  // Until the first synchronization this instance knows nothing: the same bound applies.
  if (sync !== undefined) startDenyTimer()
  const sweeper = setInterval(() => {
    const now = Date.now()
    list.sweep(now)
    for (const [key, until] of seen) if (until <= now) seen.delete(key)
  }, SWEEP_INTERVAL_MS)
  sweeper.unref()

  function entryOf(target: RevokeOptions, method: string): RevocationEntry {
    if (typeof target !== 'object' || target === null) invalidTarget(method, 'must be an object')
    for (const key of Object.keys(target)) {
      if (!TARGET_KEYS.has(key))
        invalidTarget(method, `"${key}" is not a field; use one of ${[...TARGET_KEYS].join(', ')}`)
    }
    const issuer = target.issuer ?? (issuers.length === 1 ? issuers[0] : undefined)
    if (typeof issuer !== 'string' || !issuers.includes(issuer)) {
      invalidTarget(
        method,
        '"issuer" must be one of the configured issuers (required when there are several)',
      )
    }
    const given = SELECTORS.filter((name) => target[name] !== undefined)
    if (given.length !== 1) {
      invalidTarget(method, 'needs exactly one of jti, sid, sub, clientId or all: true')
    }
    const kind = given[0] as RevocationKind
    const value = kind === 'all' ? '' : target[kind as Exclude<RevocationKind, 'all'>]
    if (
      kind === 'all'
        ? target.all !== true
        : typeof value !== 'string' || value === '' || value.length > MAX_VALUE_LENGTH
    ) {
      invalidTarget(
        method,
        `"${kind}" must be ${kind === 'all' ? 'true' : `a string of 1 to ${MAX_VALUE_LENGTH} characters`}`,
      )
    }
    const now = Date.now() / 1000
    const tolerance = context.clockToleranceSeconds
    // The gate admits an `iat` up to one tolerance ahead of this host (a provider's clock running
    // fast): such a token was issued before the call too, so the default covers it.
    const requested = target.notBefore ?? Math.floor(now) + 1 + tolerance
    if (
      typeof requested !== 'number' ||
      !Number.isFinite(requested) ||
      requested > now + MAX_FUTURE_SECONDS
    ) {
      invalidTarget(
        method,
        '"notBefore" must be a time in seconds since the epoch, at most an hour ahead',
      )
    }
    // Whole seconds, as `iat` is and as the store keeps it; rounding up never lets a token through.
    const notBefore = Math.ceil(requested)
    // A token the entry matches lives at most maxLifetime from its iat and is accepted one
    // tolerance past its exp: past this, every such token has expired and the entry can go. A
    // not-before entry matches iat < notBefore only. A jti entry matches any iat, and the gate
    // accepts an iat up to one tolerance ahead of now: that is a second tolerance.
    const expiresAt =
      kind === 'jti'
        ? (Math.ceil(now) + tolerance + maxLifetime + tolerance) * 1000
        : (Math.max(notBefore, Math.ceil(now)) + maxLifetime + tolerance) * 1000
    return { issuer, kind, value: value as string, notBefore, expiresAt }
  }

  async function change(
    method: 'revoke' | 'unrevoke',
    target: RevokeOptions,
    source: RevocationSource,
  ): Promise<RevocationReceipt> {
    const entry = entryOf(target, method)
    const revoking = method === 'revoke'
    let held = entry
    if (revoking) held = list.add(entry)
    else {
      // The removal's tombstone must outlive what was held (a not-before set ahead lives longer).
      const previous = list.get(entry)
      if (previous !== undefined && previous.expiresAt > entry.expiresAt) {
        held = { ...entry, expiresAt: previous.expiresAt }
      }
      list.remove(entry)
    }
    let stored: RevocationStorage = 'memory'
    if (sync !== undefined) {
      stored = (await (revoking ? sync.add(held) : sync.remove(held))) ? 'redis' : 'queued'
    }
    emit?.({
      type: revoking ? 'revoked' : 'unrevoked',
      issuer: entry.issuer,
      by: entry.kind,
      value: entry.value,
      notBefore: revoking ? held.notBefore : 0,
      source,
      stored,
    })
    return { stored }
  }

  function claimLocally(key: string, ttlMs: number): boolean {
    const now = Date.now()
    const until = seen.get(key)
    if (until !== undefined && until > now) return false
    if (seen.size >= MAX_SEEN) {
      for (const [other, otherUntil] of seen) if (otherUntil <= now) seen.delete(other)
    }
    // Still full: forget the oldest rather than grow; the iat window bounds what a replay can do.
    if (seen.size >= MAX_SEEN) seen.delete(seen.keys().next().value as string)
    seen.set(key, now + ttlMs)
    return true
  }

  return {
    refusal(auth) {
      // Entries expire on the promise that no matching token lives longer than maxLifetime: the
      // claim checks (the gate's maxTokenLifetimeSeconds, always set with revocation) keep it.
      if (denying) {
        return new ServiceUnavailableError({
          code: 'ERR_REVOCATION_UNAVAILABLE',
          retryAfterSeconds: 1,
        })
      }
      // Before the list is held, this instance cannot know what was revoked: a token revoked
      // long ago would pass (issue 19: new instances admitted them until their first sync).
      if ((awaitingSync || awaitingLoad) && options.untilSynced === 'deny') {
        return new ServiceUnavailableError({
          code: 'ERR_REVOCATION_UNAVAILABLE',
          retryAfterSeconds: 1,
          detail: { synced: false },
        })
      }
      const by = list.match(auth)
      return by === undefined
        ? undefined
        : new InvalidTokenError({ reason: 'revoked', detail: { by } })
    },
    revoke: (target, source) => change('revoke', target, source),
    unrevoke: (target, source) => change('unrevoke', target, source),
    async claimOnce(key, ttlMs) {
      const shared = await sync?.claimOnce(key, ttlMs)
      // Redis also failing to answer must not let a replay through on this instance.
      return claimLocally(key, ttlMs) && shared !== false
    },
    whenHeld,
    get held() {
      return !awaitingSync && !awaitingLoad
    },
    close() {
      closed = true
      clearInterval(sweeper)
      clearTimeout(denyTimer)
      sync?.close()
    },
  }
}
