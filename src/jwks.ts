/**
 * Signing keys of one issuer: fetched from its JWKS URI (or found through OpenID discovery),
 * filtered to keys that may verify the allowed algorithms, imported once per refresh, and kept
 * fresh without making requests wait on the provider.
 *
 * - Concurrent misses share one fetch (single flight).
 * - An unknown `kid` refetches at most once per `cooldownMs`: a genuine rotation is seen within one
 *   cooldown, a flood of random kids is not a flood of fetches.
 * - Keys older than 80% of `maxAgeMs` are refreshed in the background; past `maxAgeMs` a request
 *   waits for the refresh; when it fails, the last good keys are served for at most
 *   `staleIfErrorMs` more (stale-if-error). A bad response never replaces good keys.
 * - No usable keys at all: {@link ServiceUnavailableError} (503), never a 401.
 *
 * @module
 */
import { createPublicKey, type KeyObject } from 'node:crypto'

import {
  ALGORITHMS,
  type JWSAlgorithm,
  type PreparedVerifier,
  prepareVerifier,
} from './algorithms.js'
import { ServiceUnavailableError } from './errors.js'
import type { Emit, JWKSFailureReason } from './events.js'
import { keyUrlProblem } from './issuers.js'

/** Validated JWKS settings (see `GateOptions.jwks` for meanings and defaults). */
export interface NormalizedJWKSOptions {
  readonly timeoutMs: number
  readonly cooldownMs: number
  readonly maxAgeMs: number
  readonly staleIfErrorMs: number
  readonly maxBodyBytes: number
  readonly allowInsecureHttp: boolean
  readonly fetch: typeof globalThis.fetch
}

/** A verification key with its `crypto.verify` arguments per algorithm. */
export interface PreparedKey {
  readonly kid: string | undefined
  readonly verifiers: Readonly<Partial<Record<JWSAlgorithm, PreparedVerifier>>>
  /** Set when a refresh no longer lists this key: anything verified with it must be re-verified. */
  retired: boolean
}

/** How an issuer's keys stand, as `gate.ready()` reports it. */
export interface IssuerKeysStatus {
  readonly issuer: string
  /** `fresh`: usable and within max age; `stale`: serving last good keys after failed refreshes; `unavailable`: no usable keys. */
  readonly state: 'fresh' | 'stale' | 'unavailable'
  readonly keys: number
  /** When the keys in use were fetched (ms since epoch), if ever. */
  readonly fetchedAt: number | undefined
  readonly lastFailure: JWKSFailureReason | undefined
}

class FetchFailure extends Error {
  readonly reason: JWKSFailureReason
  constructor(reason: JWKSFailureReason, cause?: unknown) {
    super(`JWKS fetch failed: ${reason}`, cause === undefined ? undefined : { cause })
    this.reason = reason
  }
}

const NO_KEYS: readonly PreparedKey[] = Object.freeze([])
/** Tokens without `kid` may be tried against this many keys at most. */
const MAX_KEYLESS_CANDIDATES = 4
const MIN_RSA_MODULUS_BITS = 2048
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const
const ACCEPT = 'application/jwk-set+json, application/json;q=0.9'

/** The keys of one configured issuer. */
export class IssuerKeys {
  readonly issuer: string
  private jwksUri: string | undefined
  private readonly discoveryUri: string | undefined
  private readonly algorithms: readonly JWSAlgorithm[]
  private readonly options: NormalizedJWKSOptions
  private readonly emit: Emit

  private byKid = new Map<string | undefined, PreparedKey[]>()
  private byFingerprint = new Map<string, PreparedKey>()
  private fetchedAt = Number.NEGATIVE_INFINITY
  private lastAttemptAt = Number.NEGATIVE_INFINITY
  private lastFailure: JWKSFailureReason | undefined
  private pending: Promise<void> | undefined
  /** Called after a refresh retired keys, so caches can drop what those keys verified. */
  onKeysRetired: (() => void) | undefined

