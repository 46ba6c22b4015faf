/**
 * Options of Token Status List checks (draft-ietf-oauth-status-list) at the resource server:
 * their type, defaults and validation, once, at construction, with the one option kit.
 *
 * @module
 */
import { httpsUrlProblem } from '../token/issuers.js'
import {
  boolean,
  fail,
  integer,
  optionalFunction,
  record,
  redisKeyPrefix,
  redisStoreOption,
} from '../validate.js'

/**
 * The one Redis command the shared lists send: `EVAL` of tollgate's scripts, every key of one
 * call in one Cluster slot. An ioredis client (`new Redis(…)` or `new Cluster(…)`, the one given
 * to the limiter or the revocation store) fits as it is.
 */
export interface StatusListRedisClient {
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>
}

/**
 * Checks of the `status` claim (Token Status List, draft-ietf-oauth-status-list): a token whose
 * `status.status_list` names a list and an index is admitted only while the issuer's list says
 * VALID at that index. The list is fetched from its `uri`, verified with the token issuer's own
 * keys, and cached; see docs/security.md.
 */
export interface StatusListOptions {
  /**
   * `true` refuses tokens that carry no `status_list` reference (401, reason `status_missing`).
   * Default `false`: such tokens are admitted as before.
   */
  readonly required?: boolean
  /**
   * URL prefixes a list may be fetched from, besides the default: the origin of the token's
   * issuer (`https://idp.example/realms/acme` allows `https://idp.example/…`). A token naming a
   * list elsewhere is refused (reason `status_list_uri`) and nothing is fetched. Each https, or
   * http to loopback.
   */
  readonly allowedUriPrefixes?: readonly string[]
  /**
   * Shortest time a list is kept before it is fetched again, whatever its `ttl` says, in seconds
   * (1–3 600, default 10): a list with `ttl: 0` does not make every request a fetch.
   */
  readonly minCacheSeconds?: number
  /**
   * Longest time a list is kept, in seconds (1–86 400, default 300): the list's own `ttl` is used
   * when shorter, and a list is never kept past its `exp`. This bounds how late a revocation is
   * seen.
   */
  readonly maxCacheSeconds?: number
  /**
   * How long past its time the last good list still decides when fetching it again fails, in
   * seconds (0–86 400, default 0: a token whose list cannot be had is answered 503 with
   * `Retry-After`, never admitted unchecked).
   */
  readonly staleIfErrorSeconds?: number
  /** Deadline of one list fetch, headers and body, in milliseconds (100–60 000, default 5 000). */
  readonly timeoutMs?: number
  /** Largest Status List Token read, in bytes (1 024–16 777 216, default 1 048 576). */
  readonly maxListTokenBytes?: number
  /**
   * Largest list once decompressed, in bytes (1–268 435 456, default 16 777 216: 134 million
   * 1-bit statuses). A larger one is refused, and decompression stops there.
   */
  readonly maxListBytes?: number
  /** Most lists held at once, least recently used first out (1–100 000, default 1 000). */
  readonly maxLists?: number
  /** The `fetch` lists are fetched with (default the global one). */
  readonly fetch?: typeof globalThis.fetch
  /**
   * Where lists are shared: `'memory'` (default), each instance fetches each list itself;
   * `{ redis }`, the instances sharing the Redis fetch each list once per refresh: one fetches
   * it under a short lock and stores the Status List Token as fetched, for as long as it keeps
   * it; the others take it from Redis and verify it with the issuer's keys, as if they had
   * fetched it. Redis is not the issuer: a list from it that fails a check is ignored (event
   * `status_list_failed` with `from: 'store'`) and fetched from the issuer. A Redis that fails or
   * answers late is passed by (event `status_list_store_error`): lists are then fetched
   * directly, and a request is never answered 503 because of Redis alone. A request whose list
   * is held never calls Redis.
   */
  readonly store?: 'memory' | { readonly redis: StatusListRedisClient }
  /** Prefix of the Redis keys. Default `'tollgate:status'`. */
  readonly keyPrefix?: string
  /**
   * Deadline of one Redis call, in ms (1–10 000, default 250). Past it, or when Redis fails, the
   * list is fetched directly, and Redis is left alone for 5 s.
   */
  readonly storeTimeoutMs?: number
}

/** {@link StatusListOptions} validated, every default filled in. */
export interface NormalizedStatusListOptions {
  readonly required: boolean
  readonly allowedUriPrefixes: readonly string[]
  readonly minCacheSeconds: number
  readonly maxCacheSeconds: number
  readonly staleIfErrorSeconds: number
  readonly timeoutMs: number
  readonly maxListTokenBytes: number
  readonly maxListBytes: number
  readonly maxLists: number
  readonly fetch: typeof globalThis.fetch
  /** `undefined` with the `'memory'` store. */
  readonly redis: StatusListRedisClient | undefined
  readonly keyPrefix: string
  readonly storeTimeoutMs: number
}

