/**
 * The revocation list one process holds in memory and consults on every request: entries by
 * `jti`, `sid`, `sub` or client id, per issuer, each with a not-before time. Lookups cost one map
 * read per kind that has entries, none when the list is empty.
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

/** Stable text for an entry's identity (issuer, kind, value): the Redis hash field and the pending-write key. */
export function identityOf(entry: Pick<RevocationEntry, 'issuer' | 'kind' | 'value'>): string {
  return JSON.stringify([entry.issuer, entry.kind, entry.value])
}

type ByValue = Map<string, Map<string, RevocationEntry>>

/** Tokens issued at or after the entry's not-before pass; without `iat` they cannot prove it. */
function issuedBefore(
  byIssuer: Map<string, RevocationEntry> | undefined,
  issuer: string,
  iat: unknown,
): boolean {
  const entry = byIssuer?.get(issuer)
  return entry !== undefined && !(typeof iat === 'number' && iat >= entry.notBefore)
}

/** The in-memory list. Merging keeps the later not-before and the later expiry of an identity. */
export class RevocationList {
  private readonly kinds: Record<RevocationKind, ByValue> = {
    jti: new Map(),
    sid: new Map(),
    sub: new Map(),
    clientId: new Map(),
    all: new Map(),
  }
  private count = 0

  /** The kind of the first entry that refuses this admission, or `undefined`. */
  match(auth: Admission): RevocationKind | undefined {
    if (this.count === 0) return undefined
    const { jti, sid, sub, clientId, all } = this.kinds
    const claims = auth.claims
    const iat = claims.iat
    if (jti.size !== 0 && typeof claims.jti === 'string') {
      if (jti.get(claims.jti)?.has(auth.issuer)) return 'jti'
    }
    if (sid.size !== 0 && typeof claims.sid === 'string') {
      if (issuedBefore(sid.get(claims.sid), auth.issuer, iat)) return 'sid'
    }
    if (sub.size !== 0 && auth.subject !== undefined) {
      if (issuedBefore(sub.get(auth.subject), auth.issuer, iat)) return 'sub'
    }
    if (clientId.size !== 0 && auth.clientId !== undefined) {
      if (issuedBefore(clientId.get(auth.clientId), auth.issuer, iat)) return 'clientId'
    }
    if (all.size !== 0 && issuedBefore(all.get(''), auth.issuer, iat)) return 'all'
    return undefined
  }

  /** Adds or merges an entry; returns what is now held for its identity. */
  add(entry: RevocationEntry): RevocationEntry {
    const byValue = this.kinds[entry.kind]
    let byIssuer = byValue.get(entry.value)
    if (byIssuer === undefined) {
      byIssuer = new Map()
      byValue.set(entry.value, byIssuer)
    }
    const held = byIssuer.get(entry.issuer)
    if (held === undefined) this.count += 1
    const merged =
      held === undefined
        ? entry
        : {
            ...entry,
            notBefore: Math.max(held.notBefore, entry.notBefore),
            expiresAt: Math.max(held.expiresAt, entry.expiresAt),
          }
    byIssuer.set(entry.issuer, merged)
    return merged
  }

  /** What is held for an identity, if anything. */
  get(entry: Pick<RevocationEntry, 'issuer' | 'kind' | 'value'>): RevocationEntry | undefined {
    return this.kinds[entry.kind].get(entry.value)?.get(entry.issuer)
  }

  /** Removes an identity; `true` when it was held. */
  remove(entry: Pick<RevocationEntry, 'issuer' | 'kind' | 'value'>): boolean {
    const byValue = this.kinds[entry.kind]
    const byIssuer = byValue.get(entry.value)
    if (byIssuer === undefined || !byIssuer.delete(entry.issuer)) return false
    if (byIssuer.size === 0) byValue.delete(entry.value)
    this.count -= 1
    return true
  }

  /** Drops entries that can no longer match a valid token. */
  sweep(nowMs: number): void {
    for (const entry of this.entries()) if (entry.expiresAt <= nowMs) this.remove(entry)
  }

  /** Every entry held (a copy, safe to mutate the list while iterating it). */
  entries(): RevocationEntry[] {
    const all: RevocationEntry[] = []
    for (const byValue of Object.values(this.kinds)) {
      for (const byIssuer of byValue.values()) all.push(...byIssuer.values())
    }
    return all
  }

  /** Replaces everything with `entries` (a full resynchronization). */
  replace(entries: Iterable<RevocationEntry>): void {
    for (const byValue of Object.values(this.kinds)) byValue.clear()
    this.count = 0
    for (const entry of entries) this.add(entry)
  }

  get size(): number {
    return this.count
  }
}
