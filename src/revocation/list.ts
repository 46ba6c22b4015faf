/**
 * The revocation list one process holds in memory and consults on every request: entries by
 * `jti`, `sid`, `sub` or client id, per issuer, each with a not-before time. Lookups cost one map
 * read per kind that has entries, none when the list is empty.
 *
 * An entry is small on purpose (a list may hold a million of them, in every instance): a map per
 * kind and issuer, keyed by the value alone, holding a {@link Held} of two small integers (seconds)
 * and a mark. About 140 bytes an entry with a UUID value, a third of a map of entry objects.
 *
 * @module
 */
import type { RevocationKind } from '../events.js'
import type { Admission } from '../types.js'

export type { RevocationKind } from '../events.js'

/** One revocation, as held in memory and in the shared store. */
export interface RevocationEntry {
  readonly issuer: string
  readonly kind: RevocationKind
  readonly value: string
  /**
   * Seconds since the epoch: tokens with an `iat` before it are refused (Keycloak's not-before).
   * Ignored for `jti`, which names one token whatever its `iat`.
   */
  readonly notBefore: number
  /** Ms since the epoch after which no token the entry matches can still be valid. */
  readonly expiresAt: number
}

/** What names an entry: its issuer, kind and value. */
export type RevocationIdentity = Pick<RevocationEntry, 'issuer' | 'kind' | 'value'>

/** Stable text for an entry's identity (issuer, kind, value): the Redis hash field and the pending-write key. */
export function identityOf(entry: RevocationIdentity): string {
  return JSON.stringify([entry.issuer, entry.kind, entry.value])
}

/**
 * What is held for one identity: not-before and expiry in whole seconds (small integers, stored
 * unboxed), and the mark of the last full reload that saw it (see `redis-reload.ts`).
 */
class Held {
  notBefore: number
  expiresSeconds: number
  mark: number

  constructor(notBefore: number, expiresSeconds: number, mark: number) {
    this.notBefore = notBefore
    this.expiresSeconds = expiresSeconds
    this.mark = mark
  }
}

type ByIssuer = Map<string, Map<string, Held>>

const KINDS: readonly RevocationKind[] = ['jti', 'sid', 'sub', 'clientId', 'all']

/** Tokens issued at or after the entry's not-before pass; without `iat` they cannot prove it. */
function issuedBefore(held: Held | undefined, iat: unknown): boolean {
  return held !== undefined && !(typeof iat === 'number' && iat >= held.notBefore)
}

/** The in-memory list. Merging keeps the later not-before and the later expiry of an identity. */
export class RevocationList {
  private readonly kinds: Record<RevocationKind, ByIssuer> = {
    jti: new Map(),
    sid: new Map(),
    sub: new Map(),
    clientId: new Map(),
    all: new Map(),
  }
  private count = 0
  /** Written into every entry added or changed: a full reload tells what it saw by it. */
  mark = 0

  /** The kind of the first entry that refuses this admission, or `undefined`. */
  match(auth: Admission): RevocationKind | undefined {
    if (this.count === 0) return undefined
    const { jti, sid, sub, clientId, all } = this.kinds
    const { claims, issuer } = auth
    const iat = claims.iat
    if (jti.size !== 0 && typeof claims.jti === 'string') {
      if (jti.get(issuer)?.has(claims.jti)) return 'jti'
    }
    if (sid.size !== 0 && typeof claims.sid === 'string') {
      if (issuedBefore(sid.get(issuer)?.get(claims.sid), iat)) return 'sid'
    }
    if (sub.size !== 0 && auth.subject !== undefined) {
      if (issuedBefore(sub.get(issuer)?.get(auth.subject), iat)) return 'sub'
    }
    if (clientId.size !== 0 && auth.clientId !== undefined) {
      if (issuedBefore(clientId.get(issuer)?.get(auth.clientId), iat)) return 'clientId'
    }
    if (all.size !== 0 && issuedBefore(all.get(issuer)?.get(''), iat)) return 'all'
    return undefined
  }

