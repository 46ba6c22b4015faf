/**
 * The verdict cache of introspected tokens, keyed by a SHA-256 of the token: an opaque token is a
 * bearer secret, and the cache never holds one (nor its prefix or tail). Two bounded LRUs, so a
 * flood of refused strings cannot push the verdicts of active tokens out: active tokens until
 * their `exp` and at most `maxTtlSeconds` (fresh), then up to `staleIfErrorSeconds` more (stale:
 * used only when the provider cannot be asked); refusals (inactive, or refused by the gate's
 * checks) for `inactiveTtlSeconds`.
 *
 * @module
 */
import { createHash } from 'node:crypto'

import { LRUCache } from 'lru-cache'

import type { InvalidTokenError } from '../errors.js'

/** The key of a token in the cache: its SHA-256, base64url. */
export function tokenKey(token: string): string {
  return createHash('sha256').update(token).digest('base64url')
}

interface Held<T> {
  readonly value: T
  readonly validFrom: number
  /** Until when the value answers without asking the provider. */
  readonly validUntil: number
  /** Until when it may still answer when the provider cannot be asked (never past `exp`). */
  readonly staleUntil: number
}

/** Bound on remembered refusals: enough for tokens repeated after refusal, small enough to be cheap. */
const MAX_REMEMBERED_REFUSALS = 1000

/** Verdicts and refusals of one gate's introspected tokens. */
export class IntrospectionCache<T extends {}> {
  private readonly verdicts: LRUCache<string, Held<T>>
  private readonly refusals: LRUCache<string, Held<InvalidTokenError>> | undefined
  private readonly maxTtlMs: number
  private readonly staleMs: number
  private readonly refusalTtlMs: number

  constructor(options: {
    readonly maxEntries: number
    readonly maxTtlSeconds: number
    readonly inactiveTtlSeconds: number
    readonly staleIfErrorSeconds: number
  }) {
    this.verdicts = new LRUCache({ max: options.maxEntries })
    this.refusals =
      options.inactiveTtlSeconds === 0
        ? undefined
        : new LRUCache({ max: Math.min(options.maxEntries, MAX_REMEMBERED_REFUSALS) })
    this.maxTtlMs = options.maxTtlSeconds * 1000
    this.staleMs = options.staleIfErrorSeconds * 1000
    this.refusalTtlMs = options.inactiveTtlSeconds * 1000
  }

  /** The verdict held for `key`, still within the token's validity and the cache's bound. */
  verdict(key: string, nowMs: number): T | undefined {
    const held = this.verdicts.peek(key)
    if (held === undefined) return undefined
    if (nowMs < held.validUntil) {
      this.verdicts.get(key)
      return nowMs >= held.validFrom ? held.value : undefined
    }
    if (nowMs >= held.staleUntil) this.verdicts.delete(key)
    return undefined
  }

  /**
   * The verdict held for `key` past its fresh period, while it may still answer when the provider
   * cannot be asked: within the token's validity, and `staleIfErrorSeconds` at most.
   */
  stale(key: string, nowMs: number): T | undefined {
    const held = this.verdicts.peek(key)
    if (held === undefined || nowMs < held.validUntil) return undefined
    if (nowMs < held.staleUntil && nowMs >= held.validFrom) return held.value
    if (nowMs >= held.staleUntil) this.verdicts.delete(key)
    return undefined
  }

  /** The refusal held for `key`, while it is remembered. */
  refusal(key: string, nowMs: number): InvalidTokenError | undefined {
    const held = this.refusals?.get(key)
    if (held === undefined) return undefined
    if (nowMs < held.validUntil) return held.value
    this.refusals?.delete(key)
    return undefined
  }

  /** Keeps a verdict until `validity.validUntil`, and no longer than the cache's bound. */
  keep(
    key: string,
    value: T,
    validity: { readonly validFrom: number; readonly validUntil: number },
    nowMs: number,
  ): void {
    const validUntil = Math.min(validity.validUntil, nowMs + this.maxTtlMs)
    if (validUntil <= nowMs) return
    const staleUntil = Math.min(validity.validUntil, validUntil + this.staleMs)
    this.verdicts.set(key, { value, validFrom: validity.validFrom, validUntil, staleUntil })
  }

  /** Forgets the verdict of `key` (the provider now calls the token inactive). */
  forget(key: string): void {
    this.verdicts.delete(key)
  }

  /**
   * Forgets every verdict `matches` selects, stale ones included (a subject whose claims changed
   * at the provider: its tokens are asked about again). A walk of the cache, made when a signal
   * asks for it, never on a request. Refusals stay: they hold no subject, and live seconds.
   */
  forgetWhere(matches: (value: T) => boolean): void {
    for (const [key, held] of this.verdicts.entries()) {
      if (matches(held.value)) this.verdicts.delete(key)
    }
  }

  /** Remembers a refusal for the cache's short refusal lifetime. */
  refuse(key: string, error: InvalidTokenError, nowMs: number): void {
    this.refusals?.set(key, {
      value: error,
      validFrom: Number.NEGATIVE_INFINITY,
      validUntil: nowMs + this.refusalTtlMs,
      staleUntil: nowMs + this.refusalTtlMs,
    })
  }

  get size(): number {
    return this.verdicts.size
  }
}
