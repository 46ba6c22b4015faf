/**
 * Per-tenant rate limits over rate-limiter-flexible: one or more fixed windows per plan, in
 * process memory or in Redis (a single server or a Cluster) shared by every gateway process.
 * The only module that sees rate-limiter-flexible's result shapes: a refusal becomes a
 * {@link RateLimitedError}, a store failure the configured fallback.
 *
 * @module
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'

import { RateLimitedError, ServiceUnavailableError } from './errors.js'
import type { Emit } from './events.js'
import type {
  HeaderWindow,
  PlanHeaders,
  RateLimitHeaderMode,
  WindowState,
} from './rate-limit-headers.js'
import { createPlanHeaders, secondsUntil } from './rate-limit-headers.js'
import type { ResolvedTenant, VerifiedToken } from './tenant.js'
import { PLAN_NAME_PATTERN } from './tenant.js'
import type { RequestLike } from './types.js'

export type { RateLimitHeaderMode } from './rate-limit-headers.js'

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
 * Give it fail-fast options (`enableOfflineQueue: false`, `maxRetriesPerRequest: 1`): tollgate
 * bounds each request with {@link RateLimitOptions.storeTimeoutMs} either way, but queued
 * commands still cost memory and land late.
 */
export interface RedisClientLike {
  readonly status: string
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void
  multi(): unknown
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
  /** Points a request costs. Default: 1. A cost above a window's points is always refused. */
  readonly cost?: RateLimitCost
  /** `'memory'` (default, this process only) or `{ redis }` (shared by every process). */
  readonly store?: 'memory' | { readonly redis: RedisClientLike }
  /** Prefix of Redis keys (`<prefix>:{<tenant>}:<plan>:<seconds>`). Default `'tollgate:rl'`. */
  readonly keyPrefix?: string
  /** Deadline for the store's answer to one request, in ms (1 to 10 000). Default 50. */
  readonly storeTimeoutMs?: number
  /**
   * After a store failure, requests skip the store for this long (ms, 0 to 600 000), then one
   * request probes it; a successful probe returns everyone to the store. Default 1000.
   */
  readonly storeRetryIntervalMs?: number
  /**
   * While the store fails: `'memory'` (default) applies the same windows in this process's
   * memory; `'allow'` admits; `'deny'` answers 503 `ERR_LIMITER_UNAVAILABLE` with `Retry-After`.
   * A store failure is never a 429.
   */
  readonly onStoreError?: StoreFailurePolicy
  /**
   * With `onStoreError: 'memory'`, each process admits `ceil(points / fallbackDivisor)` per
   * window: set it to the number of gateway processes to keep the combined limit near the
   * configured one during an outage. Default 1.
   */
  readonly fallbackDivisor?: number
  /** `'draft-10'` (default), `'legacy'` (`X-RateLimit-*`), `'both'`, or `false` for none. */
  readonly headers?: RateLimitHeaderMode
}

/** Applies a tenant's limits to a request. */
export interface TenantLimiter {
  /**
   * Consumes `cost` points in every window of the tenant's plan, shortest window first (a
   * request refused by a window costs nothing in the longer ones). Resolves to the response
   * headers for an admitted request; throws `RateLimitedError` (429, `Retry-After` and the same
   * fields) or `ServiceUnavailableError` (503, `deny` policy). Never hangs past
   * `storeTimeoutMs` plus the event loop's delay. Only the application's own `cost` function,
   * or a cost that is not an integer ≥ 1, makes it throw anything else.
   */
  consume(
    tenant: ResolvedTenant,
    request: RequestLike,
    verified: VerifiedToken,
  ): Promise<Record<string, string>>
}

interface Window extends HeaderWindow {
  readonly keySuffix: string
  readonly limiter: RateLimiterMemory | RateLimiterRedis
  readonly fallback: RateLimiterMemory
  /** Tenants the store reported as spent, until their window resets: refused without asking. */
  readonly blocked: Map<string, number>
}

interface Plan {
  readonly windows: readonly Window[]
  readonly headers: PlanHeaders
}

interface State extends WindowState {
  readonly window: Window
}

type Outcome =
  | { readonly admitted: true; readonly states: readonly State[] }
  | { readonly admitted: false; readonly state: State }

