/**
 * Options of DPoP (RFC 9449) at the resource server: their types, and their schema (defaults,
 * validation once at construction, the reference table).
 *
 * @module
 */
import { randomBytes } from 'node:crypto'

import { any, choice, custom, flag, group, int, type Normalized } from '../options-kit.js'
import { type SharedStore, sharedStoreOption } from '../shared-store.js'
import { isJWSAlgorithm, type JWSAlgorithm } from '../token/algorithms.js'
import { fail, integer, isRecord, record } from '../validate.js'

/**
 * `off`: `cnf`-bound tokens are refused, as by a gate without DPoP. `allowed`: bearer tokens and
 * DPoP-bound tokens (with their proof) are both accepted. `required`: only DPoP-bound tokens.
 */
export type DpopMode = 'off' | 'allowed' | 'required'

/**
 * The one Redis command the shared replay cache sends: `SET key value PX ms NX`, answered `'OK'`
 * when the key was set and `null` when it existed. An ioredis client (single server or Cluster)
 * fits as it is.
 */
export interface DpopRedisClientLike {
  set(key: string, value: string, expiry: 'PX', milliseconds: number, mode: 'NX'): Promise<unknown>
}

/** Where proof `jti`s are remembered, so that each proof is accepted once. */
export interface DpopReplayOptions {
  /**
   * `'memory'` (default): this process only. `{ redis }`: every instance sharing the Redis
   * refuses a proof another one accepted (load-balanced deployments need this). `{ shared }`:
   * the same through the application's {@link SharedStore} (`claimOnce`), where the runtime has
   * no socket for Redis (Workers).
   */
  readonly store?:
    | 'memory'
    | { readonly redis: DpopRedisClientLike }
    | { readonly shared: SharedStore }
  /** Prefix of the store's keys (Redis or `shared`). Default `'tollgate:dpop'`. */
  readonly keyPrefix?: string
  /**
   * Deadline for the store's answer (Redis or `shared`), in ms (1 to 10 000); past it the request
   * is answered 503. Default 50.
   */
  readonly storeTimeoutMs?: number
  /**
   * Most proofs remembered in memory (1 000 to 10 000 000). When that many unexpired proofs are
   * held, new ones are answered 503 rather than forgetting one early. Default 100 000. With the
   * Redis or `shared` store: the most proof keys whose `maxEntriesPerKey` count is held.
   */
  readonly maxEntries?: number
  /**
   * Most proofs of one key remembered in memory (100 to `maxEntries`): past it, that client's new
   * proofs are answered 503 until its old ones expire, and other clients are not affected.
   * Default: a tenth of `maxEntries`. With the Redis or `shared` store: the most claims of one key
   * this instance writes to the store in each proof window (`maxProofAgeSeconds` + 2 ×
   * `clockToleranceSeconds`); past it, that key's proofs are answered 503 (with `Retry-After` up
   * to the end of its window) before the store is called. The DPoP step runs before the rate
   * limit, so this is what bounds the writes of one bound token.
   */
  readonly maxEntriesPerKey?: number
}

/** Server-provided nonces (RFC 9449 §9). */
export interface DpopNonceOptions {
  /**
   * Secret (at least 32 characters) that makes nonces verifiable by every instance that shares
   * it. Default: random per gate, which suits a single instance.
   */
  readonly secret?: string
  /** A nonce is current for this long, and accepted one period more, in seconds (10 to 86 400). Default 300. */
  readonly lifetimeSeconds?: number
}

/** DPoP at the resource server (RFC 9449 §7). */
export interface DpopOptions {
  /** Which tokens and proofs are accepted (see {@link DpopMode}). Default `'off'`. */
  readonly mode?: DpopMode
  /** Proof algorithms accepted, asymmetric only. Default `['ES256', 'EdDSA', 'PS256', 'RS256']`. */
  readonly algorithms?: readonly JWSAlgorithm[]
  /** How long after its `iat` a proof is accepted, in seconds (1 to 600). Default 60. */
  readonly maxProofAgeSeconds?: number
  /**
   * The service's URL as clients see it (`https://api.example.com`, or with the path prefix a
   * proxy strips), against which each proof's `htu` is compared. Without it, the scheme comes from
   * the connection and the host from `Host` (or from `X-Forwarded-*` with `trustForwardedHeaders`),
   * which must then be one of `allowedHosts`. One of the two is required when DPoP is on.
   */
  readonly publicBaseUrl?: string
  /**
   * Without `publicBaseUrl`: the hosts (`api.example.com`, `127.0.0.1:3000`) this service answers
   * to. A request whose `Host` (or `X-Forwarded-Host`) is not one of them has no valid proof: the
   * host is the client's text, and a proof captured for another service would otherwise pass
   * here with that service's `Host`. A host without a port also stands for it on 80 and 443.
   */
  readonly allowedHosts?: readonly string[]
  /**
   * Take scheme and host from `X-Forwarded-Proto` and `X-Forwarded-Host`. Only behind a proxy that
   * always sets them: anyone can send these headers. Default false.
   */
  readonly trustForwardedHeaders?: boolean
  /** Where proof `jti`s are remembered, so that each proof is accepted once. */
  readonly replay?: DpopReplayOptions
  /** Require server nonces: `true` or options. Default off. */
  readonly nonce?: boolean | DpopNonceOptions
}

