/**
 * Signing keys of the configured issuers: fetched from each JWKS URI (or found through OpenID
 * discovery), filtered to keys that may verify the allowed algorithms, imported once per refresh,
 * and kept fresh without making requests wait on the provider. Issuers of a gate that name the
 * same JWKS URI share one key set (one fetch, one cache, one cooldown).
 *
 * - Concurrent misses share one fetch (single flight).
 * - An unknown `kid` refetches after a short interval (`minCooldownMs`, which such a request waits
 *   for rather than being refused): a key the provider rotated in is accepted well within a second.
 *   Each such fetch that does not find the `kid` it was made for doubles the interval, up to
 *   `cooldownMs`; one that finds it, or a cooldown without unknown kids, resets it. So a flood of
 *   random kids costs a handful of fetches while it ramps up, then one per cooldown.
 * - Keys older than 80% of `maxAgeMs` are refreshed in the background; past `maxAgeMs` a request
 *   waits for the refresh; when it fails, the last good keys are served for at most
 *   `staleIfErrorMs` more (stale-if-error). A bad response never replaces good keys.
 * - No usable keys at all: {@link ServiceUnavailableError} (503), never a 401.
 *
 * @module
 */

import { ServiceUnavailableError } from '../errors.js'
import type { Emit, JWKSFailureReason } from '../events.js'
import { warnOnce } from '../warnings.js'
import type { JWSAlgorithm } from './algorithms.js'
import { FetchFailure, fetchJSON, urlForOperators } from './fetch-json.js'
import { keyUrlProblem } from './issuers.js'
import { fingerprintOf, type PreparedKey, prepareKey } from './jwk.js'

export type { PreparedKey } from './jwk.js'

/** Validated JWKS settings (see `GateOptions.jwks` for meanings and defaults). */
export interface NormalizedJWKSOptions {
  readonly timeoutMs: number
  readonly cooldownMs: number
  readonly minCooldownMs: number
  readonly maxAgeMs: number
  readonly staleIfErrorMs: number
  readonly maxBodyBytes: number
  readonly allowInsecureHttp: boolean
  readonly fetch: typeof globalThis.fetch
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
  /** The HTTP status of the last failed fetch, when the provider answered one (`404`…). */
  readonly lastFailureStatus: number | undefined
  /** The URL the last failed fetch went to (JWKS or discovery document), query shown as `?…`. */
  readonly lastFailureUrl: string | undefined
}

/** Code of the process warning for a key set that cannot work as configured. */
export const JWKS_WARNING_CODE = 'TOLLGATE_JWKS_UNUSABLE'

/** HTTP statuses that say "later", not "wrong address": 408 Request Timeout, 429 Too Many Requests. */
const TRANSIENT_CLIENT_STATUSES = new Set([408, 429])

/**
 * A failure that asking again will not fix: the URL or the provider's setup is wrong (4xx, a
 * redirect, not a key set, no usable keys, discovery pointing elsewhere). Network errors,
 * timeouts, 5xx and oversized bodies may be passing.
 */
function isConfigurationFailure(failure: FetchFailure | undefined): boolean {
  if (failure === undefined) return false
  switch (failure.reason) {
    case 'status':
      return (
        failure.status !== undefined &&
        failure.status >= 400 &&
        failure.status < 500 &&
        !TRANSIENT_CLIENT_STATUSES.has(failure.status)
      )
    case 'redirect':
    case 'invalid_json':
    case 'no_usable_keys':
      return true
    case 'discovery':
      // The discovery document itself failed to fetch: judged like any fetch. Otherwise it was
      // fetched and names another issuer or no usable jwks_uri.
      return failure.cause instanceof FetchFailure ? isConfigurationFailure(failure.cause) : true
    default:
      return false
  }
}

const WHAT_FAILED: Readonly<Record<JWKSFailureReason, string>> = {
  network: 'unreachable',
  timeout: 'did not answer in time',
  status: 'answered',
  redirect: 'answered with a redirect (not followed)',
  too_large: 'answered with a body over jwks.maxBodyBytes',
  invalid_json: 'answered with something that is not a JSON key set',
  no_usable_keys: 'holds no key usable with the allowed algorithms',
  discovery: 'gave no discovery document naming this issuer and a usable jwks_uri',
}

