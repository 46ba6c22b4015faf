/**
 * Validation of the `revocation` option: every rule, default and message in one place, so that
 * the revocation list's hot path trusts what it receives.
 *
 * @module
 */
import {
  boolean,
  fail,
  integer,
  isRecord,
  oneOf,
  optionalFunction,
  record,
  redisKeyPrefix,
} from '../validate.js'
import type { RevokeOptions } from './target.js'

/**
 * The ioredis client (`new Redis(…)`) or Cluster client (`new Cluster(…)`) that shares the
 * revocation list. tollgate runs commands on it and subscribes on a `duplicate()` of it (a
 * connection in subscriber mode can run no other command); both are closed by `gate.close()`
 * (the duplicate) or left to the application (the client it passed).
 */
export interface RevocationRedisClient {
  readonly status: string
  duplicate(): unknown
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>
  /** ioredis's generic command (`CONFIG GET save`, to tell whether Redis persists anything). */
  call?(command: string, ...args: (string | number)[]): Promise<unknown>
}

/** While the Redis store cannot be reached. */
export type RevocationStoreFailurePolicy = 'enforce-known' | 'deny'

/** Until this instance holds the revocation list (first Redis synchronization, `load` done). */
export type RevocationUnsyncedPolicy = 'deny' | 'enforce-known'

/**
 * The application's own record of revocations: what `load` resolves to. Each item is a
 * `gate.revoke()` target; `sid`, `sub`, `clientId` and `all` items need the `notBefore` the
 * application recorded (without it, every token issued before this start would be refused).
 */
export type RevocationLoader = () => Promise<readonly RevokeOptions[]> | readonly RevokeOptions[]

/**
 * The endpoints an identity provider calls to revoke: OpenID Connect Back-Channel Logout 1.0
 * (`backchannelLogout()`) and Keycloak's admin "push not-before" (`keycloakPushNotBefore()`).
 */
export interface RevocationCallbackOptions {
  /**
   * The client id(s) this gateway is registered under at the provider: a logout token's `aud`, or
   * a Keycloak push's `resource`, must be one of them. Required.
   */
  readonly clientIds: string | readonly string[]
  /** Logout tokens issued longer ago than this are refused (the `iat` window), in seconds (1 to 3600). Default 120. */
  readonly maxAgeSeconds?: number
  /**
   * `true` (default): a logout token without `exp` is refused (`missing_exp`), as Back-Channel
   * Logout 1.0 final requires. `false`: one without `exp` is accepted while its `iat` lies within
   * `maxAgeSeconds` (providers built on earlier drafts, whose logout tokens carry no `exp`); its
   * `jti` is remembered for that window, so it is accepted once. A token with an `exp` is always
   * held to it.
   */
  readonly requireExp?: boolean
}