/** How the request's URL is known, for `htu`. */
export type TargetSource =
  | { readonly kind: 'base'; readonly origin: string; readonly pathPrefix: string }
  | { readonly kind: 'forwarded' | 'connection'; readonly hosts: ReadonlySet<string> }

const DEFAULT_PROOF_ALGORITHMS: readonly JWSAlgorithm[] = ['ES256', 'EdDSA', 'PS256', 'RS256']
const MIN_SECRET_LENGTH = 32

function proofAlgorithms(value: unknown): readonly JWSAlgorithm[] {
  if (value === undefined) return DEFAULT_PROOF_ALGORITHMS
  if (!Array.isArray(value) || value.length === 0) {
    fail('dpop.algorithms', 'must be a non-empty array of algorithm names', value)
  }
  for (const alg of value) {
    // RFC 9449 §4.2: an asymmetric algorithm; never `none` nor a MAC.
    if (!isJWSAlgorithm(alg)) {
      fail(
        'dpop.algorithms',
        'may only list RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA',
        alg,
        { show: true },
      )
    }
  }
  return Object.freeze([...new Set(value as JWSAlgorithm[])])
}

/** A `Host` header value: a DNS name, IPv4 or bracketed IPv6 address, and an optional port. */
const HOST = /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$/i

/** Lower-case `host[:port]` texts a `Host` header may carry for each allowed host. */
function allowedHostSet(value: unknown): ReadonlySet<string> {
  if (!Array.isArray(value) || value.length === 0) {
    fail('dpop.allowedHosts', 'must be a non-empty array of hosts (host or host:port)', value)
  }
  const hosts = new Set<string>()
  for (const host of value) {
    const match = typeof host === 'string' ? HOST.exec(host) : null
    if (match === null) {
      fail('dpop.allowedHosts', 'must list hosts as host or host:port', host, { show: 'url' })
    }
    const text = (host as string).toLowerCase()
    hosts.add(text)
    // Clients may send the default port of the scheme explicitly.
    if (match[1] === undefined) hosts.add(`${text}:80`).add(`${text}:443`)
  }
  return hosts
}

function targetSource(
  publicBaseUrl: unknown,
  allowedHosts: unknown,
  trustForwarded: boolean,
  on: boolean,
): TargetSource {
  if (publicBaseUrl === undefined) {
    // RFC 9449 §4.3 step 9 compares htu with the URL the request was sent to; Host is the client's
    // word for it, so it is accepted only from a list the operator wrote.
    if (allowedHosts === undefined && on) {
      fail(
        'dpop.publicBaseUrl',
        "or dpop.allowedHosts is required with DPoP on: otherwise the htu a proof must name comes from the client's Host header, and a proof captured for another service would be accepted here",
      )
    }
    const hosts = allowedHosts === undefined ? new Set<string>() : allowedHostSet(allowedHosts)
    return Object.freeze({ kind: trustForwarded ? 'forwarded' : 'connection', hosts })
  }
  if (allowedHosts !== undefined) {
    fail('dpop.allowedHosts', 'cannot be combined with dpop.publicBaseUrl (which names the host)')
  }
  if (trustForwarded) {
    fail('dpop.trustForwardedHeaders', 'cannot be combined with dpop.publicBaseUrl')
  }
  let url: URL | undefined
  try {
    url = typeof publicBaseUrl === 'string' ? new URL(publicBaseUrl) : undefined
  } catch {}
  if (
    url === undefined ||
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.username !== '' ||
    url.password !== '' ||
    url.search !== '' ||
    url.hash !== ''
  ) {
    fail(
      'dpop.publicBaseUrl',
      'must be an http(s) URL without credentials, query or fragment',
      publicBaseUrl,
      { show: 'url' },
    )
  }
  const pathPrefix = url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname
  return Object.freeze({ kind: 'base', origin: url.origin, pathPrefix })
}