const NO_KEYS: readonly PreparedKey[] = Object.freeze([])
const NOTHING = (): void => undefined
/** Tokens without `kid` may be tried against this many keys at most. */
const MAX_KEYLESS_CANDIDATES = 4
const MAX_REQUESTED_KIDS = 64

/**
 * The key set at one address (a JWKS URI, or the one an issuer's discovery document names):
 * fetched, cached, refreshed and refetched for unknown kids as the module comment says. Issuers
 * of one gate that name the same `jwksUri` share one ({@link KeySets}): one fetch, one cache, one
 * unknown-kid backoff (a kid unknown to one of them is unknown to all, since they read the same
 * keys), and one series of `jwks_*` events, named after the first of those issuers.
 */
export class KeySet {
  /** The issuer its events name, and the one a discovery document must name. */
  readonly issuer: string
  private jwksUri: string | undefined
  private readonly discoveryUri: string | undefined
  private readonly algorithms: readonly JWSAlgorithm[]
  private readonly options: NormalizedJWKSOptions
  /** After a failure, wait `min(cooldownMs, 1 s)` before the next attempt: recover fast, never hammer. */
  private readonly failureBackoffMs: number
  private readonly emit: Emit

  private byKid = new Map<string | undefined, PreparedKey[]>()
  private byFingerprint = new Map<string, PreparedKey>()
  private fetchedAt = Number.NEGATIVE_INFINITY
  private lastAttemptAt = Number.NEGATIVE_INFINITY
  private lastFailure: FetchFailure | undefined
  private pending: Promise<void> | undefined
  /** Called after a refresh retired keys, so caches can drop what those keys verified. */
  private readonly onKeysRetired: (() => void) | undefined
  /** Aborted by `close()`: no fetch runs or starts after it. */
  private readonly lifetime = new AbortController()
  /** Current interval between unknown-kid refetches: `minCooldownMs`, doubling up to `cooldownMs`. */
  private unknownKidIntervalMs: number
  /** When a lookup last found no key for its `kid` (the backoff resets after a quiet cooldown). */
  private unknownKidSeenAt = Number.NEGATIVE_INFINITY
  /** The unknown-kid refetch waiting for its slot or under way, and the kids it was made for. */
  private unknownKidFetch: Promise<void> | undefined
  private readonly requestedKids = new Set<string | undefined>()