const OPTION_KEYS = [
  'windows',
  'plans',
  'defaultPlan',
  'tenantPlans',
  'cost',
  'store',
  'keyPrefix',
  'storeTimeoutMs',
  'storeRetryIntervalMs',
  'onStoreError',
  'fallbackDivisor',
  'headers',
]
const STORE_ERROR_EVENT_INTERVAL_MS = 1000
const MAX_BLOCKED_PER_WINDOW = 10_000
const noop = () => {}

/**
 * Validates `options` once and returns the limiter the gate calls after tenant resolution.
 *
 * @throws TypeError naming the option and what to change, when `options` are invalid.
 * @example
 * ```ts
 * const limiter = createTenantLimiter(
 *   { windows: [{ points: 20, durationSeconds: 1 }, { points: 600, durationSeconds: 60 }], store: { redis } },
 *   { realm: 'api', emit: undefined },
 * )
 * ```
 */
export function createTenantLimiter(
  options: RateLimitOptions,
  context: { realm: string; emit: Emit },
): TenantLimiter {
  const o = normalize(options)
  const { emit } = context
  const redis = o.redis
  const plans = new Map<string, Plan>()
  for (const [planName, windows] of o.plans) {
    const built = windows.map((window) => buildWindow(planName, window, windows.length, o))
    plans.set(planName, { windows: built, headers: createPlanHeaders(o.headers, built) })
  }
  const defaultPlan = plans.get(o.defaultPlan) as Plan
  const denyRetryAfterSeconds = Math.max(1, secondsUntil(o.storeRetryIntervalMs))

  let degraded = false
  let probing = false
  let retryAt = 0
  let lastError: unknown
  let lastErrorEventAt = Number.NEGATIVE_INFINITY

  function settle(tenant: string, plan: Plan, outcome: Outcome): Record<string, string> {
    if (outcome.admitted) return plan.headers.admitted(outcome.states)
    const { state } = outcome
    emit?.({ type: 'rate_limited', tenant, policy: state.window.name })
    throw new RateLimitedError(state.msBeforeReset / 1000, plan.headers.refused(state))
  }

  function storeFailed(error: unknown): void {
    const now = Date.now()
    lastError = error
    retryAt = now + o.storeRetryIntervalMs
    if (now - lastErrorEventAt >= STORE_ERROR_EVENT_INTERVAL_MS) {
      lastErrorEventAt = now
      emit?.({ type: 'limiter_store_error', error })
    }
    if (!degraded) {
      degraded = true
      emit?.({ type: 'limiter_fallback', engaged: true, policy: o.onStoreError })
    }
  }

  async function fallback(tenant: string, plan: Plan, points: number, error: unknown) {
    if (o.onStoreError === 'allow') return plan.headers.unknown()
    if (o.onStoreError === 'deny') {
      throw new ServiceUnavailableError('ERR_LIMITER_UNAVAILABLE', denyRetryAfterSeconds, error)
    }
    return settle(tenant, plan, await consumeWindows(plan, tenant, points, false))
  }

  async function consume(
    tenant: ResolvedTenant,
    request: RequestLike,
    verified: VerifiedToken,
  ): Promise<Record<string, string>> {
    const planName = o.tenantPlans.get(tenant.id) ?? tenant.plan
    const plan = (planName === undefined ? undefined : plans.get(planName)) ?? defaultPlan
    const points = o.cost === undefined ? 1 : checkedCost(o.cost(request, verified))
    const id = tenant.id
    if (redis === undefined) return settle(id, plan, await consumeWindows(plan, id, points, true))

    const blocked = blockedState(plan, id)
    if (blocked !== undefined) return settle(id, plan, { admitted: false, state: blocked })

    const probe = degraded
    if (probe) {
      if (probing || Date.now() < retryAt) return fallback(id, plan, points, lastError)
      probing = true
    }
    const deadline = startDeadline(o.storeTimeoutMs)
    let outcome: Outcome
    try {
      outcome = await consumeWindows(plan, id, points, true, deadline.promise)
    } catch (error) {
      storeFailed(error)
      return fallback(id, plan, points, error)
    } finally {
      deadline.clear()
      if (probe) probing = false
    }
    if (probe && degraded) {
      degraded = false
      emit?.({ type: 'limiter_fallback', engaged: false, policy: o.onStoreError })
    }
    rememberSpent(id, outcome)
    return settle(id, plan, outcome)
  }

  return { consume }
}

