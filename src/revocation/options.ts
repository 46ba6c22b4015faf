/**
 * The `revocation` option: its types and its schema (every rule, default and message in one
 * place, and the reference table), so that the revocation list's hot path trusts what it receives.
 *
 * @module
 */
import { choice, custom, flag, fn, group, int, type Normalized } from '../options-kit.js'
import { fail, integer, isRecord, redisKeyPrefix } from '../validate.js'
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

function clientIdsOption(value: unknown, path: string): ReadonlySet<string> {
  const ids = typeof value === 'string' ? [value] : value
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.some((item) => typeof item !== 'string' || item === '' || item.length > 256)
  ) {
    fail(
      path,
      'must be the client id (or a non-empty array of client ids) the provider knows this gateway by',
      value,
    )
  }
  return new Set(ids as string[])
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

function reloadIntervalOption(value: unknown, path: string, siblings: Record<string, unknown>) {
  if (value === undefined) return undefined
  if (siblings['load'] === undefined) {
    fail(
      path,
      'needs "revocation.load": give the function that returns the revocations your application recorded, which is what is reloaded',
    )
  }
  if (siblings['store'] !== undefined) {
    // With Redis the list is shared and `load` already runs when Redis lost it; reloads on top
    // would add entries to this instance only, beside a list the others read from Redis.
    fail(
      path,
      'is for instances without a shared store: leave it out with "revocation.store": { redis } (every instance reads the list from Redis, and "load" runs again when Redis has lost it), or use the memory store',
      value,
    )
  }
  return integer(value, path, { min: 1000, max: 3_600_000 })
}

/** The schema of {@link RevocationOptions}: rules, defaults and the reference table. */
export const revocationSchema = group<RevocationOptions>()(
  {
    load: fn<RevocationLoader>(
      '() => Promise<targets> returning the revocations the application recorded',
    ),
    store: custom(storeOption, { accepts: "'memory' | { redis }", default: "'memory'" }),
    keyPrefix: custom((value, path) => redisKeyPrefix(value, path, 'tollgate:rv'), {
      accepts: 'Redis key prefix',
      default: "'tollgate:rv'",
    }),
    onStoreError: choice(['enforce-known', 'deny']),
    denyAfterMs: int({ min: 0, max: 600_000, fallback: 10_000 }),
    resyncIntervalMs: int({ min: 1000, max: 3_600_000, fallback: 60_000 }),
    storeTimeoutMs: int({ min: 1, max: 60_000, fallback: 1000 }),
    callbacks: group<RevocationCallbackOptions>()(
      {
        clientIds: custom(clientIdsOption, { accepts: 'string or strings', default: 'required' }),
        maxAgeSeconds: int({ min: 1, max: 3600, fallback: 120 }),
        requireExp: flag(true),
      },
      { absent: 'undefined', doc: { type: 'RevocationCallbackOptions' } },
    ),
    untilSynced: choice(['deny', 'enforce-known']),
    reloadIntervalMs: custom(reloadIntervalOption, {
      accepts: 'integer 1000–3 600 000',
      default: 'no reload',
    }),
  },
  { finish: ({ store, ...rest }) => Object.freeze({ redis: store, ...rest }), absent: 'required' },
)

/** {@link RevocationOptions} with every default filled in. */
export type NormalizedRevocationOptions = Normalized<typeof revocationSchema> & {
  /**
   * The gate's `maxTokenLifetimeSeconds` (86 400 unless set): tokens without `iat` or living
   * longer are refused while revocation is on, which is what lets an entry expire once no token
   * it matches can still be valid, `notBefore + maxTokenLifetimeSeconds + clockToleranceSeconds`
   * after it was made (a `jti` entry, which matches any `iat`, one `clockToleranceSeconds` more).
   */
  readonly maxTokenLifetimeSeconds: number
}

/**
 * Validates {@link RevocationOptions} once, at construction.
 *
 * @throws TypeError naming the option, what it must be and a safe summary of what it got.
 */
export function normalizeRevocationOptions(
  input: unknown,
  maxTokenLifetimeSeconds: number,
): NormalizedRevocationOptions {
  const options = revocationSchema.read(input, 'revocation', {})
  return Object.freeze({ ...options, maxTokenLifetimeSeconds })
}
