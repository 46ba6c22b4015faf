/**
 * The rate-limit options: their types and their schema (every rule, default and message in one
 * place, and the reference table), so that the limiter's hot path trusts what it receives.
 *
 * @module
 */

import { any, choice, custom, fn, group, int, type Normalized } from '../options-kit.js'
import { type SharedStore, sharedStoreOption } from '../shared-store.js'
import type { RequestLike } from '../types.js'
import { fail, integer, isRecord, record, redisKeyPrefix, summarize } from '../validate.js'
import type { FlexibleLimiterFactory, FlexibleLimiterLike } from './flexible.js'
import type { RateLimitHeaderMode } from './headers.js'
import { PLAN_NAME_PATTERN, type VerifiedToken } from './tenant.js'

/** A fixed window: at most `points` per `durationSeconds`. */
export interface RateLimitWindow {
  /** Points admitted per window; an integer ≥ 1. */
  readonly points: number
  /** Window length in whole seconds, 1 to 31 622 400 (366 days). */
  readonly durationSeconds: number
  /**
   * Item name in the `RateLimit-Policy` / `RateLimit` fields and in `rate_limited` events
   * ({@link PLAN_NAME_PATTERN}). Default: the plan name for a plan with a single window,
   * else `<plan>-<durationSeconds>s` (`default-1s`, `default-60s`).
   */
  readonly name?: string
}

/**
 * The ioredis client (`new Redis(…)`) or Cluster client (`new Cluster(…)`) the limiter uses.
 * tollgate sends nothing while `status` is not `'ready'` (so the client's offline queue never
 * holds a limiter command), bounds each request with {@link RateLimitOptions.storeTimeoutMs},
 * and its script counts nothing when Redis runs it after that deadline (a command resent after a
 * reconnect, or read by a server that was stalled). It listens for the client's `close` event to
 * fail the requests in flight at once. A client with ioredis's `commandTimeout` or
 * `socketTimeout` is refused at creation: either gives up on a command Redis has counted when
 * this process's event loop stalls past it.
 */
export interface RedisClientLike {
  readonly status: string
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void
  multi(): unknown
  on(event: 'close', listener: () => void): unknown
}

/** The points a request costs; an integer ≥ 1. Errors it throws reach the application. */
export type RateLimitCost = (request: RequestLike, verified: VerifiedToken) => number

/** What happens to requests while the store fails or does not answer in time. */
export type StoreFailurePolicy = 'memory' | 'allow' | 'deny'