function replayStore(value: unknown): {
  readonly redis: DpopRedisClientLike | undefined
  readonly shared: SharedStore | undefined
} {
  if (value === undefined || value === 'memory') return { redis: undefined, shared: undefined }
  const keys = isRecord(value) ? Object.keys(value) : []
  if (keys.length !== 1 || (keys[0] !== 'redis' && keys[0] !== 'shared')) {
    fail('dpop.replay.store', "must be 'memory', { redis: client } or { shared: store }", value)
  }
  const store = value as Record<string, unknown>
  if (keys[0] === 'shared') {
    return { redis: undefined, shared: sharedStoreOption(store, 'dpop.replay.store', 'claimOnce') }
  }
  const redis = store['redis']
  if (typeof (redis as Partial<DpopRedisClientLike> | undefined)?.set !== 'function') {
    fail('dpop.replay.store.redis', 'must be a Redis client with set() (ioredis)', redis)
  }
  return { redis: redis as DpopRedisClientLike, shared: undefined }
}

function nonceOptions(value: unknown) {
  if (value === undefined || value === false) return undefined
  const options = value === true ? {} : record(value, 'dpop.nonce', ['secret', 'lifetimeSeconds'])
  const { secret, lifetimeSeconds } = options as DpopNonceOptions
  if (secret !== undefined && (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH)) {
    fail(
      'dpop.nonce.secret',
      `must be a string of at least ${MIN_SECRET_LENGTH} characters`,
      secret,
    )
  }
  return Object.freeze({
    secret: secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8'),
    lifetimeSeconds: integer(lifetimeSeconds, 'dpop.nonce.lifetimeSeconds', {
      fallback: 300,
      min: 10,
      max: 86_400,
    }),
  })
}

const replaySchema = group<DpopReplayOptions>()(
  {
    store: custom(replayStore, {
      accepts: "'memory' | { redis } | { shared }",
      default: "'memory'",
    }),
    keyPrefix: custom(
      (value = 'tollgate:dpop', path) => {
        if (typeof value !== 'string' || value === '')
          fail(path, 'must be a non-empty string', value)
        return value
      },
      { accepts: 'non-empty string', default: "'tollgate:dpop'" },
    ),
    storeTimeoutMs: int({ min: 1, max: 10_000, fallback: 50 }),
    maxEntries: int({ min: 1000, max: 10_000_000, fallback: 100_000 }),
    maxEntriesPerKey: custom(
      (value, path, { maxEntries }) =>
        integer(value, path, {
          fallback: Math.ceil((maxEntries as number) / 10),
          min: 100,
          max: maxEntries as number,
        }),
      { accepts: 'integer 100–maxEntries', default: 'maxEntries / 10' },
    ),
  },
  {
    finish: ({ store, ...rest }) => Object.freeze({ ...store, ...rest }),
    doc: { type: 'DpopReplayOptions' },
  },
)

/** The schema of {@link DpopOptions}: rules, defaults and the reference table. */
export const dpopSchema = group<DpopOptions>()(
  {
    mode: choice(['off', 'allowed', 'required']),
    algorithms: custom((value) => proofAlgorithms(value), {
      accepts: 'asymmetric JWS algorithms',
      default: "['ES256', 'EdDSA', 'PS256', 'RS256']",
    }),
    maxProofAgeSeconds: int({ min: 1, max: 600, fallback: 60 }),
    publicBaseUrl: any<string>({ accepts: 'http(s) URL' }),
    allowedHosts: any<readonly string[]>({ accepts: 'host or host:port list' }),
    trustForwardedHeaders: flag(false),
    replay: replaySchema,
    nonce: custom((value) => nonceOptions(value), {
      accepts: 'boolean | { secret, lifetimeSeconds }',
      default: 'off',
    }),
  },
  {
    // Validated whatever the mode, so that turning DPoP on later cannot reveal a bad option.
    finish: ({ mode, publicBaseUrl, allowedHosts, trustForwardedHeaders, ...rest }) => {
      const target = targetSource(
        publicBaseUrl,
        allowedHosts,
        trustForwardedHeaders,
        mode !== 'off',
      )
      return mode === 'off' ? undefined : Object.freeze({ mode, ...rest, target })
    },
    absent: 'undefined',
  },
)

/** {@link DpopOptions} validated and completed; `undefined` in a gate when the mode is `off`. */
export type NormalizedDpopOptions = NonNullable<Normalized<typeof dpopSchema>>

/**
 * Validates {@link DpopOptions} once, at construction. `undefined` for mode `off` (the default).
 *
 * @throws TypeError naming the option, what it must be and a safe summary of what it got.
 */
export function normalizeDpopOptions(input: unknown): NormalizedDpopOptions | undefined {
  return dpopSchema.read(input, 'dpop', {})
}