const KEYS = [
  'required',
  'allowedUriPrefixes',
  'minCacheSeconds',
  'maxCacheSeconds',
  'staleIfErrorSeconds',
  'timeoutMs',
  'maxListTokenBytes',
  'maxListBytes',
  'maxLists',
  'fetch',
  'store',
  'keyPrefix',
  'storeTimeoutMs',
]

/**
 * How long a list is kept once verified, in seconds: its `ttl` clamped by `minCacheSeconds` and
 * `maxCacheSeconds`, or `maxCacheSeconds` without one (its `exp` bounds it further).
 */
export function keepSeconds(
  options: Pick<NormalizedStatusListOptions, 'minCacheSeconds' | 'maxCacheSeconds'>,
  ttl: number | undefined,
): number {
  const { minCacheSeconds, maxCacheSeconds } = options
  return Math.min(maxCacheSeconds, Math.max(minCacheSeconds, ttl ?? maxCacheSeconds))
}

/** Validates `statusList`; `undefined` when it is absent. */
export function normalizeStatusListOptions(
  input: unknown,
): NormalizedStatusListOptions | undefined {
  if (input === undefined) return undefined
  const options = record(input, 'statusList', KEYS) as StatusListOptions
  const prefixes = options.allowedUriPrefixes ?? []
  if (!Array.isArray(prefixes) || prefixes.length > 100) {
    fail('statusList.allowedUriPrefixes', 'must be an array of at most 100 URL prefixes', prefixes)
  }
  for (const [index, prefix] of prefixes.entries()) {
    const path = `statusList.allowedUriPrefixes[${index}]`
    if (typeof prefix !== 'string')
      fail(path, 'must be a URL prefix such as https://idp.example/', prefix)
    const problem = httpsUrlProblem(prefix, false, 'must be https (plain http only to loopback)')
    if (problem !== undefined) fail(path, problem, prefix, { show: 'url' })
    if (!/^https?:\/\/[^/]+\//.test(prefix)) {
      fail(
        path,
        'must end its host with a / (https://idp.example/), so that it names a host, not a prefix of one',
        prefix,
        { show: 'url' },
      )
    }
  }
  const minCacheSeconds = integer(options.minCacheSeconds, 'statusList.minCacheSeconds', {
    min: 1,
    max: 3_600,
    fallback: 10,
  })
  const maxCacheSeconds = integer(options.maxCacheSeconds, 'statusList.maxCacheSeconds', {
    min: 1,
    max: 86_400,
    fallback: 300,
  })
  if (maxCacheSeconds < minCacheSeconds) {
    fail(
      'statusList.maxCacheSeconds',
      `must be at least minCacheSeconds (${minCacheSeconds})`,
      maxCacheSeconds,
    )
  }
  return Object.freeze({
    required: boolean(options.required, 'statusList.required', false),
    allowedUriPrefixes: Object.freeze([...prefixes]),
    minCacheSeconds,
    maxCacheSeconds,
    staleIfErrorSeconds: integer(options.staleIfErrorSeconds, 'statusList.staleIfErrorSeconds', {
      min: 0,
      max: 86_400,
      fallback: 0,
    }),
    timeoutMs: integer(options.timeoutMs, 'statusList.timeoutMs', {
      min: 100,
      max: 60_000,
      fallback: 5_000,
    }),
    maxListTokenBytes: integer(options.maxListTokenBytes, 'statusList.maxListTokenBytes', {
      min: 1_024,
      max: 16_777_216,
      fallback: 1_048_576,
    }),
    maxListBytes: integer(options.maxListBytes, 'statusList.maxListBytes', {
      min: 1,
      max: 268_435_456,
      fallback: 16_777_216,
    }),
    maxLists: integer(options.maxLists, 'statusList.maxLists', {
      min: 1,
      max: 100_000,
      fallback: 1_000,
    }),
    fetch:
      optionalFunction<typeof globalThis.fetch>(
        options.fetch,
        'statusList.fetch',
        '(url, init) => Promise<Response>',
      ) ?? globalThis.fetch,
    redis: redisStoreOption<StatusListRedisClient>(options.store, 'statusList.store'),
    keyPrefix: redisKeyPrefix(options.keyPrefix, 'statusList.keyPrefix', 'tollgate:status'),
    storeTimeoutMs: integer(options.storeTimeoutMs, 'statusList.storeTimeoutMs', {
      min: 1,
      max: 10_000,
      fallback: 250,
    }),
  })
}