/** Per-tenant limits. Give either `windows` (a single plan) or `plans`. */
export interface RateLimitOptions {
  /** The windows of the only plan, named `defaultPlan`. Every window must admit a request. */
  readonly windows?: readonly RateLimitWindow[]
  /** Windows by plan name ({@link PLAN_NAME_PATTERN}), 1 to 8 windows each, distinct durations. */
  readonly plans?: Readonly<Record<string, readonly RateLimitWindow[]>>
  /** The plan of tenants with no plan or an unknown one. Default `'default'`. */
  readonly defaultPlan?: string
  /**
   * Plans pinned by tenant id. Wins over the plan the tenant resolver gives (policy or claim),
   * which wins over `defaultPlan`. Every value must name a configured plan.
   */
  readonly tenantPlans?: Readonly<Record<string, string>> | ReadonlyMap<string, string>
  /**
   * Points a request costs. Default: 1. A cost above the points of the plan's smallest window can
   * never be admitted: it is refused before any store is asked, with 403
   * `ERR_COST_EXCEEDS_LIMIT` (see `docs/stores.md`, "Request cost").
   */
  readonly cost?: RateLimitCost
  /**
   * `'memory'` (default, this process only), `{ redis }` (tollgate's own script, shared by every
   * process), or `{ flexible }`: a factory of rate-limiter-flexible limiters, one per window of
   * every plan, on whatever store the deployment runs (Postgres, Memcached, a Node cluster, …),
   * or `{ shared }`: the application's {@link SharedStore}, one `increment` per window, reached
   * however the runtime allows (HTTP, a Durable Object, … where there is no socket for Redis).
   * See `docs/stores.md`.
   */
  readonly store?:
    | 'memory'
    | { readonly redis: RedisClientLike }
    | { readonly flexible: FlexibleLimiterFactory }
    | { readonly shared: SharedStore }
  /**
   * Prefix of Redis keys (`<prefix>:{<tenant>}:<plan>:<seconds>`, the keys a `shared` store is
   * asked to increment too), and the `keyPrefix` a `flexible` factory is given. Default
   * `'tollgate:rl'`.
   */
  readonly keyPrefix?: string
  /**
   * Deadline for the store's answer to one request (every window of its plan), in ms (1 to
   * 10 000). Default 50. Redis counts nothing it runs after it; a `flexible` or `shared` store
   * still counts a command that answers late (see `docs/stores.md`).
   */
  readonly storeTimeoutMs?: number
  /**
   * After a store failure, requests skip the store for this long (ms, 0 to 600 000), then one
   * request probes it. Requests that arrive while the probe is in flight wait for its answer (at
   * most one `storeTimeoutMs`): a successful probe sends them, and everyone after, to the store;
   * a failed one sends them to the fallback. Default 1000.
   */
  readonly storeRetryIntervalMs?: number
  /**
   * While the store fails: `'memory'` (default) applies the same windows in this process's
   * memory; `'allow'` admits; `'deny'` answers 503 `ERR_LIMITER_UNAVAILABLE` with `Retry-After`.
   * A store failure is never a 429.
   */
  readonly onStoreError?: StoreFailurePolicy
  /**
   * With `onStoreError: 'memory'`, each process admits `ceil(points / divisor)` per window while
   * the store fails, so that the processes together stay near the configured limit. `'auto'`
   * (default): the number of limiter instances (same Redis, same `keyPrefix`) that used the
   * store in the last 10 s, as this instance last learned it (1 until it has; always 1 with a
   * `flexible` or `shared` store, which keeps no such list: set a number there). A whole number
   * (1 to 10 000): that divisor, for example the number of gateway processes.
   */
  readonly fallbackDivisor?: number | 'auto'
  /** `'draft-10'` (default), `'legacy'` (`X-RateLimit-*`), `'both'`, or `false` for none. */
  readonly headers?: RateLimitHeaderMode
  /**
   * Tenants this process keeps in memory, per window of each plan (1 to 100,000,000; default
   * 1,000,000, about 100 bytes a tenant): the windows of the memory store and of the fallback,
   * and the tenants a shared store said are spent. A window is forgotten once it ends, without a
   * timer. With this many windows that have not ended, a tenant with none is answered 503
   * `ERR_LIMITER_UNAVAILABLE` (`Retry-After`: when the oldest ends) instead of being counted from
   * zero: a window is never forgotten before it ends, so no tenant is admitted more than its
   * points within one. The memory of spent tenants forgets the oldest instead (the store still
   * counts them). See `docs/operating.md`, "Limiter memory".
   */
  readonly maxTenants?: number
}

const WINDOW_KEYS = ['points', 'durationSeconds', 'name']

/** Default of {@link RateLimitOptions.maxTenants}. */
export const DEFAULT_MAX_TENANTS = 1_000_000