/** Consumes window by window, shortest first; stops at the first refusal. */
async function consumeWindows(
  plan: Plan,
  tenant: string,
  points: number,
  useStore: boolean,
  deadline?: Promise<never>,
): Promise<Outcome> {
  const states: State[] = []
  for (const window of plan.windows) {
    const limiter = useStore ? window.limiter : window.fallback
    const pending = limiter.consume(`{${tenant}}${window.keySuffix}`, points).then(
      (res) => stateOf(window, res, true),
      (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) return stateOf(window, rejection, false)
        throw rejection
      },
    )
    const [state, admitted] = await (deadline ? Promise.race([pending, deadline]) : pending)
    if (!admitted) return { admitted: false, state }
    states.push(state)
  }
  return { admitted: true, states }
}

function stateOf(window: Window, res: RateLimiterRes, admitted: boolean): [State, boolean] {
  // A key without a TTL cannot come from rate-limiter-flexible's script; never report "no reset".
  const msBeforeReset = res.msBeforeNext > 0 ? res.msBeforeNext : window.durationSeconds * 1000
  const remaining = Math.max(0, window.points - res.consumedPoints)
  return [{ window, remaining: admitted ? remaining : 0, msBeforeReset }, admitted]
}

function blockedState(plan: Plan, tenant: string): State | undefined {
  const now = Date.now()
  for (const window of plan.windows) {
    const until = window.blocked.get(tenant)
    if (until === undefined) continue
    if (until > now) return { window, remaining: 0, msBeforeReset: until - now }
    window.blocked.delete(tenant)
  }
  return undefined
}

/** A window with no points left refuses everything until it resets: no need to ask Redis. */
function rememberSpent(tenant: string, outcome: Outcome): void {
  const states = outcome.admitted ? outcome.states : [outcome.state]
  const now = Date.now()
  for (const { window, remaining, msBeforeReset } of states) {
    if (remaining > 0) continue
    const { blocked } = window
    if (blocked.size >= MAX_BLOCKED_PER_WINDOW && !blocked.has(tenant)) {
      for (const [key, until] of blocked) if (until <= now) blocked.delete(key)
      // Still full: stay bounded and let the store refuse this tenant.
      if (blocked.size >= MAX_BLOCKED_PER_WINDOW) continue
    }
    blocked.set(tenant, now + msBeforeReset)
  }
}

function startDeadline(ms: number): { promise: Promise<never>; clear: () => void } {
  let timer: NodeJS.Timeout | undefined
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`rate-limit store did not answer within ${ms} ms`)),
      ms,
    )
    timer.unref()
  })
  promise.catch(noop)
  return { promise, clear: () => clearTimeout(timer) }
}

function checkedCost(cost: unknown): number {
  if (typeof cost === 'number' && Number.isSafeInteger(cost) && cost >= 1) return cost
  throw new TypeError(
    `"rateLimit.cost" must return an integer ≥ 1 (got ${summarize(cost)}); fix the cost function`,
  )
}

function buildWindow(plan: string, window: RateLimitWindow, count: number, o: Normalized): Window {
  const name = window.name ?? (count === 1 ? plan : `${plan}-${window.durationSeconds}s`)
  const limits = { points: window.points, duration: window.durationSeconds }
  return {
    name,
    points: window.points,
    durationSeconds: window.durationSeconds,
    keySuffix: `:${plan}:${window.durationSeconds}`,
    limiter:
      o.redis === undefined
        ? new RateLimiterMemory({ ...limits, keyPrefix: o.keyPrefix })
        : new RateLimiterRedis({
            ...limits,
            keyPrefix: o.keyPrefix,
            storeClient: o.redis,
            // Fails at once while ioredis reconnects instead of queueing the command.
            rejectIfRedisNotReady: true,
          }),
    fallback: new RateLimiterMemory({
      points: Math.ceil(window.points / o.fallbackDivisor),
      duration: window.durationSeconds,
    }),
    blocked: new Map(),
  }
}

interface Normalized {
  readonly plans: ReadonlyMap<string, readonly RateLimitWindow[]>
  readonly defaultPlan: string
  readonly tenantPlans: ReadonlyMap<string, string>
  readonly cost: RateLimitCost | undefined
  readonly redis: RedisClientLike | undefined
  readonly keyPrefix: string
  readonly storeTimeoutMs: number
  readonly storeRetryIntervalMs: number
  readonly onStoreError: StoreFailurePolicy
  readonly fallbackDivisor: number
  readonly headers: RateLimitHeaderMode
}