/** Revocation of tokens before their `exp`, shared by every gateway instance through Redis. */
export interface RevocationOptions {
  /** `'memory'` (default, this process only) or `{ redis }` (every instance on that Redis). */
  readonly store?: 'memory' | { readonly redis: RevocationRedisClient }
  /** Prefix of Redis keys and of the channel (`{<prefix>}:entries`, `<prefix>:events`). Default `'tollgate:rv'`. */
  readonly keyPrefix?: string
  /**
   * While Redis is unreachable: `'enforce-known'` (default) keeps deciding with the entries this
   * instance knows; `'deny'` does too for `denyAfterMs`, then answers 503
   * `ERR_REVOCATION_UNAVAILABLE` with `Retry-After` until the list is synchronized again.
   */
  readonly onStoreError?: RevocationStoreFailurePolicy
  /** With `onStoreError: 'deny'`: how long without synchronization before refusing, in ms (0 to 600 000). Default 10 000. */
  readonly denyAfterMs?: number
  /**
   * A catch-up from Redis's log of changes this often even while pub/sub is healthy (it reads
   * only the changes not applied yet; a full reload, in pages, only when the log cannot answer),
   * and a few steps of the sweep of expired entries the instances share, in ms (1000 to
   * 3 600 000). Default 60 000.
   */
  readonly resyncIntervalMs?: number
  /**
   * Deadline of one Redis command (revoke, catch-up, page of a load, lookup, replay check), and
   * the longest a request waits at start-up for its token to become decidable, in ms (1 to
   * 60 000). Default 1000.
   */
  readonly storeTimeoutMs?: number
  /** Accept revocations from the identity provider (back-channel logout, Keycloak push). Default: off. */
  readonly callbacks?: RevocationCallbackOptions
  /**
   * What a request gets before this instance holds the revocation list (its first
   * synchronization with Redis, and `load` when given). Such a request first waits, at most
   * `storeTimeoutMs`, for the list or (Redis) for the first load to begin, after which its token
   * is looked up in Redis directly while the list loads; if it still cannot be decided (Redis did
   * not answer): `'deny'` (default) answers 503
   * `ERR_REVOCATION_UNAVAILABLE` with `Retry-After: 1`; `'enforce-known'` decides with what this
   * instance knows (its own revocations, and `load`'s once it resolved): a token revoked
   * elsewhere may be admitted.
   */
  readonly untilSynced?: RevocationUnsyncedPolicy
  /**
   * Reloads revocations from the application's own records: called when the gate starts and
   * again when the Redis store is found to have lost its data (a new epoch), until it resolves
   * (retried after a failure). Entries Redis lacks are written back to it, so every instance has
   * them. The list is not held until it resolved once. Use it when Redis persists nothing: a
   * restart of Redis and every instance otherwise forgets every revocation.
   */
  readonly load?: RevocationLoader
  /**
   * With `load`: calls it again once this long has passed since the last call, in ms (1000 to
   * 3 600 000), and adds what it returns (an entry already held keeps the later `notBefore` and
   * expiry; nothing is removed). The first request with a token after the interval starts the
   * reload, and it and the requests arriving meanwhile wait for it, at most `storeTimeoutMs`
   * (no timer: a Workers timer does not outlive its request). A failing reload keeps the entries
   * held and emits `revocation_load_failed` (`trigger: 'reload'`). This is how instances without
   * a shared store (Workers isolates) learn of revocations made elsewhere: record each one in the
   * application's own store, and every instance enforces it from its first request after the
   * interval. Memory store only (refused with `{ redis }`, whose list every instance shares).
   * Default: no reload.
   */
  readonly reloadIntervalMs?: number
}

/** {@link RevocationOptions} with every default filled in. */
export interface NormalizedRevocationOptions {
  readonly redis: RevocationRedisClient | undefined
  /**
   * The gate's `maxTokenLifetimeSeconds` (86 400 unless set): tokens without `iat` or living
   * longer are refused while revocation is on, which is what lets an entry expire once no token
   * it matches can still be valid, `notBefore + maxTokenLifetimeSeconds + clockToleranceSeconds`
   * after it was made (a `jti` entry, which matches any `iat`, one `clockToleranceSeconds` more).
   */
  readonly maxTokenLifetimeSeconds: number
  readonly keyPrefix: string
  readonly onStoreError: RevocationStoreFailurePolicy
  readonly denyAfterMs: number
  readonly resyncIntervalMs: number
  readonly storeTimeoutMs: number
  readonly callbacks:
    | {
        readonly clientIds: ReadonlySet<string>
        readonly maxAgeSeconds: number
        readonly requireExp: boolean
      }
    | undefined
  readonly untilSynced: RevocationUnsyncedPolicy
  readonly load: RevocationLoader | undefined
  /** With `load`: how often it is called again, in ms; `undefined` for never. */
  readonly reloadIntervalMs: number | undefined
}

const OPTION_KEYS = [
  'store',
  'keyPrefix',
  'onStoreError',
  'denyAfterMs',
  'resyncIntervalMs',
  'storeTimeoutMs',
  'callbacks',
  'untilSynced',
  'load',
  'reloadIntervalMs',
]
const CALLBACK_KEYS = ['clientIds', 'maxAgeSeconds', 'requireExp']

/**
 * Validates {@link RevocationOptions} once, at construction.
 *
 * @throws TypeError naming the option, what it must be and a safe summary of what it got.
 */