/** The schema of {@link RateLimitOptions}: rules, defaults and the reference table. */
export const rateLimitSchema = group<RateLimitOptions>()(
  {
    windows: any<readonly RateLimitWindow[]>({ accepts: '[{ points, durationSeconds, name? }]' }),
    plans: any<Record<string, readonly RateLimitWindow[]>>({ accepts: '{ [plan]: windows }' }),
    defaultPlan: custom(
      (value = 'default', path) => {
        if (typeof value !== 'string' || !PLAN_NAME_PATTERN.test(value)) {
          fail(path, `must be a plan name matching ${PLAN_NAME_PATTERN}`, value)
        }
        return value
      },
      { accepts: 'plan name', default: "'default'" },
    ),
    tenantPlans: any<RateLimitOptions['tenantPlans']>({ accepts: '{ [tenantId]: plan } or a Map' }),
    cost: fn<RateLimitCost>('(request, verified) => points', '1 point'),
    store: custom(storeOption, {
      accepts: "'memory' | { redis } | { flexible } | { shared }",
      default: "'memory'",
    }),
    keyPrefix: custom((value, path) => redisKeyPrefix(value, path, 'tollgate:rl'), {
      accepts: 'Redis key prefix',
      default: "'tollgate:rl'",
    }),
    storeTimeoutMs: int({ min: 1, max: 10_000, fallback: 50 }),
    storeRetryIntervalMs: int({ min: 0, max: 600_000, fallback: 1000 }),
    onStoreError: choice(['memory', 'allow', 'deny']),
    fallbackDivisor: custom(fallbackDivisorOption, {
      accepts: "'auto' | integer 1–10 000",
      default: "'auto'",
    }),
    headers: choice(['draft-10', 'legacy', 'both', false]),
    maxTenants: int({ min: 1, max: 100_000_000, fallback: DEFAULT_MAX_TENANTS }),
  },
  {
    absent: 'required',
    before: (input) => {
      if ((input['windows'] === undefined) === (input['plans'] === undefined)) {
        fail('rateLimit', 'needs exactly one of "windows" (a single plan) or "plans"')
      }
      return undefined
    },
    finish: ({ windows, plans: byName, tenantPlans, store, ...rest }) => {
      const plans = plansOption(windows, byName, rest.defaultPlan)
      return Object.freeze({
        ...rest,
        plans,
        tenantPlans: tenantPlansOption(tenantPlans, plans),
        redis: store?.kind === 'redis' ? store.client : undefined,
        flexible:
          store?.kind === 'flexible'
            ? flexibleLimiters(store.factory, plans, rest.keyPrefix)
            : undefined,
        shared: store?.kind === 'shared' ? store.store : undefined,
      })
    },
  },
)

/** {@link RateLimitOptions} with every default filled in; plans keyed by name in a Map. */
export type NormalizedRateLimitOptions = Normalized<typeof rateLimitSchema>

/**
 * Validates {@link RateLimitOptions} once, at construction.
 *
 * @throws TypeError naming the option, what it must be and a safe summary of what it got.
 */
export function normalizeRateLimitOptions(input: unknown): NormalizedRateLimitOptions {
  return rateLimitSchema.read(input, 'rateLimit', {})
}

function plansOption(
  windows: unknown,
  byName: unknown,
  defaultPlan: string,
): ReadonlyMap<string, readonly RateLimitWindow[]> {
  const plans = new Map<string, readonly RateLimitWindow[]>()
  if (windows !== undefined) {
    plans.set(defaultPlan, windowsOption(windows, 'rateLimit.windows'))
    return plans
  }
  if (!isRecord(byName) || Object.keys(byName).length === 0) {
    fail(
      'rateLimit.plans',
      'must be an object of plan name → windows, with at least one plan',
      byName,
    )
  }
  for (const [name, list] of Object.entries(byName)) {
    if (!PLAN_NAME_PATTERN.test(name)) {
      fail('rateLimit.plans', `keys must be plan names matching ${PLAN_NAME_PATTERN}`, name)
    }
    plans.set(name, windowsOption(list, `rateLimit.plans.${name}`))
  }
  if (!plans.has(defaultPlan)) {
    fail('rateLimit.defaultPlan', `must name one of the plans (${[...plans.keys()].join(', ')})`)
  }
  return plans
}

function windowsOption(value: unknown, path: string): readonly RateLimitWindow[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 8) {
    fail(path, 'must be an array of 1 to 8 windows', value)
  }
  const windows = value.map((window: unknown, index): RateLimitWindow => {
    const at = `${path}[${index}]`
    const { points, durationSeconds, name } = record(window, at, WINDOW_KEYS)
    if (name !== undefined && (typeof name !== 'string' || !PLAN_NAME_PATTERN.test(name))) {
      fail(`${at}.name`, `must match ${PLAN_NAME_PATTERN}`, name)
    }
    return {
      points: integer(points, `${at}.points`, { min: 1, max: Number.MAX_SAFE_INTEGER }),
      // Whole seconds: the Redis keys name the window by its seconds and expire with `EX`, and the
      // RateLimit header fields (draft-10) count in seconds.
      durationSeconds: integer(durationSeconds, `${at}.durationSeconds`, {
        min: 1,
        max: 31_622_400,
      }),
      ...(name === undefined ? {} : { name }),
    }
  })
  const durations = new Set(windows.map((window) => window.durationSeconds))
  if (durations.size !== windows.length) {
    fail(path, 'has two windows with the same durationSeconds; merge them')
  }
  const names = windows.map((window) => window.name).filter((name) => name !== undefined)
  if (new Set(names).size !== names.length) {
    fail(path, 'has two windows with the same name; rename one')
  }
  return Object.freeze(windows.sort((a, b) => a.durationSeconds - b.durationSeconds))
}