function normalize(options: RateLimitOptions): Normalized {
  if (!isRecord(options)) {
    throw new TypeError(`"rateLimit" option must be an object (got ${summarize(options)})`)
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.includes(key)) {
      throw new TypeError(
        `"rateLimit.${key}" is not an option; use one of: ${OPTION_KEYS.join(', ')}`,
      )
    }
  }
  const defaultPlan = options.defaultPlan ?? 'default'
  if (typeof defaultPlan !== 'string' || !PLAN_NAME_PATTERN.test(defaultPlan)) {
    throw new TypeError(
      `"rateLimit.defaultPlan" must be a plan name matching ${PLAN_NAME_PATTERN} (got ${summarize(defaultPlan)})`,
    )
  }
  const plans = new Map<string, readonly RateLimitWindow[]>()
  if ((options.windows === undefined) === (options.plans === undefined)) {
    throw new TypeError('"rateLimit" needs exactly one of "windows" (a single plan) or "plans"')
  }
  if (options.windows !== undefined) {
    plans.set(defaultPlan, windowsOption(options.windows, 'rateLimit.windows'))
  } else {
    if (!isRecord(options.plans) || Object.keys(options.plans).length === 0) {
      throw new TypeError(
        `"rateLimit.plans" must be an object of plan name → windows, with at least one plan (got ${summarize(options.plans)})`,
      )
    }
    for (const [name, windows] of Object.entries(options.plans)) {
      if (!PLAN_NAME_PATTERN.test(name)) {
        throw new TypeError(
          `"rateLimit.plans" key ${JSON.stringify(name)} must match ${PLAN_NAME_PATTERN}`,
        )
      }
      plans.set(name, windowsOption(windows, `rateLimit.plans.${name}`))
    }
    if (!plans.has(defaultPlan)) {
      throw new TypeError(
        `"rateLimit.defaultPlan" must name one of the plans (${[...plans.keys()].join(', ')}); got '${defaultPlan}'`,
      )
    }
  }
  return Object.freeze({
    plans,
    defaultPlan,
    tenantPlans: tenantPlansOption(options.tenantPlans, plans),
    cost: optionalFunction<RateLimitCost>(options.cost, 'rateLimit.cost'),
    redis: storeOption(options.store),
    keyPrefix: keyPrefixOption(options.keyPrefix),
    storeTimeoutMs: integerOption(
      options.storeTimeoutMs,
      'rateLimit.storeTimeoutMs',
      50,
      1,
      10_000,
    ),
    storeRetryIntervalMs: integerOption(
      options.storeRetryIntervalMs,
      'rateLimit.storeRetryIntervalMs',
      1000,
      0,
      600_000,
    ),
    onStoreError: oneOf(options.onStoreError, 'rateLimit.onStoreError', [
      'memory',
      'allow',
      'deny',
    ]),
    fallbackDivisor: integerOption(
      options.fallbackDivisor,
      'rateLimit.fallbackDivisor',
      1,
      1,
      10_000,
    ),
    headers: oneOf(options.headers, 'rateLimit.headers', ['draft-10', 'legacy', 'both', false]),
  })
}