  /** Adds or merges an entry; returns what is now held for its identity. */
  add(entry: RevocationEntry): RevocationEntry {
    const held = this.held(entry)
    if (held === undefined) return this.set(entry)
    held.notBefore = Math.max(held.notBefore, entry.notBefore)
    held.expiresSeconds = Math.max(held.expiresSeconds, Math.ceil(entry.expiresAt / 1000))
    held.mark = this.mark
    return entryOf(entry, held)
  }

  /** Holds exactly `entry` for its identity (a copy the store says is current). */
  set(entry: RevocationEntry): RevocationEntry {
    let byValue = this.kinds[entry.kind].get(entry.issuer)
    if (byValue === undefined) {
      byValue = new Map()
      this.kinds[entry.kind].set(entry.issuer, byValue)
    }
    const held = byValue.get(entry.value)
    const expiresSeconds = Math.ceil(entry.expiresAt / 1000)
    if (held === undefined) {
      this.count += 1
      byValue.set(entry.value, new Held(entry.notBefore, expiresSeconds, this.mark))
    } else {
      held.notBefore = entry.notBefore
      held.expiresSeconds = expiresSeconds
      held.mark = this.mark
    }
    return { ...entry, expiresAt: expiresSeconds * 1000 }
  }

  /** What is held for an identity, if anything. */
  get(identity: RevocationIdentity): RevocationEntry | undefined {
    const held = this.held(identity)
    return held === undefined ? undefined : entryOf(identity, held)
  }

  /** The mark of what is held for an identity (see {@link RevocationList.mark}), if anything. */
  markOf(identity: RevocationIdentity): number | undefined {
    return this.held(identity)?.mark
  }

  /** Removes an identity; `true` when it was held. */
  remove(identity: RevocationIdentity): boolean {
    const byIssuer = this.kinds[identity.kind]
    const byValue = byIssuer.get(identity.issuer)
    if (byValue === undefined || !byValue.delete(identity.value)) return false
    if (byValue.size === 0) byIssuer.delete(identity.issuer)
    this.count -= 1
    return true
  }

  /** Drops entries that can no longer match a valid token, without copying the list. */
  sweep(nowMs: number): void {
    for (const _ of this.sweepSteps(nowMs, Number.POSITIVE_INFINITY));
  }

  /**
   * {@link RevocationList.sweep} in steps of `step` entries visited: the caller may yield to the
   * event loop between two (a million entries are not walked in one go).
   */
  *sweepSteps(nowMs: number, step: number): Generator<void> {
    let visited = 0
    for (const byIssuer of Object.values(this.kinds)) {
      for (const [issuer, byValue] of byIssuer) {
        for (const [value, held] of byValue) {
          if (++visited % step === 0) yield
          if (held.expiresSeconds * 1000 > nowMs) continue
          byValue.delete(value)
          this.count -= 1
        }
        if (byValue.size === 0) byIssuer.delete(issuer)
      }
    }
  }

  /**
   * Every entry held, one at a time: the list may change between two steps (an entry added then
   * is visited later, one removed is not), so a caller can yield to the event loop mid-way.
   */
  *walk(): Generator<RevocationEntry & { readonly mark: number }> {
    for (const kind of KINDS) {
      for (const [issuer, byValue] of this.kinds[kind]) {
        for (const [value, held] of byValue) {
          yield {
            issuer,
            kind,
            value,
            notBefore: held.notBefore,
            expiresAt: held.expiresSeconds * 1000,
            mark: held.mark,
          }
        }
      }
    }
  }

  /** Every entry held (a copy, safe to mutate the list while iterating it). */
  entries(): RevocationEntry[] {
    return [...this.walk()].map(({ mark: _, ...entry }) => entry)
  }

  get size(): number {
    return this.count
  }

  private held(identity: RevocationIdentity): Held | undefined {
    return this.kinds[identity.kind].get(identity.issuer)?.get(identity.value)
  }
}

function entryOf(identity: RevocationIdentity, held: Held): RevocationEntry {
  return {
    issuer: identity.issuer,
    kind: identity.kind,
    value: identity.value,
    notBefore: held.notBefore,
    expiresAt: held.expiresSeconds * 1000,
  }
}