function tenantPlansOption(
  value: unknown,
  plans: ReadonlyMap<string, unknown>,
): ReadonlyMap<string, string> {
  const map = new Map<string, string>()
  if (value === undefined) return map
  const entries =
    value instanceof Map
      ? [...value.entries()]
      : isRecord(value)
        ? Object.entries(value)
        : undefined
  if (entries === undefined) {
    fail('rateLimit.tenantPlans', 'must be an object or a Map of tenant id → plan name', value)
  }
  for (const [tenant, plan] of entries) {
    if (typeof tenant !== 'string' || typeof plan !== 'string' || !plans.has(plan)) {
      fail(
        'rateLimit.tenantPlans',
        `values must name one of the plans (${[...plans.keys()].join(', ')})`,
        plan,
      )
    }
    map.set(tenant, plan)
  }
  return map
}

function fallbackDivisorOption(value: unknown): number | 'auto' {
  if (value === undefined || value === 'auto') return 'auto'
  if (typeof value !== 'number') {
    fail('rateLimit.fallbackDivisor', "must be 'auto' or a whole number from 1 to 10000", value)
  }
  return integer(value, 'rateLimit.fallbackDivisor', { min: 1, max: 10_000 })
}

type StoreChoice =
  | { readonly kind: 'redis'; readonly client: RedisClientLike }
  | { readonly kind: 'flexible'; readonly factory: FlexibleLimiterFactory }
  | { readonly kind: 'shared'; readonly store: SharedStore }

function storeOption(value: unknown): StoreChoice | undefined {
  if (value === undefined || value === 'memory') return undefined
  const keys = isRecord(value) ? Object.keys(value) : []
  const kind = keys[0]
  if (keys.length !== 1 || (kind !== 'redis' && kind !== 'flexible' && kind !== 'shared')) {
    fail(
      'rateLimit.store',
      "must be 'memory', { redis: client }, { flexible: (window) => limiter } or { shared: store }",
      value,
    )
  }
  const store = value as Record<string, unknown>
  if (kind === 'shared') {
    return { kind, store: sharedStoreOption(store, 'rateLimit.store', 'increment') }
  }
  if (kind === 'flexible') {
    const factory = store['flexible']
    if (typeof factory !== 'function') {
      fail(
        'rateLimit.store.flexible',
        'must be a function (window) => a rate-limiter-flexible limiter',
        factory,
      )
    }
    return { kind, factory: factory as FlexibleLimiterFactory }
  }
  const client = store['redis']
  if (
    !isRecord(client) ||
    typeof client['defineCommand'] !== 'function' ||
    typeof client['multi'] !== 'function' ||
    typeof client['on'] !== 'function' ||
    typeof client['status'] !== 'string'
  ) {
    fail(
      'rateLimit.store.redis',
      'must be an ioredis Redis or Cluster client (node-redis clients are not supported)',
      client,
    )
  }
  for (const option of PRE_EMPTING_CLIENT_OPTIONS) {
    const found = clientOption(client, option)
    if (found === undefined) continue
    const [where, value] = found
    fail(
      'rateLimit.store.redis',
      `must be a client without ioredis's "${option}" (got ${where}${option}: ${value}). After ` +
        'an event-loop stall longer than it, ioredis gives up on a limiter command that Redis has ' +
        'already counted, and the fallback decides the request a second time; ' +
        '"rateLimit.storeTimeoutMs" already bounds every limiter request. To keep it for your ' +
        'other commands, give the limiter its own client: ' +
        (where === ''
          ? `redis.duplicate({ ${option}: undefined })`
          : `a second Cluster whose redisOptions leave out ${option}`),
    )
  }
  return { kind: 'redis', client: client as unknown as RedisClientLike }
}

