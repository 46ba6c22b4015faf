/**
 * `createTokenExchange()`: trades a user's token for one scoped to another product, on the user's
 * behalf (RFC 8693 token exchange; Entra ID's on-behalf-of), through openid-client's
 * `genericGrantRequest`. Results are cached per (client, hash of the subject token, target,
 * scope) until shortly before they expire and never past the subject token's own `exp`; one
 * request in flight per key however many callers wait; retried as the token source retries;
 * optionally shared by a fleet through the token source's Redis cache, where services sharing one
 * Redis never share tokens.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { inspect } from 'node:util'

import { createEmit, type Emit } from '../events.js'
import { createTokenEndpoint, warnIfInsecure } from './endpoint.js'
import { isTokenSourceError, TokenSourceError } from './errors.js'
import { type KnownSubject, registerExchanger } from './exchange-registry.js'
import { scheduleToken } from './schedule.js'
import { createSharedCache, type SharedCache, type SharedToken } from './shared-cache.js'
import {
  type ExchangeFacts,
  type ExchangeTarget,
  exchangeBody,
  type NormalizedTarget,
  type NormalizedTokenExchangeOptions,
  normalizeTarget,
  normalizeTokenExchangeOptions,
  type TokenExchangeEvent,
  type TokenExchangeOptions,
} from './token-exchange-options.js'

/** Trades subject tokens for tokens scoped to other products. */
export interface TokenExchange {
  /**
   * A token for `target` on behalf of the subject of `subjectToken`: from the cache while the
   * exchanged token is usable and the subject token has not expired, else from the provider, one
   * request per subject token, target and scope however many callers wait. A string `target` is
   * the product's identifier, sent as the profile sends targets (`resource`, `audience`, or
   * Entra's `{target}/.default` scope).
   *
   * @throws TokenSourceError `ERR_SUBJECT_TOKEN_REFUSED` (expired, foreign or not exchangeable
   *   subject token), `ERR_TOKEN_REQUEST_REFUSED` (`invalid_target`, `invalid_scope`…),
   *   `ERR_CLIENT_REFUSED` (`unauthorized_client`…), `ERR_TOKEN_ENDPOINT_UNAVAILABLE` (retryable),
   *   with the provider's `oauthError` and `oauthErrorDescription`.
   * @throws TypeError when `target` is invalid.
   */
  exchange(subjectToken: string, target: string | ExchangeTarget): Promise<string>
  /** Stops: requests in flight are aborted, every later `exchange()` fails with `ERR_TOKEN_SOURCE_CLOSED`. */
  close(): void
  readonly issuer: string
  readonly clientId: string
  /** The shape of the provider's exchange, given or read from the issuer. */
  readonly profile: NormalizedTokenExchangeOptions['profile']
}

interface Entry {
  readonly accessToken: string
  /** Never handed out from here: the earlier of the token's margin and the subject's `exp`. */
  readonly usableUntil: number
}

const SHARED_CACHE_TIMEOUT_MS = 1000
// String targets validated once each (`auth.tokenFor('https://office.example.com')` on every request).
const MAX_MEMOIZED_TARGETS = 256
const SWEEP_INTERVAL_MS = 1000

/**
 * Creates a token exchanger. Validates the options; makes no request until the first exchange.
 *
 * @example
 * ```ts
 * import { createTokenExchange, fromEnv, keycloak } from 'tollgate/client'
 *
 * const exchanger = createTokenExchange({
 *   issuer: keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' }),
 *   clientId: 'gateway',
 *   clientSecret: fromEnv('GATEWAY_SECRET'),
 * })
 * const officeToken = await exchanger.exchange(userToken, { audience: 'office', scope: 'office:records:read' })
 * ```
 * @throws TypeError at creation when `options` are invalid (the message names the option, never a secret).
 */
export function createTokenExchange(options: TokenExchangeOptions): TokenExchange {
  const settings = normalizeTokenExchangeOptions(options)
  return new Exchanger(settings).facade()
}

/** The state of one exchanger: its cache, its flights, its endpoint. */
export class Exchanger {
  readonly settings: NormalizedTokenExchangeOptions
  readonly #entries = new Map<string, Entry>()
  readonly #flights = new Map<string, Promise<Entry>>()
  readonly #stopped = new AbortController()
  readonly #endpoint
  readonly #shared: SharedCache | undefined
  readonly #owner = randomUUID()
  readonly #targets = new Map<string, NormalizedTarget>()
  readonly #emit: Emit<TokenExchangeEvent>
  /** Who asks and how: the first part of every key (see {@link keyOf}). */
  readonly #identity: string
  #sweptAt = Number.NEGATIVE_INFINITY

