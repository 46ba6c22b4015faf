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
import { type RevocationEntry, type RevocationKind, RevocationList } from './list.js'
import type { NormalizedRevocationOptions } from './options.js'
import { createRedisSync, type RevocationSync } from './redis.js'

export type { RevocationKind } from './list.js'

/** Which tokens a revocation names: exactly one of `jti`, `sid`, `sub`, `clientId` or `all`. */
export interface RevocationTarget {
  /** The exact `iss`. Default: the only configured issuer (required when there are several). */
  readonly issuer?: string
  /** One token. */
  readonly jti?: string
  /** Every token of a sign-in session (the `sid` claim). */
  readonly sid?: string
  /** Every token of a user: log a user out everywhere. */
  readonly sub?: string
  /** Every token issued to an OAuth client (`azp`, else `client_id`). */
  readonly clientId?: string
  /** Every token of the issuer (Keycloak's realm not-before). */
  readonly all?: true
}

/** A revocation to make. */
export interface RevokeOptions extends RevocationTarget {
  /**
   * Tokens whose `iat` is before this time (seconds since the epoch) are refused; later ones pass
   * (a user who signs in again). Default: the second after now plus the gate's
   * `clockToleranceSeconds`, so that no token issued before the call survives it, even one whose
   * provider's clock runs ahead by up to the tolerance (a user signing in again within that
   * margin is refused too). At most an hour ahead. Ignored for `jti`.
   */
  readonly notBefore?: number
}

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
  close(): void
}

const SELECTORS = ['jti', 'sid', 'sub', 'clientId', 'all'] as const
const TARGET_KEYS = new Set<string>(['issuer', 'notBefore', ...SELECTORS])
const MAX_VALUE_LENGTH = 1024
const MAX_FUTURE_SECONDS = 3600
const SWEEP_INTERVAL_MS = 60_000
/** Bound on remembered logout-token ids when Redis does not answer. */
const MAX_SEEN = 100_000

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
      : createRedisSync(options.redis, options, { list, emit, onSynced })
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
    close() {
      clearInterval(sweeper)
      clearTimeout(denyTimer)
      sync?.close()
    },
  }
}
