/**
 * Revocation of tokens before their `exp`: `gate.revoke()` / `gate.unrevoke()`, the check every
 * request passes (cache hits included), and the store behind it (this process's memory, or Redis
 * shared by every instance). The check reads only memory once the list is held; Redis is kept in
 * sync in the background. The parts, each with its state: `holding.ts` (is the list held),
 * `store-health.ts` (the `onStoreError` policy), `loader.ts` (the `load` hook), `redis.ts` (the
 * shared list), `local-claims.ts` (replay memory without Redis).
 *
 * @module
 */
import { InvalidTokenError, ServiceUnavailableError, type TollgateError } from '../errors.js'
import type { Emit, RevocationSignal, RevocationSource, RevocationStorage } from '../events.js'
import type { Admission } from '../types.js'
import { type EntryRules, entryOfTarget } from './entry.js'
import { Holding } from './holding.js'
import { type RevocationIdentity, RevocationList } from './list.js'
import { LoadHook } from './loader.js'
import { LocalClaims } from './local-claims.js'
import type { NormalizedRevocationOptions } from './options.js'
import { RedisSync } from './redis.js'
import { yieldToLoop } from './redis-link.js'
import type { VerdictSubject } from './redis-scripts.js'
import { StoreHealth } from './store-health.js'
import type { RevocationTarget, RevokeOptions } from './target.js'

export type { RevocationKind } from './list.js'
export type { VerdictSubject } from './redis-scripts.js'
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
  /** `signal`: the SET a Shared Signals receiver applied (with `source: 'shared_signals'`). */
  revoke(
    target: RevokeOptions,
    source: RevocationSource,
    signal?: RevocationSignal,
  ): Promise<RevocationReceipt>
  unrevoke(
    target: RevocationTarget,
    source: RevocationSource,
    signal?: RevocationSignal,
  ): Promise<RevocationReceipt>
  /**
   * Tells the instances sharing the store to drop their cached verdicts of `subject` (this one
   * drops its own itself): `'redis'` once published, `'memory'` without Redis (nobody to tell),
   * `'failed'` when Redis did not take it. Never rejects.
   */
  publishDrop(subject: VerdictSubject): Promise<'redis' | 'memory' | 'failed'>
  /** `true` the first time `key` is seen within `ttlMs` (shared through Redis when it answers). */
  claimOnce(key: string, ttlMs: number): Promise<boolean>
  /**
   * `undefined` once this instance holds the revocation list (first Redis synchronization and
   * `load` done) and no reload is due (`reloadIntervalMs`); before, or while a reload runs, a
   * promise that resolves when it is done or `storeTimeoutMs` after the call, whichever comes
   * first. Never rejects.
   */
  whenHeld(): Promise<void> | undefined
  /**
   * What a request with a token waits for before it is verified: `undefined` when the list is
   * held (and no reload is due), else a promise that resolves once the request can be decided —
   * the list held, or (Redis, while the first load runs) {@link Revocation.confirm} able to look
   * its token up — or `storeTimeoutMs` after the call. Never rejects.
   */
  whenDecidable(): Promise<void> | undefined
  /**
   * Before the list is held, after {@link Revocation.whenDecidable}: reads what Redis holds for
   * this admission's identities into the list, so that {@link Revocation.refusal} decides it as
   * a held list would. `undefined` when there is nothing to wait for. Never rejects.
   */
  confirm(auth: Admission): Promise<void> | undefined
  /** Whether this instance holds the revocation list (see {@link Revocation.whenHeld}). */
  readonly held: boolean
  close(): void
}

const SWEEP_INTERVAL_MS = 60_000
const SWEEP_STEP = 20_000

/** The identities that could refuse this admission, as the list matches them. */
function identitiesOf(auth: Admission): RevocationIdentity[] {
  const { issuer, claims } = auth
  const found: RevocationIdentity[] = [{ issuer, kind: 'all', value: '' }]
  if (typeof claims.jti === 'string') found.push({ issuer, kind: 'jti', value: claims.jti })
  if (typeof claims.sid === 'string') found.push({ issuer, kind: 'sid', value: claims.sid })
  if (auth.subject !== undefined) found.push({ issuer, kind: 'sub', value: auth.subject })
  if (auth.clientId !== undefined) found.push({ issuer, kind: 'clientId', value: auth.clientId })
  return found
}

/** Drops expired entries and replay ids, yielding to the event loop every `SWEEP_STEP` entries. */
async function sweep(list: RevocationList, claims: LocalClaims): Promise<void> {
  const now = Date.now()
  claims.sweep(now)
  for (const _ of list.sweepSteps(now, SWEEP_STEP)) await yieldToLoop()
}