  constructor(settings: NormalizedTokenExchangeOptions) {
    this.settings = settings
    this.#emit = createEmit(settings.onEvent)
    const { client } = settings
    this.#identity = JSON.stringify([
      client.server.issuer,
      client.server.tokenEndpoint ?? '',
      client.clientId,
      settings.profile,
      settings.subjectTokenType,
    ])
    warnIfInsecure(client.server.tokenEndpoint ?? client.server.issuer, client.clientId)
    this.#endpoint = createTokenEndpoint(client, this.#stopped.signal)
    this.#shared =
      client.sharedCache === undefined
        ? undefined
        : createSharedCache(
            client.sharedCache.redis,
            client.sharedCache.keyPrefix === 'tollgate:token'
              ? 'tollgate:exchange'
              : `${client.sharedCache.keyPrefix}:exchange`,
            client.sharedCache.lockMs,
            SHARED_CACHE_TIMEOUT_MS,
          )
  }

  /**
   * The exchanged token for a subject and a validated target: the cached path does one map
   * lookup (the subject's hash is kept on `subject`), no promise chain beyond the answer's.
   */
  exchange(subject: KnownSubject, target: NormalizedTarget): Promise<string> {
    if (this.#stopped.signal.aborted) return Promise.reject(this.#closed())
    subject.hash ??= createHash('sha256').update(subject.token).digest('base64url')
    const key = keyOf(this.#identity, subject.hash, target)
    const now = this.settings.client.now()
    const entry = this.#entries.get(key)
    if (entry !== undefined) {
      if (now < entry.usableUntil) return Promise.resolve(entry.accessToken)
      this.#entries.delete(key)
    }
    const subjectExpiresAt =
      subject.exp === undefined ? Number.POSITIVE_INFINITY : subject.exp * 1000
    if (now >= subjectExpiresAt) return Promise.reject(this.#expiredSubject())
    let flight = this.#flights.get(key)
    if (flight === undefined) {
      flight = this.#obtain(key, subject, target, subjectExpiresAt).finally(() =>
        this.#flights.delete(key),
      )
      this.#flights.set(key, flight)
    }
    return flight.then(accessTokenOf)
  }

  /** `auth.tokenFor(target)`: a verified subject, a target validated here (strings memoized). */
  exchangeFor(subject: KnownSubject, target: unknown, prefix = TOKEN_FOR): Promise<string> {
    let normalized: NormalizedTarget | undefined
    try {
      if (typeof target === 'string') {
        normalized = this.#targets.get(target)
        if (normalized === undefined) {
          normalized = normalizeTarget(target, this.settings.profile, prefix)
          if (this.#targets.size < MAX_MEMOIZED_TARGETS) this.#targets.set(target, normalized)
        }
      } else {
        normalized = normalizeTarget(target, this.settings.profile, prefix)
      }
    } catch (error) {
      return Promise.reject(error)
    }
    return this.exchange(subject, normalized)
  }

  close(): void {
    this.#stopped.abort()
    this.#entries.clear()
  }

  /** The public face: `exchange(subjectToken, target)` with the subject's `exp` read from it. */
  facade(): TokenExchange {
    const { client, profile } = this.settings
    const exchanger: TokenExchange = {
      issuer: client.server.issuer,
      clientId: client.clientId,
      profile,
      exchange: (subjectToken, target) => {
        if (typeof subjectToken !== 'string' || subjectToken === '') {
          return Promise.reject(
            new TypeError(
              'exchange(subjectToken, target): "subjectToken" must be a non-empty string',
            ),
          )
        }
        const { exp, sub } = claimsOf(subjectToken)
        return this.exchangeFor({ token: subjectToken, exp, sub }, target, EXCHANGE)
      },
      close: () => this.close(),
    }
    const description = () => ({
      issuer: client.server.issuer,
      clientId: client.clientId,
      profile,
      clientAuth: client.clientAuth,
      credential: client.credentialSource,
      sharedCache: this.#shared !== undefined,
    })
    Object.defineProperties(exchanger, {
      toJSON: { value: description },
      [inspect.custom]: { value: () => `TokenExchange ${inspect(description())}` },
    })
    registerExchanger(exchanger, {
      issuer: client.server.issuer,
      clientId: client.clientId,
      exchangeFor: (subject, target) => this.exchangeFor(subject, target),
    })
    return Object.freeze(exchanger)
  }

  #facts(subject: KnownSubject, target: NormalizedTarget): ExchangeFacts {
    const { client, profile } = this.settings
    return {
      issuer: client.server.issuer,
      clientId: client.clientId,
      grant: profile === 'entra' ? 'on_behalf_of' : 'token_exchange',
      subject: subject.sub,
      resource: target.resource,
      audience: target.audience,
      scope: target.scope,
    }
  }

  async #obtain(
    key: string,
    subject: KnownSubject,
    target: NormalizedTarget,
    subjectExpiresAt: number,
  ): Promise<Entry> {
    const startedAt = performance.now()
    const facts = this.#emit === undefined ? undefined : this.#facts(subject, target)
    const shared = this.#shared
    const sharedKey = shared?.keyOf(key)
    if (shared !== undefined && sharedKey !== undefined) {
      try {
        const seen = await shared.read(sharedKey)
        if (seen !== undefined) {
          const entry = this.#entryOf(seen.token, subjectExpiresAt)
          if (this.settings.client.now() < entry.usableUntil) {
            if (facts !== undefined) {
              this.#emit?.({
                type: 'token_exchanged',
                ...facts,
                from: 'shared_cache',
                expiresInSeconds: seen.token.expiresInSeconds,
                durationMs: performance.now() - startedAt,
              })
            }
            return this.#keep(key, entry)
          }
        }
      } catch {
        // Redis down or slow: this instance asks the provider itself.
      }
    }
    const requestedAt = this.settings.client.now()
    const result = await this.#requestWithRetries(subject.token, target, facts)
    if (facts !== undefined) {
      this.#emit?.({
        type: 'token_exchanged',
        ...facts,
        from: 'provider',
        expiresInSeconds: result.expiresInSeconds,
        durationMs: performance.now() - startedAt,
      })
    }
    const token: SharedToken = {
      accessToken: result.accessToken,
      obtainedAt: requestedAt,
      expiresInSeconds: result.expiresInSeconds,
    }
    const entry = this.#entryOf(token, subjectExpiresAt)
    const ttlMs = entry.usableUntil - this.settings.client.now()
    if (ttlMs > 0) {
      this.#keep(key, entry)
      if (shared !== undefined && sharedKey !== undefined) {
        // Stored for the fleet; the lock write() releases is not taken (no one waits for it).
        shared.write(sharedKey, token, ttlMs, this.#owner).catch(() => undefined)
      }
    }
    return entry
  }

  #entryOf(token: SharedToken, subjectExpiresAt: number): Entry {
    const schedule = scheduleToken(
      token.obtainedAt,
      token.expiresInSeconds,
      this.settings.client.renewal,
      0,
    )
    return {
      accessToken: token.accessToken,
      usableUntil: Math.min(schedule.usableUntil, subjectExpiresAt),
    }
  }

  #keep(key: string, entry: Entry): Entry {
    if (this.#stopped.signal.aborted) return entry
    if (this.#entries.size >= this.settings.maxEntries) {
      // Expired entries go first; swept at most once a second, so a full cache of live tokens
      // does not cost a walk over every entry per new one.
      const now = this.settings.client.now()
      if (now - this.#sweptAt >= SWEEP_INTERVAL_MS) {
        this.#sweptAt = now
        for (const [oldKey, old] of this.#entries) {
          if (old.usableUntil <= now) this.#entries.delete(oldKey)
        }
      }
      // Still full: the oldest entry goes.
      if (this.#entries.size >= this.settings.maxEntries) {
        const oldest = this.#entries.keys().next()
        if (oldest.done !== true) this.#entries.delete(oldest.value)
      }
    }
    this.#entries.set(key, entry)
    return entry
  }

  /** The token source's retry policy: retryable failures only, full-jitter exponential backoff. */
  async #requestWithRetries(
    subjectToken: string,
    target: NormalizedTarget,
    facts: ExchangeFacts | undefined,
  ) {
    const { retry } = this.settings.client
    const { grantType, body } = exchangeBody(subjectToken, target, this.settings)
    for (let attempt = 1; ; attempt++) {
      if (this.#stopped.signal.aborted) throw this.#closed()
      try {
        if (facts !== undefined) this.#emit?.({ type: 'exchange_requested', ...facts, attempt })
        return await this.#endpoint.extension(grantType, body)
      } catch (error) {
        const failure = this.#asExchangeFailure(error)
        const willRetry =
          failure.retryable && attempt < retry.attempts && !this.#stopped.signal.aborted
        if (facts !== undefined) {
          this.#emit?.({
            type: 'exchange_failed',
            ...facts,
            code: failure.code,
            retryable: failure.retryable,
            willRetry,
            error: failure,
          })
        }
        if (!willRetry) throw failure
        const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1))
        await this.#delay(Math.random() * ceiling)
      }
    }
  }

  #delay(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const stopped = this.#stopped.signal
      if (stopped.aborted) return reject(this.#closed())
      const onAbort = () => {
        clearTimeout(timer)
        reject(this.#closed())
      }
      const timer = setTimeout(() => {
        stopped.removeEventListener('abort', onAbort)
        resolve()
      }, ms)
      stopped.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** The provider's `invalid_grant` to an exchange is about the subject (or actor) token. */
  #asExchangeFailure(error: unknown): TokenSourceError {
    const { clientId, server } = this.settings.client
    if (this.#stopped.signal.aborted) return this.#closed()
    if (!isTokenSourceError(error)) {
      return new TokenSourceError({
        code: 'ERR_TOKEN_RESPONSE_INVALID',
        message: `token exchange of client "${clientId}" failed unexpectedly`,
        retryable: false,
        clientId,
        issuer: server.issuer,
      })
    }
    if (error.code !== 'ERR_TOKEN_REQUEST_REFUSED' || error.oauthError !== 'invalid_grant') {
      return error
    }
    return new TokenSourceError({
      code: 'ERR_SUBJECT_TOKEN_REFUSED',
      message:
        `token endpoint of ${server.issuer} refused the subject token client "${clientId}" ` +
        'exchanged (invalid_grant): it is expired, revoked, not issued by this provider, not for ' +
        'an audience this client may exchange, or does not allow this client to act for it',
      retryable: false,
      clientId,
      issuer: server.issuer,
      oauthError: error.oauthError,
      oauthErrorDescription: error.oauthErrorDescription,
      status: error.status,
    })
  }

  #expiredSubject(): TokenSourceError {
    const { clientId, server } = this.settings.client
    return new TokenSourceError({
      code: 'ERR_SUBJECT_TOKEN_REFUSED',
      message: `the subject token client "${clientId}" was asked to exchange has expired: it is not sent`,
      retryable: false,
      clientId,
      issuer: server.issuer,
    })
  }

  #closed(): TokenSourceError {
    const { clientId, server } = this.settings.client
    return new TokenSourceError({
      code: 'ERR_TOKEN_SOURCE_CLOSED',
      message: `token exchange of client "${clientId}" is closed`,
      retryable: false,
      clientId,
      issuer: server.issuer,
    })
  }
}