/**
 * Calls the factory once per window of every plan, and checks that each limiter counts that
 * window: a limiter with other `points` or `duration` would refuse at a limit the
 * `RateLimit-Policy` field does not announce.
 */
function flexibleLimiters(
  factory: FlexibleLimiterFactory,
  plans: ReadonlyMap<string, readonly RateLimitWindow[]>,
  keyPrefix: string,
): ReadonlyMap<string, FlexibleLimiterLike> {
  const limiters = new Map<string, FlexibleLimiterLike>()
  const clusterPrefixes = new Set<unknown>()
  for (const [plan, windows] of plans) {
    for (const { points, durationSeconds } of windows) {
      const path = `rateLimit.store.flexible(${plan}, ${durationSeconds}s)`
      const limiter: unknown = factory({ plan, points, durationSeconds, keyPrefix })
      if (!isRecord(limiter) || typeof limiter['consume'] !== 'function') {
        fail(
          path,
          'must return a rate-limiter-flexible limiter (with consume(key, points))',
          limiter,
        )
      }
      const candidate = limiter
      if (candidate['points'] !== points || candidate['duration'] !== durationSeconds) {
        fail(
          path,
          `must return a limiter of this window: points ${points}, duration ${durationSeconds} ` +
            `(got points ${summarize(candidate['points'])}, duration ` +
            `${summarize(candidate['duration'])}); pass window.points and ` +
            'window.durationSeconds',
        )
      }
      if ([...limiters.values()].includes(limiter as unknown as FlexibleLimiterLike)) {
        fail(path, 'must return a new limiter for each window; it returned one it returned before')
      }
      clusterPrefixOnce(candidate, path, clusterPrefixes)
      limiters.set(`${plan}:${durationSeconds}`, limiter as unknown as FlexibleLimiterLike)
    }
  }
  return limiters
}

/**
 * rate-limiter-flexible's cluster primary keeps one counter per `keyPrefix`, with the points and
 * duration of the first worker limiter that named it: two windows under one prefix would count
 * in the same window.
 */
function clusterPrefixOnce(limiter: Record<string, unknown>, path: string, seen: Set<unknown>) {
  if (limiter.constructor?.name !== 'RateLimiterClusterWorker') return
  const prefix = limiter['keyPrefix']
  if (seen.has(prefix)) {
    fail(
      path,
      `must give each RateLimiterCluster its own keyPrefix (got ${summarize(prefix)} twice): ` +
        'the cluster primary keeps one window per prefix; use the window in it, as in ' +
        'keyPrefix: [window.keyPrefix, window.plan, window.durationSeconds].join(":")',
    )
  }
  seen.add(prefix)
}

/**
 * ioredis options whose timer can fail a limiter command that Redis has run. Both are timers
 * that fire before the event loop reads the socket after a stall, and neither knows about the
 * deadline the script carries: `commandTimeout` rejects the command, `socketTimeout` destroys
 * the connection (which fails every command in flight).
 */
const PRE_EMPTING_CLIENT_OPTIONS = ['commandTimeout', 'socketTimeout'] as const

/**
 * A numeric option of an ioredis `Redis` client (`['', value]`), or of the node clients of a
 * `Cluster` (`['redisOptions.', value]`).
 */
function clientOption(client: Record<string, unknown>, name: string): [string, number] | undefined {
  const options = client['options']
  if (!isRecord(options)) return undefined
  const own = options[name]
  if (typeof own === 'number') return ['', own]
  const nodeOptions = options['redisOptions']
  const nodes = isRecord(nodeOptions) ? nodeOptions[name] : undefined
  return typeof nodes === 'number' ? ['redisOptions.', nodes] : undefined
}

/**
 * The plan a tenant is metered on: pinned in `tenantPlans`, else the plan its claim or policy
 * gave when that plan is configured, else `defaultPlan`.
 */
export function planNameOf(
  options: NormalizedRateLimitOptions,
  id: string,
  plan: string | undefined,
): string {
  const pinned = options.tenantPlans.get(id)
  if (pinned !== undefined) return pinned
  return plan !== undefined && options.plans.has(plan) ? plan : options.defaultPlan
}
