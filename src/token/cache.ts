/**
 * Verdict caches keyed by the exact token string. A hit skips parsing and the signature check,
 * never the expiry: an entry dies at the token's `exp` (plus tolerance), its maximum age, the
 * configured TTL, or as soon as its signing key leaves the issuer's key set, whichever comes first.
 *
 * @module
 */
import { LRUCache } from 'lru-cache'

import type { PreparedKey } from './jwk.js'

interface Entry<T> {
  readonly token: string
  readonly value: T
  readonly keys: readonly PreparedKey[]
  readonly validFrom: number
  readonly validUntil: number
}

/**
 * Map keys are the token's last characters, not the whole token: a fresh ~1 KB header string
 * would be hashed on every lookup (1.4 µs), its tail costs a tenth of that. The tail is signature
 * bytes, and a hit still requires the exact token, so a colliding forgery can only miss.
 */
const KEY_CHARS = 32

function keyOf(token: string): string {
  return token.length <= KEY_CHARS ? token : token.slice(-KEY_CHARS)
}

/** A bounded LRU of verdicts that checks expiry and key retirement on every hit. */
export class VerdictCache<T extends {}> {
  private readonly entries: LRUCache<string, Entry<T>>
  private readonly maxTtlMs: number

  constructor(maxEntries: number, maxTtlMs: number) {
    this.entries = new LRUCache({ max: maxEntries })
    this.maxTtlMs = maxTtlMs
  }

  get(token: string, nowMs: number): T | undefined {
    const key = keyOf(token)
    const entry = this.entries.get(key)
    if (entry === undefined || entry.token !== token) return undefined
    if (nowMs < entry.validUntil && !entry.keys.some(isRetired)) {
      // A clock stepped back before nbf or iat makes the verdict wrong for now, not forever.
      return nowMs >= entry.validFrom ? entry.value : undefined
    }
    this.entries.delete(key)
    return undefined
  }

  /** `keys`: the keys the verdict depends on; `validFrom`, `validUntil`: ms since epoch. */
  set(
    token: string,
    value: T,
    keys: readonly PreparedKey[],
    validity: { readonly validFrom: number; readonly validUntil: number },
    nowMs: number,
  ): void {
    const validUntil = Math.min(validity.validUntil, nowMs + this.maxTtlMs)
    this.entries.set(keyOf(token), {
      token,
      value,
      keys,
      validFrom: validity.validFrom,
      validUntil,
    })
  }

  /** Drops every verdict that depends on a retired key. */
  purgeRetired(): void {
    for (const [key, entry] of this.entries.entries()) {
      if (entry.keys.some(isRetired)) this.entries.delete(key)
    }
  }

  /**
   * Drops every verdict `matches` selects (a subject whose claims changed at the provider): a
   * walk of the whole cache, made when a signal asks for it, never on a request.
   */
  drop(matches: (value: T) => boolean): void {
    for (const [key, entry] of this.entries.entries()) {
      if (matches(entry.value)) this.entries.delete(key)
    }
  }

  get size(): number {
    return this.entries.size
  }
}

function isRetired(key: PreparedKey): boolean {
  return key.retired
}