export function normalizeRevocationOptions(
  input: unknown,
  maxTokenLifetimeSeconds: number,
): NormalizedRevocationOptions {
  const options = record(input, 'revocation', OPTION_KEYS) as RevocationOptions
  const load = optionalFunction<RevocationLoader>(
    options.load,
    'revocation.load',
    '() => Promise<targets> returning the revocations the application recorded',
  )
  if (options.reloadIntervalMs !== undefined && load === undefined) {
    fail(
      'revocation.reloadIntervalMs',
      'needs "revocation.load": give the function that returns the revocations your application recorded, which is what is reloaded',
    )
  }
  const redis = storeOption(options.store)
  if (options.reloadIntervalMs !== undefined && redis !== undefined) {
    // With Redis the list is shared and `load` already runs when Redis lost it; reloads on top
    // would add entries to this instance only, beside a list the others read from Redis.
    fail(
      'revocation.reloadIntervalMs',
      'is for instances without a shared store: leave it out with "revocation.store": { redis } (every instance reads the list from Redis, and "load" runs again when Redis has lost it), or use the memory store',
      options.reloadIntervalMs,
    )
  }
  return Object.freeze({
    redis,
    maxTokenLifetimeSeconds,
    keyPrefix: redisKeyPrefix(options.keyPrefix, 'revocation.keyPrefix', 'tollgate:rv'),
    onStoreError: oneOf(options.onStoreError, 'revocation.onStoreError', [
      'enforce-known',
      'deny',
    ] as const),
    denyAfterMs: integer(options.denyAfterMs, 'revocation.denyAfterMs', {
      fallback: 10_000,
      min: 0,
      max: 600_000,
    }),
    resyncIntervalMs: integer(options.resyncIntervalMs, 'revocation.resyncIntervalMs', {
      fallback: 60_000,
      min: 1000,
      max: 3_600_000,
    }),
    storeTimeoutMs: integer(options.storeTimeoutMs, 'revocation.storeTimeoutMs', {
      fallback: 1000,
      min: 1,
      max: 60_000,
    }),
    callbacks: options.callbacks === undefined ? undefined : callbacksOption(options.callbacks),
    untilSynced: oneOf(options.untilSynced, 'revocation.untilSynced', [
      'deny',
      'enforce-known',
    ] as const),
    load,
    reloadIntervalMs:
      options.reloadIntervalMs === undefined
        ? undefined
        : integer(options.reloadIntervalMs, 'revocation.reloadIntervalMs', {
            min: 1000,
            max: 3_600_000,
          }),
  })
}

function callbacksOption(value: unknown): NormalizedRevocationOptions['callbacks'] {
  const callbacks = record(value, 'revocation.callbacks', CALLBACK_KEYS)
  const ids = typeof callbacks.clientIds === 'string' ? [callbacks.clientIds] : callbacks.clientIds
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.some((item) => typeof item !== 'string' || item === '' || item.length > 256)
  ) {
    fail(
      'revocation.callbacks.clientIds',
      'must be the client id (or a non-empty array of client ids) the provider knows this gateway by',
      callbacks.clientIds,
    )
  }
  return Object.freeze({
    clientIds: new Set(ids as string[]),
    maxAgeSeconds: integer(callbacks.maxAgeSeconds, 'revocation.callbacks.maxAgeSeconds', {
      fallback: 120,
      min: 1,
      max: 3600,
    }),
    requireExp: boolean(callbacks.requireExp, 'revocation.callbacks.requireExp', true),
  })
}

function storeOption(value: unknown): RevocationRedisClient | undefined {
  if (value === undefined || value === 'memory') return undefined
  if (!isRecord(value) || Object.keys(value).some((key) => key !== 'redis')) {
    fail('revocation.store', "must be 'memory' or { redis: client }", value)
  }
  const client = value['redis']
  if (
    !isRecord(client) ||
    typeof client['duplicate'] !== 'function' ||
    typeof client['eval'] !== 'function' ||
    typeof client['status'] !== 'string'
  ) {
    fail(
      'revocation.store.redis',
      'must be an ioredis Redis or Cluster client (node-redis clients are not supported)',
      client,
    )
  }
  return client as unknown as RevocationRedisClient
}