function windowsOption(value: unknown, path: string): readonly RateLimitWindow[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 8) {
    throw new TypeError(`"${path}" must be an array of 1 to 8 windows (got ${summarize(value)})`)
  }
  const windows = value.map((window: unknown, index): RateLimitWindow => {
    const at = `${path}[${index}]`
    if (!isRecord(window)) {
      throw new TypeError(`"${at}" must be { points, durationSeconds } (got ${summarize(window)})`)
    }
    for (const key of Object.keys(window)) {
      if (key !== 'points' && key !== 'durationSeconds' && key !== 'name') {
        throw new TypeError(`"${at}.${key}" is not an option; use points, durationSeconds, name`)
      }
    }
    const name = window['name']
    if (name !== undefined && (typeof name !== 'string' || !PLAN_NAME_PATTERN.test(name))) {
      throw new TypeError(`"${at}.name" must match ${PLAN_NAME_PATTERN} (got ${summarize(name)})`)
    }
    return {
      points: integerOption(
        window['points'],
        `${at}.points`,
        undefined,
        1,
        Number.MAX_SAFE_INTEGER,
      ),
      // rate-limiter-flexible's Redis store works in whole seconds and mishandles shorter windows.
      durationSeconds: integerOption(
        window['durationSeconds'],
        `${at}.durationSeconds`,
        undefined,
        1,
        31_622_400,
      ),
      ...(name === undefined ? {} : { name }),
    }
  })
  const durations = new Set(windows.map((window) => window.durationSeconds))
  if (durations.size !== windows.length) {
    throw new TypeError(`"${path}" has two windows with the same durationSeconds; merge them`)
  }
  const names = windows.map((window) => window.name).filter((name) => name !== undefined)
  if (new Set(names).size !== names.length) {
    throw new TypeError(`"${path}" has two windows with the same name; rename one`)
  }
  return Object.freeze(windows.sort((a, b) => a.durationSeconds - b.durationSeconds))
}

function tenantPlansOption(value: unknown, plans: ReadonlyMap<string, unknown>) {
  const map = new Map<string, string>()
  if (value === undefined) return map
  const entries =
    value instanceof Map
      ? [...value.entries()]
      : isRecord(value)
        ? Object.entries(value)
        : undefined
  if (entries === undefined) {
    throw new TypeError(
      `"rateLimit.tenantPlans" must be an object or a Map of tenant id → plan name (got ${summarize(value)})`,
    )
  }
  for (const [tenant, plan] of entries) {
    if (typeof tenant !== 'string' || typeof plan !== 'string' || !plans.has(plan)) {
      throw new TypeError(
        `"rateLimit.tenantPlans" values must name one of the plans (${[...plans.keys()].join(', ')}); got ${summarize(plan)}`,
      )
    }
    map.set(tenant, plan)
  }
  return map
}

function storeOption(value: unknown): RedisClientLike | undefined {
  if (value === undefined || value === 'memory') return undefined
  if (!isRecord(value) || Object.keys(value).some((key) => key !== 'redis')) {
    throw new TypeError(
      `"rateLimit.store" must be 'memory' or { redis: client } (got ${summarize(value)})`,
    )
  }
  const client = value['redis']
  if (
    !isRecord(client) ||
    typeof client['defineCommand'] !== 'function' ||
    typeof client['multi'] !== 'function' ||
    typeof client['status'] !== 'string'
  ) {
    throw new TypeError(
      `"rateLimit.store.redis" must be an ioredis Redis or Cluster client (got ${summarize(client)}); node-redis clients are not supported`,
    )
  }
  return client as unknown as RedisClientLike
}

function keyPrefixOption(value: unknown): string {
  if (value === undefined) return 'tollgate:rl'
  // Braces would move the Redis Cluster hash tag off the tenant id.
  if (typeof value !== 'string' || !/^[\x21-\x7A\x7C\x7E]{1,64}$/.test(value)) {
    throw new TypeError(
      `"rateLimit.keyPrefix" must be 1 to 64 printable ASCII characters without spaces or braces (got ${summarize(value)})`,
    )
  }
  return value
}

function integerOption(
  value: unknown,
  path: string,
  fallback: number | undefined,
  min: number,
  max: number,
): number {
  if (value === undefined && fallback !== undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(
      `"${path}" must be an integer from ${min} to ${max} (got ${summarize(value)})`,
    )
  }
  return value
}

function oneOf<T extends string | false>(value: unknown, path: string, allowed: readonly T[]): T {
  if (value === undefined) return allowed[0] as T
  if (!allowed.includes(value as T)) {
    const list = allowed.map((item) => (typeof item === 'string' ? `'${item}'` : String(item)))
    throw new TypeError(`"${path}" must be one of ${list.join(', ')} (got ${summarize(value)})`)
  }
  return value as T
}

function optionalFunction<T>(value: unknown, path: string): T | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'function') {
    throw new TypeError(`"${path}" must be a function (got ${summarize(value)})`)
  }
  return value as T
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Type and shape of a received value, never its content. */
function summarize(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return `an array of length ${value.length}`
  if (typeof value === 'object') return 'an object'
  if (typeof value === 'string') return `a string of length ${value.length}`
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${value}`
  return typeof value
}