  constructor(
    issuer: { issuer: string; jwksUri: string | undefined; discovery: boolean },
    algorithms: readonly JWSAlgorithm[],
    options: NormalizedJWKSOptions,
    hooks: { readonly emit: Emit; readonly onKeysRetired: (() => void) | undefined },
  ) {
    this.issuer = issuer.issuer
    this.jwksUri = issuer.jwksUri
    this.discoveryUri = issuer.discovery
      ? `${issuer.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
      : undefined
    this.algorithms = algorithms
    this.options = options
    this.failureBackoffMs = Math.min(options.cooldownMs, 1000)
    this.unknownKidIntervalMs = options.minCooldownMs
    this.emit = hooks.emit
    this.onKeysRetired = hooks.onKeysRetired
  }

  /**
   * Fetches the key set now, whatever the cooldown, after any fetch already under way (which may
   * have started before the provider changed its keys). Keys that are gone stop verifying, and the
   * verdicts they made are purged, as soon as it resolves.
   */
  async refreshNow(): Promise<void> {
    if (this.pending !== undefined) await this.pending
    await this.refresh()
  }

  /** Aborts a fetch under way and starts no other; keys already fetched keep verifying. */
  close(): void {
    this.lifetime.abort()
  }

  /**
   * Keys that may verify a token with this `kid` and `alg`; empty when none match even after the
   * refetch the cooldown allows.
   *
   * @param beforeFetch Called before the key set is fetched or a fetch awaited for this lookup,
   * and not when the answer is known without one; what it throws rejects the lookup (the
   * verifier refuses another issuer's token there, which must never make the gate fetch).
   *
   * @param issuer The issuer of the token, named in the 503's detail.
   * @throws ServiceUnavailableError `ERR_JWKS_UNAVAILABLE` when no usable keys can be had.
   */
  async resolve(
    kid: string | undefined,
    alg: JWSAlgorithm,
    beforeFetch: () => void = NOTHING,
    issuer: string = this.issuer,
  ): Promise<readonly PreparedKey[]> {
    const now = Date.now()
    const age = now - this.fetchedAt
    const { maxAgeMs } = this.options
    if (age < maxAgeMs) {
      if (age >= maxAgeMs * 0.8 && this.mayAttempt(now)) {
        beforeFetch()
        void this.refresh()
      }
      const found = this.match(kid, alg)
      if (found.length > 0) return found
      return this.refetchForUnknownKid(kid, alg, now, beforeFetch)
    }
    beforeFetch()
    if (this.pending !== undefined || this.mayAttempt(now)) await this.refresh()
    if (Date.now() - this.fetchedAt < maxAgeMs + this.options.staleIfErrorMs) {
      return this.match(kid, alg)
    }
    throw this.unavailable(issuer)
  }

  /**
   * `resolve()` without waiting, when it would not have to: the matching keys while the key set
   * is fresh and has some; none for an unknown kid while refetches back off (no fetch is made or
   * awaited for it); else `undefined` (then `resolve()` decides: refetch, stale keys, 503). A
   * cache miss with known keys (issue 14), and an unknown kid in a flood (issue 24), are then
   * decided without a promise.
   */
  resolveNow(kid: string | undefined, alg: JWSAlgorithm): readonly PreparedKey[] | undefined {
    const now = Date.now()
    const age = now - this.fetchedAt
    const { maxAgeMs } = this.options
    if (age >= maxAgeMs) return undefined
    const found = this.match(kid, alg)
    if (found.length === 0) {
      // An unknown kid while refetches back off is refused as `resolve()` would, without its
      // promises (issue 24: a flood of them); short of the background refresh, which it decides.
      return age < maxAgeMs * 0.8 && this.refusedBackedOff(now) ? NO_KEYS : undefined
    }
    if (age >= maxAgeMs * 0.8 && this.mayAttempt(now)) void this.refresh()
    return found
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

  /**
   * For `gate.ready()`: nothing while the keys are fresh (within `maxAgeMs`: issue 30, a
   * readiness probe must not refetch every key set on every call); else fetches unless backing
   * off after a failure, or waits for the fetch under way. Resolves when settled.
   */
  async warm(): Promise<void> {
    const now = Date.now()
    if (now - this.fetchedAt < this.options.maxAgeMs) return
    if (this.pending !== undefined || this.mayAttempt(now)) await this.refresh()
  }

  /** How the keys stand, reported for `issuer` (one of those sharing them). */
  status(issuer: string = this.issuer): IssuerKeysStatus {
    const age = Date.now() - this.fetchedAt
    const state =
      age < this.options.maxAgeMs
        ? 'fresh'
        : age < this.options.maxAgeMs + this.options.staleIfErrorMs
          ? 'stale'
          : 'unavailable'
    return {
      issuer,
      state,
      keys: state === 'unavailable' ? 0 : this.byFingerprint.size,
      fetchedAt: Number.isFinite(this.fetchedAt) ? this.fetchedAt : undefined,
      lastFailure: this.lastFailure?.reason,
      lastFailureStatus: this.lastFailure?.status,
      lastFailureUrl: this.lastFailure?.url,
    }
  }

  /**
   * A `kid` the key set does not have: wait for the next unknown-kid refetch if it is due within
   * `minCooldownMs` (a rotation is then accepted on the token's first request), else refuse now.
   */
  private async refetchForUnknownKid(
    kid: string | undefined,
    alg: JWSAlgorithm,
    now: number,
    beforeFetch: () => void,
  ): Promise<readonly PreparedKey[]> {
    const { cooldownMs, minCooldownMs } = this.options
    if (this.refusedBackedOff(now)) return NO_KEYS
    beforeFetch()
    if (now - this.unknownKidSeenAt >= cooldownMs) this.unknownKidIntervalMs = minCooldownMs
    this.unknownKidSeenAt = now
    let fetch = this.unknownKidFetch
    if (fetch === undefined) {
      // A fetch already under way may have started before the provider published this key: it
      // is awaited, then this kid still gets its own refetch once the interval allows.
      if (this.pending !== undefined) await this.pending
      const found = this.match(kid, alg)
      if (found.length > 0) return found
      const waitMs = this.lastAttemptAt + this.unknownKidIntervalMs - Date.now()
      if (waitMs > minCooldownMs) return NO_KEYS
      fetch = this.unknownKidFetch ??= this.fetchForUnknownKids(waitMs)
    }
    // Bounded: the set only decides whether the backoff resets.
    if (this.requestedKids.size < MAX_REQUESTED_KIDS) this.requestedKids.add(kid)
    await fetch
    return this.match(kid, alg)
  }

  /**
   * Whether an unknown kid is refused at once: refetches back off (the next is more than
   * `minCooldownMs` away, and no quiet cooldown reset the interval) and no fetch is under way or
   * waiting for its slot. Then the kid counts as seen, whoever the token claims as issuer (the
   * key set decides before the verifier reads the payload); a token can claim any issuer, so
   * this gives a flood nothing it could not have by naming this one.
   */
  private refusedBackedOff(now: number): boolean {
    const { cooldownMs, minCooldownMs } = this.options
    if (
      now - this.unknownKidSeenAt >= cooldownMs ||
      this.unknownKidFetch !== undefined ||
      this.pending !== undefined ||
      this.lastAttemptAt + this.unknownKidIntervalMs - now <= minCooldownMs
    ) {
      return false
    }
    this.unknownKidSeenAt = now
    return true
  }

  private async fetchForUnknownKids(waitMs: number): Promise<void> {
    try {
      if (waitMs > 0) await this.sleep(waitMs)
      await this.refresh()
      if (this.lastFailure !== undefined) return
      const { cooldownMs, minCooldownMs } = this.options
      let found = false
      for (const kid of this.requestedKids) found ||= this.byKid.has(kid)
      this.unknownKidIntervalMs = found
        ? minCooldownMs
        : Math.min(Math.max(this.unknownKidIntervalMs * 2, 1), cooldownMs)
    } finally {
      this.requestedKids.clear()
      this.unknownKidFetch = undefined
    }
  }

  /** Resolves after `ms`, or at once when the gate closes; never keeps the process alive. */
  private sleep(ms: number): Promise<void> {
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

  /** Whether a fetch may start now: none under way, and past the failure backoff if the last one failed. */
  private mayAttempt(now: number): boolean {
    if (this.pending !== undefined) return false
    const backoff = this.lastFailure === undefined ? 0 : this.failureBackoffMs
    return now - this.lastAttemptAt >= backoff
  }

  private unavailable(issuer: string): ServiceUnavailableError {
    const backoff = this.failureBackoffMs
    const waitMs = this.lastAttemptAt + backoff - Date.now()
    return new ServiceUnavailableError({
      code: 'ERR_JWKS_UNAVAILABLE',
      retryAfterSeconds: waitMs / 1000,
      detail: {
        issuer,
        lastFailure: this.lastFailure?.reason,
        lastFailureStatus: this.lastFailure?.status,
        lastFailureUrl: this.lastFailure?.url,
      },
    })
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
    if (this.lifetime.signal.aborted) return Promise.resolve()
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
    const place = { url: urlForOperators(uri) }
    try {
      document = await this.fetchJSON(uri)
    } catch (error) {
      throw new FetchFailure('discovery', error, {
        status: error instanceof FetchFailure ? error.status : undefined,
        ...place,
      })
    }
    const metadata = document as { issuer?: unknown; jwks_uri?: unknown } | null
    // OpenID Connect Discovery §4.3: the document must name exactly the issuer it was fetched for.
    if (metadata === null || typeof metadata !== 'object' || metadata.issuer !== this.issuer) {
      throw new FetchFailure('discovery', undefined, place)
    }
    // The discovered URL obeys the same transport rule as a configured one.
    const jwksUri = metadata.jwks_uri
    if (
      typeof jwksUri !== 'string' ||
      keyUrlProblem(jwksUri, this.options.allowInsecureHttp) !== undefined
    ) {
      throw new FetchFailure('discovery', undefined, place)
    }
    return jwksUri
  }

  private fetchJSON(uri: string): Promise<unknown> {
    return fetchJSON(uri, { ...this.options, signal: this.lifetime.signal })
  }

  private apply(document: unknown): void {
    const keys = (document as { keys?: unknown } | null)?.keys
    const place = { url: urlForOperators(this.jwksUri as string) }
    if (!Array.isArray(keys)) throw new FetchFailure('invalid_json', undefined, place)
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
      this.fail(new FetchFailure('no_usable_keys', undefined, place))
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
    // Closing aborts the fetch: an expected end, not a provider failure.
    if (this.lifetime.signal.aborted) return
    const failure = error instanceof FetchFailure ? error : new FetchFailure('network', error)
    this.lastFailure = failure
    const { reason, status, url } = failure
    if (this.emit !== undefined) {
      this.emit({ type: 'jwks_refresh_failed', issuer: this.issuer, reason, status, url, error })
    } else if (isConfigurationFailure(failure)) {
      // Without a listener a wrong URL would only show as 503s: say it once per URL (warnOnce
      // rate-limits), never per request; the message holds no token.
      const answered =
        status === undefined ? '' : reason === 'status' ? ` ${status}` : ` (HTTP ${status})`
      warnOnce({
        code: JWKS_WARNING_CODE,
        subject: url ?? this.issuer,
        message:
          `signing keys of issuer ${this.issuer} at ${url ?? '(unknown URL)'} ${WHAT_FAILED[reason]}${answered}: ` +
          "tokens of this issuer are answered 503 once no good keys are left. Check the issuer's jwksUri " +
          '(keycloak(): authUrl and realm names). Give onEvent to receive jwks_refresh_failed events instead.',
      })
    }
    const age = Date.now() - this.fetchedAt
    if (age >= this.options.maxAgeMs && age < this.options.maxAgeMs + this.options.staleIfErrorMs) {
      this.emit?.({ type: 'jwks_stale', issuer: this.issuer, ageMs: age })
    }
  }
}

/**
 * The key sets of one gate, by `jwksUri`: issuers that name the same one (Entra's multi-tenant
 * `common` keys, several realms behind one proxy) share one {@link KeySet}. An issuer found
 * through discovery keeps its own: its document must name it.
 */
export class KeySets {
  private readonly byUri = new Map<string, KeySet>()

  /** The key set at `jwksUri`, created by `create` the first time. */
  at(jwksUri: string, create: () => KeySet): KeySet {
    let keySet = this.byUri.get(jwksUri)
    if (keySet === undefined) {
      keySet = create()
      this.byUri.set(jwksUri, keySet)
    }
    return keySet
  }
}

/** The keys of one configured issuer: its {@link KeySet}, own or shared, seen as this issuer's. */
export class IssuerKeys {
  readonly issuer: string
  /** Where its keys come from; the same object for issuers sharing a `jwksUri` in one gate. */
  readonly keySet: KeySet

  /**
   * @param shared The gate's {@link KeySets}: with it, an issuer naming a `jwksUri` another issuer
   * of the gate already named shares that issuer's key set. Without it, the key set is its own.
   */
  constructor(
    issuer: { issuer: string; jwksUri: string | undefined; discovery: boolean },
    algorithms: readonly JWSAlgorithm[],
    options: NormalizedJWKSOptions,
    hooks: { readonly emit: Emit; readonly onKeysRetired: (() => void) | undefined },
    shared?: KeySets,
  ) {
    this.issuer = issuer.issuer
    const create = () => new KeySet(issuer, algorithms, options, hooks)
    const { jwksUri } = issuer
    this.keySet =
      shared !== undefined && jwksUri !== undefined ? shared.at(jwksUri, create) : create()
  }

  /** See {@link KeySet.refreshNow}; resolves to this issuer's status. */
  async refreshNow(): Promise<IssuerKeysStatus> {
    await this.keySet.refreshNow()
    return this.status()
  }

  /** See {@link KeySet.close}: closes the key set for every issuer sharing it. */
  close(): void {
    this.keySet.close()
  }

  /** See {@link KeySet.resolve}. */
  resolve(
    kid: string | undefined,
    alg: JWSAlgorithm,
    beforeFetch?: () => void,
  ): Promise<readonly PreparedKey[]> {
    return this.keySet.resolve(kid, alg, beforeFetch, this.issuer)
  }

  /** See {@link KeySet.resolveNow}. */
  resolveNow(kid: string | undefined, alg: JWSAlgorithm): readonly PreparedKey[] | undefined {
    return this.keySet.resolveNow(kid, alg)
  }

  /** See {@link KeySet.stillUsable}. */
  stillUsable(now: number): boolean {
    return this.keySet.stillUsable(now)
  }

  /** See {@link KeySet.warm}; resolves to this issuer's status. */
  async warm(): Promise<IssuerKeysStatus> {
    await this.keySet.warm()
    return this.status()
  }

  status(): IssuerKeysStatus {
    return this.keySet.status(this.issuer)
  }
}
