/**
 * `createTokenExchange()`: trades a user's token for one scoped to another product, on the user's
 * behalf (RFC 8693 token exchange; Entra ID's on-behalf-of), through openid-client's
 * `genericGrantRequest`. Results are cached per (hash of the subject token, target, scope) until
 * shortly before they expire and never past the subject token's own `exp`; one request in flight
 * per key however many callers wait; retried as the token source retries; optionally shared by a
 * fleet through the token source's Redis cache.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'
import { inspect } from 'node:util'

import { createTokenEndpoint, warnIfInsecure } from './endpoint.js'
import { isTokenSourceError, TokenSourceError } from './errors.js'
import { type KnownSubject, registerExchanger } from './exchange-registry.js'
import { scheduleToken } from './schedule.js'
import { createSharedCache, type SharedCache, type SharedToken } from './shared-cache.js'
import {
  type ExchangeTarget,
  exchangeBody,
  type NormalizedTarget,
  type NormalizedTokenExchangeOptions,
  normalizeTarget,
  normalizeTokenExchangeOptions,
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

  constructor(settings: NormalizedTokenExchangeOptions) {
    this.settings = settings
    const { client } = settings
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
    const key = keyOf(subject.hash, target)
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
      flight = this.#obtain(key, subject.token, target, subjectExpiresAt).finally(() =>
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
        return this.exchangeFor({ token: subjectToken, exp: expOf(subjectToken) }, target, EXCHANGE)
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

  async #obtain(
    key: string,
    subjectToken: string,
    target: NormalizedTarget,
    subjectExpiresAt: number,
  ): Promise<Entry> {
    const shared = this.#shared
    const sharedKey = shared?.keyOf(key)
    if (shared !== undefined && sharedKey !== undefined) {
      try {
        const seen = await shared.read(sharedKey)
        if (seen !== undefined) {
          const entry = this.#entryOf(seen.token, subjectExpiresAt)
          if (this.settings.client.now() < entry.usableUntil) return this.#keep(key, entry)
        }
      } catch {
        // Redis down or slow: this instance asks the provider itself.
      }
    }
    const requestedAt = this.settings.client.now()
    const result = await this.#requestWithRetries(subjectToken, target)
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
      const now = this.settings.client.now()
      for (const [oldKey, old] of this.#entries) {
        if (old.usableUntil <= now) this.#entries.delete(oldKey)
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
  async #requestWithRetries(subjectToken: string, target: NormalizedTarget) {
    const { retry } = this.settings.client
    const { grantType, body } = exchangeBody(subjectToken, target, this.settings)
    for (let attempt = 1; ; attempt++) {
      if (this.#stopped.signal.aborted) throw this.#closed()
      try {
        return await this.#endpoint.extension(grantType, body)
      } catch (error) {
        const failure = this.#asExchangeFailure(error)
        if (!failure.retryable || attempt >= retry.attempts || this.#stopped.signal.aborted) {
          throw failure
        }
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

/** The cache key: never the subject token itself, its hash. */
function keyOf(subjectHash: string, target: NormalizedTarget): string {
  return JSON.stringify([
    subjectHash,
    target.resource,
    target.audience ?? '',
    target.scope ?? '',
    target.actorToken === undefined
      ? ''
      : createHash('sha256').update(target.actorToken).digest('base64url'),
    target.requestedTokenType ?? '',
  ])
}

function accessTokenOf(entry: Entry): string {
  return entry.accessToken
}

/**
 * The `exp` of a JWT subject token, read without verification: only to stop serving (and asking
 * for) exchanged tokens once the subject token has expired. `undefined` for an opaque token.
 */
export function expOf(token: string): number | undefined {
  const first = token.indexOf('.')
  const second = token.indexOf('.', first + 1)
  if (first < 1 || second < 0 || token.indexOf('.', second + 1) !== -1) return undefined
  try {
    const payload = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString())
    const exp = (payload as { exp?: unknown } | null)?.exp
    return typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined
  } catch {
    return undefined
  }
}