const TOKEN_FOR = 'auth.tokenFor(target):'
const EXCHANGE = 'exchange(subjectToken, target):'

/**
 * The cache key: never the subject token itself, its hash. It names who asked (issuer, token
 * endpoint, client, profile, subject token type) as well as what was asked, because the shared
 * cache is one Redis for every service of a fleet: a token the provider gave the gateway for the
 * office must never be served to another client that the provider would refuse for the office
 * (RFC 8693 §5: the provider decides which clients may receive delegations).
 */
function keyOf(identity: string, subjectHash: string, target: NormalizedTarget): string {
  return JSON.stringify([
    identity,
    subjectHash,
    target.resource,
    target.audience ?? '',
    target.scope ?? '',
    target.actorToken === undefined
      ? ''
      : createHash('sha256').update(target.actorToken).digest('base64url'),
    target.actorTokenType ?? '',
    target.requestedTokenType ?? '',
  ])
}

function accessTokenOf(entry: Entry): string {
  return entry.accessToken
}

/**
 * The `exp` and `sub` of a JWT subject token, read without verification: only to stop serving
 * (and asking for) exchanged tokens once the subject token has expired, and to name the user in
 * events. Nothing for an opaque token.
 */
export function claimsOf(token: string): { exp: number | undefined; sub: string | undefined } {
  const first = token.indexOf('.')
  const second = token.indexOf('.', first + 1)
  if (first < 1 || second < 0 || token.indexOf('.', second + 1) !== -1) {
    return { exp: undefined, sub: undefined }
  }
  try {
    const payload = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString())
    const { exp, sub } = (payload ?? {}) as { exp?: unknown; sub?: unknown }
    return {
      exp: typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined,
      sub: typeof sub === 'string' ? sub : undefined,
    }
  } catch {
    return { exp: undefined, sub: undefined }
  }
}