/** Creates the revocation step from validated options. */
export function createRevocation(
  options: NormalizedRevocationOptions,
  context: {
    readonly issuers: readonly string[]
    readonly clockToleranceSeconds: number
    readonly emit: Emit
    /** Told of another instance's drop of cached verdicts (through Redis). */
    readonly onDrop?: (subject: VerdictSubject) => void
  },
): Revocation {
  const { emit } = context
  const rules: EntryRules = {
    issuers: context.issuers,
    clockToleranceSeconds: context.clockToleranceSeconds,
    maxTokenLifetimeSeconds: options.maxTokenLifetimeSeconds,
  }
  const list = new RevocationList()
  const claims = new LocalClaims()
  const holding = new Holding(options.storeTimeoutMs, {
    sync: options.redis !== undefined,
    load: options.load !== undefined,
  })
  const health = new StoreHealth(options, emit)
  const loader = new LoadHook(options, rules, list, emit, () => holding.loaded())
  /** Admissions looked up in Redis while the first load runs (forgotten when lookups stop). */
  let confirmed = new WeakSet<Admission>()
  let closed = false

  const sync =
    options.redis === undefined
      ? undefined
      : new RedisSync(options.redis, options, {
          list,
          emit,
          onSynced(synced) {
            if (synced) holding.synced()
            health.onSynced(synced)
          },
          onLive(live) {
            if (live) health.reachable()
            else confirmed = new WeakSet()
            holding.setLive(live)
          },
          load: options.load === undefined ? undefined : (trigger) => loader.load(trigger),
          onDrop: context.onDrop,
        })
  if (sync === undefined && options.load !== undefined) loader.startWithoutStore()
  // Until the first synchronization this instance knows nothing: the same bound applies.
  if (sync !== undefined) health.startDenyTimer()
  const sweeper = setInterval(() => void sweep(list, claims), SWEEP_INTERVAL_MS)
  sweeper.unref()

  function waitFor(done: () => boolean): Promise<void> | undefined {
    if (holding.held) {
      const pending = loader.reloadPending()
      return pending === undefined ? undefined : holding.bounded(pending)
    }
    if (sync === undefined && holding.loading && !closed) loader.retryStart()
    return done() ? Promise.resolve() : holding.until(done)
  }

  async function change(
    method: 'revoke' | 'unrevoke',
    target: RevokeOptions,
    source: RevocationSource,
    signal: RevocationSignal | undefined,
  ): Promise<RevocationReceipt> {
    const entry = entryOfTarget(target, method, rules, Date.now())
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
      ...(signal === undefined ? {} : { signal }),
      stored,
    })
    return { stored }
  }

  return {
    refusal(auth) {
      // Entries expire on the promise that no matching token lives longer than maxLifetime: the
      // claim checks (the gate's maxTokenLifetimeSeconds, always set with revocation) keep it.
      if (health.denying) {
        return new ServiceUnavailableError({
          code: 'ERR_REVOCATION_UNAVAILABLE',
          retryAfterSeconds: 1,
        })
      }
      // Before the list is held, this instance cannot know what was revoked unless Redis was
      // asked for this token: a token revoked long ago would pass on a freshly started instance.
      if (!holding.held && options.untilSynced === 'deny' && !confirmed.has(auth)) {
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
    revoke: (target, source, signal) => change('revoke', target, source, signal),
    unrevoke: (target, source, signal) => change('unrevoke', target, source, signal),
    async publishDrop(subject) {
      if (sync === undefined) return 'memory'
      return (await sync.publishDrop(subject)) ? 'redis' : 'failed'
    },
    async claimOnce(key, ttlMs) {
      const shared = await sync?.claimOnce(key, ttlMs)
      // Redis also failing to answer must not let a replay through on this instance.
      return claims.claim(key, ttlMs) && shared !== false
    },
    whenHeld: () => waitFor(() => holding.held),
    whenDecidable: () => waitFor(() => holding.decidable),
    confirm(auth) {
      if (holding.held || sync === undefined || !holding.decidable) return undefined
      const answer = sync.lookup(identitiesOf(auth))
      if (typeof answer === 'boolean') {
        if (answer) confirmed.add(auth)
        return undefined
      }
      const set = confirmed
      return answer.then((ok) => {
        if (ok) set.add(auth)
      })
    },
    get held() {
      return holding.held
    },
    close() {
      closed = true
      loader.close()
      clearInterval(sweeper)
      health.close()
      sync?.close()
    },
  }
}