  constructor(
    issuer: { issuer: string; jwksUri: string | undefined; discovery: boolean },
    algorithms: readonly JWSAlgorithm[],
    options: NormalizedJWKSOptions,
    emit: Emit,
  ) {
    this.issuer = issuer.issuer
    this.jwksUri = issuer.jwksUri
    this.discoveryUri = issuer.discovery
      ? `${issuer.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
      : undefined
    this.algorithms = algorithms
    this.options = options
    this.emit = emit
  }

  /**
   * Keys that may verify a token with this `kid` and `alg`; empty when none match even after the
   * refetch the cooldown allows.
   *
   * @throws ServiceUnavailableError `ERR_JWKS_UNAVAILABLE` when no usable keys can be had.
   */
  async resolve(kid: string | undefined, alg: JWSAlgorithm): Promise<readonly PreparedKey[]> {
    const now = Date.now()
    const age = now - this.fetchedAt
    const { maxAgeMs, cooldownMs } = this.options
    if (age < maxAgeMs) {
      if (age >= maxAgeMs * 0.8 && this.mayAttempt(now)) void this.refresh()
      const found = this.match(kid, alg)
      if (found.length > 0) return found
      if (this.pending === undefined && now - this.lastAttemptAt < cooldownMs) return NO_KEYS
      await this.refresh()
      return this.match(kid, alg)
    }
    if (this.pending !== undefined || this.mayAttempt(now)) await this.refresh()
    if (Date.now() - this.fetchedAt < maxAgeMs + this.options.staleIfErrorMs) {
      return this.match(kid, alg)
    }
    throw this.unavailable()
  }

  /**
   * For a cached verdict: `false` once the keys are past the stale bound (the verdict must not
   * outlive the keys that made it). Also starts the background refresh a hit would otherwise
   * never trigger, so traffic served from the cache still keeps keys fresh.
   */
  stillUsable(now: number): boolean {
    const age = now - this.fetchedAt
    if (age < this.options.maxAgeMs * 0.8) return true
    if (this.mayAttempt(now)) void this.refresh()
    return age < this.options.maxAgeMs + this.options.staleIfErrorMs
  }

  /** Fetches now unless a fetch is under way or backing off after a failure; resolves when settled. */
  async warm(): Promise<IssuerKeysStatus> {
    if (this.pending !== undefined || this.mayAttempt(Date.now())) await this.refresh()
    return this.status()
  }

  status(): IssuerKeysStatus {
    const age = Date.now() - this.fetchedAt
    const state =
      age < this.options.maxAgeMs
        ? 'fresh'
        : age < this.options.maxAgeMs + this.options.staleIfErrorMs
          ? 'stale'
          : 'unavailable'
    return {
      issuer: this.issuer,
      state,
      keys: state === 'unavailable' ? 0 : this.byFingerprint.size,
      fetchedAt: Number.isFinite(this.fetchedAt) ? this.fetchedAt : undefined,
      lastFailure: this.lastFailure,
    }
  }

  /** After a failure, wait `min(cooldownMs, 1 s)` before the next attempt: recover fast, never hammer. */
  private mayAttempt(now: number): boolean {
    if (this.pending !== undefined) return false
    const backoff = this.lastFailure === undefined ? 0 : Math.min(this.options.cooldownMs, 1000)
    return now - this.lastAttemptAt >= backoff
  }

  private unavailable(): ServiceUnavailableError {
    const backoff = Math.min(this.options.cooldownMs, 1000)
    const waitMs = this.lastAttemptAt + backoff - Date.now()
    return new ServiceUnavailableError('ERR_JWKS_UNAVAILABLE', waitMs / 1000)
  }

  private match(kid: string | undefined, alg: JWSAlgorithm): readonly PreparedKey[] {
    if (kid === undefined) {
      const candidates: PreparedKey[] = []
      for (const key of this.byFingerprint.values()) {
        if (key.verifiers[alg] !== undefined) candidates.push(key)
      }
      return candidates.length <= MAX_KEYLESS_CANDIDATES ? candidates : NO_KEYS
    }
    const keys = this.byKid.get(kid)
    if (keys === undefined) return NO_KEYS
    if (keys.length === 1) return keys[0]?.verifiers[alg] !== undefined ? keys : NO_KEYS
    return keys.filter((key) => key.verifiers[alg] !== undefined)
  }

  private refresh(): Promise<void> {
    if (this.pending !== undefined) return this.pending
    this.lastAttemptAt = Date.now()
    // apply() throws for a document that is not a key set: it must fail like a network error.
    this.pending = this.fetchKeys()
      .then((document) => this.apply(document))
      .catch((error: unknown) => this.fail(error))
      .finally(() => {
        this.pending = undefined
      })
    return this.pending
  }

  private async fetchKeys(): Promise<unknown> {
    if (this.jwksUri === undefined && this.discoveryUri !== undefined) {
      this.jwksUri = await this.discover(this.discoveryUri)
    }
    return this.fetchJSON(this.jwksUri as string)
  }

  private async discover(uri: string): Promise<string> {
    let document: unknown
    try {
      document = await this.fetchJSON(uri)
    } catch (error) {
      throw new FetchFailure('discovery', error)
    }
    const metadata = document as { issuer?: unknown; jwks_uri?: unknown } | null
    // OpenID Connect Discovery §4.3: the document must name exactly the issuer it was fetched for.
    if (metadata === null || typeof metadata !== 'object' || metadata.issuer !== this.issuer) {
      throw new FetchFailure('discovery')
    }
    // The discovered URL obeys the same transport rule as a configured one.
    const jwksUri = metadata.jwks_uri
    if (
      typeof jwksUri !== 'string' ||
      keyUrlProblem(jwksUri, this.options.allowInsecureHttp) !== undefined
    ) {
      throw new FetchFailure('discovery')
    }
    return jwksUri
  }

  private async fetchJSON(uri: string): Promise<unknown> {
    let response: Response
    try {
      response = await this.options.fetch(uri, {
        redirect: 'manual',
        headers: { accept: ACCEPT },
        signal: AbortSignal.timeout(this.options.timeoutMs),
      })
    } catch (error) {
      throw new FetchFailure(isTimeout(error) ? 'timeout' : 'network', error)
    }
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined)
      throw new FetchFailure('redirect')
    }
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined)
      throw new FetchFailure('status')
    }
    const text = await readCapped(response, this.options.maxBodyBytes)
    try {
      return JSON.parse(text) as unknown
    } catch (error) {
      throw new FetchFailure('invalid_json', error)
    }
  }

  private apply(document: unknown): void {
    const keys = (document as { keys?: unknown } | null)?.keys
    if (!Array.isArray(keys)) throw new FetchFailure('invalid_json')
    const byFingerprint = new Map<string, PreparedKey>()
    for (const jwk of keys) {
      const fingerprint = fingerprintOf(jwk)
      if (fingerprint === undefined || byFingerprint.has(fingerprint)) continue
      const prepared =
        this.byFingerprint.get(fingerprint) ??
        prepareKey(jwk as Record<string, unknown>, this.algorithms)
      if (prepared !== undefined) byFingerprint.set(fingerprint, prepared)
    }
    if (byFingerprint.size === 0) {
      this.fail(new FetchFailure('no_usable_keys'))
      return
    }
    let retired = false
    for (const [fingerprint, key] of this.byFingerprint) {
      if (!byFingerprint.has(fingerprint)) key.retired = retired = true
    }
    const byKid = new Map<string | undefined, PreparedKey[]>()
    for (const key of byFingerprint.values()) {
      const sameKid = byKid.get(key.kid)
      if (sameKid === undefined) byKid.set(key.kid, [key])
      else sameKid.push(key)
    }
    this.byFingerprint = byFingerprint
    this.byKid = byKid
    this.fetchedAt = Date.now()
    this.lastFailure = undefined
    if (retired) this.onKeysRetired?.()
    this.emit?.({
      type: 'jwks_refreshed',
      issuer: this.issuer,
      kids: [...byFingerprint.values()].flatMap((key) => (key.kid === undefined ? [] : [key.kid])),
    })
  }

  private fail(error: unknown): void {
    const reason = error instanceof FetchFailure ? error.reason : 'network'
    this.lastFailure = reason
    this.emit?.({ type: 'jwks_refresh_failed', issuer: this.issuer, reason, error })
    const age = Date.now() - this.fetchedAt
    if (age >= this.options.maxAgeMs && age < this.options.maxAgeMs + this.options.staleIfErrorMs) {
      this.emit?.({ type: 'jwks_stale', issuer: this.issuer, ageMs: age })
    }
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'))
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure('too_large')
  }
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined)
        throw new FetchFailure('too_large')
      }
      chunks.push(value)
    }
  } catch (error) {
    if (error instanceof FetchFailure) throw error
    throw new FetchFailure(isTimeout(error) ? 'timeout' : 'network', error)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}

const PUBLIC_MEMBERS: Record<string, readonly string[]> = {
  RSA: ['n', 'e'],
  EC: ['crv', 'x', 'y'],
  OKP: ['crv', 'x'],
}

/**
 * Identity of a key across refreshes: everything that decides whether and how it may verify
 * (kid, alg, use, key_ops, private members) and its public material. A key republished with
 * `use: enc` or with private members is a different key, and is judged again.
 */
function fingerprintOf(jwk: unknown): string | undefined {
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return undefined
  const record = jwk as Record<string, unknown>
  const members = typeof record.kty === 'string' ? PUBLIC_MEMBERS[record.kty] : undefined
  if (members === undefined) return undefined
  const privateMembers = PRIVATE_MEMBERS.filter((member) => record[member] !== undefined)
  const parts = [record.kty, record.kid, record.alg, record.use, record.key_ops, privateMembers]
  for (const member of members) {
    if (typeof record[member] !== 'string') return undefined
    parts.push(record[member])
  }
  return JSON.stringify(parts)
}

/**
 * Imports a JWK for verification, or `undefined` when it must not verify anything here:
 * encryption keys, keys whose `key_ops` exclude verify, keys carrying private members (a
 * misconfigured provider; the private half is never touched), short RSA moduli, and keys whose
 * `alg`, `kty` and `crv` do not fit an allowed algorithm.
 */
function prepareKey(
  record: Record<string, unknown>,
  allowed: readonly JWSAlgorithm[],
): PreparedKey | undefined {
  if (record.use !== undefined && record.use !== 'sig') return undefined
  if (record.key_ops !== undefined) {
    if (!Array.isArray(record.key_ops) || !record.key_ops.includes('verify')) return undefined
  }
  if (PRIVATE_MEMBERS.some((member) => record[member] !== undefined)) return undefined
  if (record.kid !== undefined && (typeof record.kid !== 'string' || record.kid.length === 0)) {
    return undefined
  }
  if (record.alg !== undefined && typeof record.alg !== 'string') return undefined
  const crv = typeof record.crv === 'string' ? record.crv : undefined
  const algorithms = allowed.filter((alg) => {
    const spec = ALGORITHMS[alg]
    if (spec.kty !== record.kty) return false
    if (spec.curves !== undefined && (crv === undefined || !spec.curves.includes(crv))) return false
    return record.alg === undefined || record.alg === alg
  })
  if (algorithms.length === 0) return undefined

  let key: KeyObject
  try {
    const publicJwk: Record<string, string> = { kty: record.kty as string }
    for (const member of PUBLIC_MEMBERS[record.kty as string] ?? []) {
      publicJwk[member] = record[member] as string
    }
    key = createPublicKey({ key: publicJwk, format: 'jwk' })
  } catch {
    return undefined
  }
  if (
    record.kty === 'RSA' &&
    (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_MODULUS_BITS
  ) {
    return undefined
  }
  const verifiers: Partial<Record<JWSAlgorithm, PreparedVerifier>> = {}
  for (const alg of algorithms) verifiers[alg] = prepareVerifier(alg, key, crv)
  return { kid: record.kid as string | undefined, verifiers, retired: false }
}
