/**
 * Per-tenant rate limits: one or more fixed windows per plan, in process memory
 * (`memory.ts`, synchronous), in Redis (a single server or a Cluster, `redis.ts`), in the
 * rate-limiter-flexible limiters of the application's factory (`flexible.ts`) or in the
 * application's own `SharedStore` (`shared.ts`), shared by every gateway process. A refusal becomes a {@link RateLimitedError}, a store failure the configured
 * fallback.
 *
 * @module
 */
import { CostExceedsLimitError, RateLimitedError, ServiceUnavailableError } from '../errors.js'
import type { GateEvent } from '../events.js'
import type { RequestLike } from '../types.js'
import { summarize } from '../validate.js'
import { warnOnce } from '../warnings.js'
import { type LimiterClock, systemClock } from './clock.js'
import type { FlexibleLimiterLike } from './flexible.js'
import { createFlexibleStore } from './flexible.js'
import type { HeaderWindow, PlanHeaders, WindowState } from './headers.js'
import { createPlanHeaders, secondsUntil } from './headers.js'
import { MemoryWindow } from './memory.js'
import type { NormalizedRateLimitOptions, RateLimitWindow } from './options.js'
import { createRedisStore } from './redis.js'
import { createSharedLimiterStore } from './shared.js'
import { LimiterStoreError, type StoreCount } from './store.js'
import type { ResolvedTenant, VerifiedToken } from './tenant.js'
import { TenantTable } from './tenant-table.js'

export type {
  FlexibleLimiterFactory,
  FlexibleLimiterLike,
  FlexibleWindow,
} from './flexible.js'
export type { RateLimitHeaderMode } from './headers.js'
export type {
  RateLimitCost,
  RateLimitOptions,
  RateLimitWindow,
  RedisClientLike,
  StoreFailurePolicy,
} from './options.js'
export type { LimiterStoreErrorCode } from './store.js'
export { LimiterStoreError } from './store.js'

/** Applies a tenant's limits to a request. */
export interface TenantLimiter {
  /**
   * Consumes `cost` points in every window of the tenant's plan, shortest window first (a
   * request refused by a window costs nothing in the longer ones). Resolves to the response
   * headers for an admitted request; throws `RateLimitedError` (429, `Retry-After` and the same
   * fields) or `ServiceUnavailableError` (503, `deny` policy). Never hangs past
   * `storeTimeoutMs` plus the event loop's delay, or twice that for a request that waited for a
   * probe of a failed store before asking it; a closed Redis connection fails the request over
   * at once. With a `flexible` or `shared` store, the windows are asked one after the other
   * within that deadline, and a refusal by a longer window leaves the shorter ones charged (no refund).
   * A cost above the points of the plan's smallest window throws `CostExceedsLimitError` (403)
   * before any store is asked; with `maxTenants` windows held in memory that have not ended, a
   * tenant without one gets `ServiceUnavailableError` (503). Only the application's own `cost`
   * function, or a cost that is not an integer ≥ 1, makes it throw anything else.
   */
  consume(
    tenant: ResolvedTenant,
    request: RequestLike,
    verified: VerifiedToken,
  ): Promise<Record<string, string>>
  /**
   * The same as `consume`, synchronously (returns the headers or throws), when the store is
   * process memory; `undefined` with any other store. The gate answers a cached
   * token with it without a promise chain.
   */
  readonly consumeNow:
    | ((
        tenant: ResolvedTenant,
        request: RequestLike,
        verified: VerifiedToken,
      ) => Record<string, string>)
    | undefined
}

interface Window extends HeaderWindow {
  readonly keySuffix: string
  /** With `store: { flexible }`: the limiter that counts this window. */
  readonly limiter: FlexibleLimiterLike
  /** The window in process memory: the store without Redis, the fallback with it. */
  readonly memory: MemoryWindow
  /**
   * Tenants a shared store reported as spent, until their window resets: refused without asking.
   * Bounded by `maxTenants`; when full, the oldest is forgotten (the store still refuses it).
   */
  readonly blocked: TenantTable
}

interface Plan {
  readonly name: string
  readonly windows: readonly Window[]
  readonly headers: PlanHeaders
  /** The points of its smallest window: no request may cost more. */
  readonly maxCost: number
  /** The window with those points, named in the refusal's detail. */
  readonly maxCostWindow: string
}

interface State extends WindowState {
  readonly window: Window
}

type Outcome =
  | { readonly admitted: true; readonly states: readonly State[] }
  | { readonly admitted: false; readonly state: State }
  /** Process memory holds `maxTenants` windows that have not ended; the oldest ends in `retryAfterMs`. */
  | { readonly admitted: false; readonly state: undefined; readonly retryAfterMs: number }

/**
 * How the limiter reports: the gate's listener, or one that also reads the plan the event is
 * about (`mcpGate`'s tool windows name their tool by it). `undefined` when nobody listens.
 */
export type LimiterEmit = ((event: GateEvent, plan: string) => void) | undefined

const STORE_ERROR_EVENT_INTERVAL_MS = 1000
/** Code of the process warning for a full memory, without an event listener. */
export const LIMITER_FULL_WARNING_CODE = 'TOLLGATE_LIMITER_FULL'

/**
 * Returns the limiter the gate calls after tenant resolution, from options that
 * `normalizeRateLimitOptions()` validated (`createGate` does it for `options.rateLimit`).
 *
 * @example
 * ```ts
 * const limiter = createTenantLimiter(
 *   normalizeRateLimitOptions({ windows: [{ points: 20, durationSeconds: 1 }], store: { redis } }),
 *   { emit: undefined },
 * )
 * ```
 */
export function createTenantLimiter(
  o: NormalizedRateLimitOptions,
  context: { emit: LimiterEmit; clock?: LimiterClock },
): TenantLimiter {
  const { emit, clock = systemClock } = context
  const store = limiterStore(o, clock)
  const plans = new Map<string, Plan>()
  for (const [planName, windows] of o.plans) {
    const built = windows.map((window) =>
      buildWindow(
        planName,
        window,
        windows.length,
        o.flexible?.get(`${planName}:${window.durationSeconds}`),
        o.maxTenants,
      ),
    )
    const smallest = built.reduce((least, window) =>
      window.points < least.points ? window : least,
    )
    plans.set(planName, {
      name: planName,
      windows: built,
      headers: createPlanHeaders(o.headers, built),
      maxCost: smallest.points,
      maxCostWindow: smallest.name,
    })
  }
  const defaultPlan = plans.get(o.defaultPlan) as Plan
  const denyRetryAfterSeconds = Math.max(1, secondsUntil(o.storeRetryIntervalMs))

  let degraded = false
  /** While the store is degraded, the request that probes it; resolves to whether it answered. */
  let probe: Promise<boolean> | undefined
  let retryAt = 0
  let lastError: unknown
  let lastErrorEventAt = Number.NEGATIVE_INFINITY

  function settle(tenant: string, plan: Plan, outcome: Outcome): Record<string, string> {
    if (outcome.admitted) return plan.headers.admitted(outcome.states)
    const { state } = outcome
    if (state === undefined) throw memoryFull(plan, outcome.retryAfterMs)
    emit?.({ type: 'rate_limited', tenant, policy: state.window.name }, plan.name)
    throw new RateLimitedError({
      retryAfterSeconds: state.msBeforeReset / 1000,
      headers: plan.headers.refused(state),
    })
  }

  /** A `limiter_store_error` event, at most one a second. */
  function reportStoreError(plan: Plan, error: unknown, now: number): void {
    if (now - lastErrorEventAt < STORE_ERROR_EVENT_INTERVAL_MS) return
    lastErrorEventAt = now
    emit?.({ type: 'limiter_store_error', error }, plan.name)
  }

  /**
   * The 503 for a tenant that process memory cannot count: `maxTenants` windows that have not
   * ended are held. Reported like a store error, or once in ten minutes as a process warning
   * when nobody listens.
   */
  function memoryFull(plan: Plan, retryAfterMs: number): ServiceUnavailableError {
    const error = new LimiterStoreError(
      'ERR_STORE_FULL',
      `rate-limit memory holds rateLimit.maxTenants (${o.maxTenants}) windows that have not ended: ` +
        'tenants without one are refused (503) until the oldest ends; raise rateLimit.maxTenants ' +
        'if this many tenants are expected within a window',
    )
    if (emit !== undefined) reportStoreError(plan, error, clock.now())
    else {
      warnOnce({
        code: LIMITER_FULL_WARNING_CODE,
        subject: 'rateLimit.maxTenants',
        message: error.message,
      })
    }
    return new ServiceUnavailableError({
      code: 'ERR_LIMITER_UNAVAILABLE',
      retryAfterSeconds: retryAfterMs / 1000,
      cause: error,
    })
  }

  /** The cost of a request, checked: a cost no window can ever admit is refused here. */
  function costOf(plan: Plan, request: RequestLike, verified: VerifiedToken): number {
    if (o.cost === undefined) return 1
    const cost: unknown = o.cost(request, verified)
    if (typeof cost === 'number' && cost > plan.maxCost) {
      throw new CostExceedsLimitError({
        cost,
        limit: plan.maxCost,
        headers: plan.headers.unknown(),
        detail: { cost, limit: plan.maxCost, policy: plan.maxCostWindow },
      })
    }
    return checkedCost(cost)
  }

  function storeFailed(plan: Plan, error: unknown): void {
    const now = clock.now()
    lastError = error
    retryAt = now + o.storeRetryIntervalMs
    reportStoreError(plan, error, now)
    if (!degraded) {
      degraded = true
      emit?.({ type: 'limiter_fallback', engaged: true, policy: o.onStoreError }, plan.name)
    }
  }

  async function fallback(tenant: string, plan: Plan, points: number, error: unknown) {
    if (o.onStoreError === 'allow') return plan.headers.unknown()
    if (o.onStoreError === 'deny') {
      throw new ServiceUnavailableError({
        code: 'ERR_LIMITER_UNAVAILABLE',
        retryAfterSeconds: denyRetryAfterSeconds,
        cause: error,
      })
    }
    // Each instance admits its share of the window: the instances seen on the store lately
    // ('auto'), or the configured divisor.
    const divisor = o.fallbackDivisor === 'auto' ? (store?.instances() ?? 1) : o.fallbackDivisor
    return settle(tenant, plan, consumeInMemory(plan, tenant, points, divisor, clock.now()))
  }

  function planOf(tenant: ResolvedTenant): Plan {
    const planName = o.tenantPlans.get(tenant.id) ?? tenant.plan
    return (planName === undefined ? undefined : plans.get(planName)) ?? defaultPlan
  }

  /** The memory store: nothing to wait for, so nothing asynchronous. */
  function consumeNow(
    tenant: ResolvedTenant,
    request: RequestLike,
    verified: VerifiedToken,
  ): Record<string, string> {
    const plan = planOf(tenant)
    const points = costOf(plan, request, verified)
    const id = tenant.id
    const now = clock.now()
    // The windows themselves say which are spent: no memory of spent tenants beside them.
    const spent = spentInMemory(plan, id, now)
    if (spent !== undefined) return settle(id, plan, { admitted: false, state: spent })
    return settle(id, plan, consumeInMemory(plan, id, points, 1, now))
  }

  async function consume(
    tenant: ResolvedTenant,
    request: RequestLike,
    verified: VerifiedToken,
  ): Promise<Record<string, string>> {
    if (store === undefined) return consumeNow(tenant, request, verified)
    const plan = planOf(tenant)
    const points = costOf(plan, request, verified)
    const id = tenant.id
    const blocked = blockedState(plan, id, clock.now())
    if (blocked !== undefined) return settle(id, plan, { admitted: false, state: blocked })

    let probed: ((answered: boolean) => void) | undefined
    if (degraded) {
      if (probe !== undefined) {
        // A probe is in flight: its answer (at most one store deadline away) says whether this
        // request goes to the store, rather than deciding it by the fallback meanwhile.
        if (!(await probe)) return fallback(id, plan, points, lastError)
      } else if (clock.now() < retryAt) {
        return fallback(id, plan, points, lastError)
      } else {
        probe = new Promise((resolve) => {
          probed = resolve
        })
      }
    }
    let counts: StoreCount[] | undefined
    let error: unknown
    try {
      counts = await store.consume(id, plan.windows, points)
    } catch (caught) {
      error = caught
    }
    // An answer the store should not have given fails this request only: the store did answer,
    // and one tenant's odd counter (or a store bug on one key) must not send every tenant to
    // the fallback.
    const answered = counts !== undefined || isAnswerError(error)
    try {
      if (!answered) storeFailed(plan, error)
      else if (probed !== undefined && degraded) {
        degraded = false
        emit?.({ type: 'limiter_fallback', engaged: false, policy: o.onStoreError }, plan.name)
      }
    } finally {
      if (probed !== undefined) {
        probe = undefined
        probed(!degraded)
      }
    }
    if (counts === undefined) {
      if (answered) reportStoreError(plan, error, clock.now())
      return fallback(id, plan, points, error)
    }
    const outcome = outcomeOf(plan, counts)
    rememberSpent(id, outcome, clock.now())
    return settle(id, plan, outcome)
  }

  return { consume, consumeNow: store === undefined ? consumeNow : undefined }
}

/** The store shared by every gateway process, or `undefined` for process memory. */
interface LimiterStore {
  consume(tenant: string, windows: readonly Window[], points: number): Promise<StoreCount[]>
  /** Limiter instances sharing the store lately, for `fallbackDivisor: 'auto'`. */
  instances(): number
}

function limiterStore(
  o: NormalizedRateLimitOptions,
  clock: LimiterClock,
): LimiterStore | undefined {
  // These stores keep no list of the instances sharing them: 'auto' divides by 1, and the
  // docs ask for a fallbackDivisor with them.
  if (o.flexible !== undefined) {
    const flexible = createFlexibleStore({ timeoutMs: o.storeTimeoutMs, clock })
    return { consume: flexible.consume, instances: () => 1 }
  }
  if (o.shared !== undefined) {
    const shared = createSharedLimiterStore(o.shared, {
      keyPrefix: o.keyPrefix,
      timeoutMs: o.storeTimeoutMs,
      clock,
    })
    return { consume: shared.consume, instances: () => 1 }
  }
  if (o.redis === undefined) return undefined
  const redis = createRedisStore(o.redis, {
    keyPrefix: o.keyPrefix,
    timeoutMs: o.storeTimeoutMs,
    clock,
  })
  return {
    consume: (tenant, windows, points) =>
      redis.consume(
        windows.map((window) => `${o.keyPrefix}:{${tenant}}${window.keySuffix}`),
        windows,
        points,
      ),
    instances: redis.instances,
  }
}

/** The store's counts, shortest window first, up to the first window over its points. */
function outcomeOf(plan: Plan, counts: readonly StoreCount[]): Outcome {
  const states: State[] = []
  for (const [index, window] of plan.windows.entries()) {
    const count = counts[index]
    if (count === undefined) break
    const state = stateOf(window, count.consumed, count.msBeforeReset, window.points)
    if (!(count.consumed <= window.points)) return { admitted: false, state }
    states.push(state)
  }
  return { admitted: true, states }
}

/**
 * Consumes window by window in process memory, shortest first; stops at the first refusal.
 * Each window admits `ceil(points / divisor)`.
 */
function consumeInMemory(
  plan: Plan,
  tenant: string,
  points: number,
  divisor: number,
  now: number,
): Outcome {
  const states: State[] = []
  const { windows } = plan
  for (let index = 0; index < windows.length; index++) {
    const window = windows[index] as Window
    const { memory } = window
    const slot = memory.consume(tenant, points, now)
    if (slot === -1) {
      // Full: what the shorter windows counted for this request is taken back, as nothing was
      // decided by them.
      for (const counted of windows.slice(0, index)) {
        const taken = counted.memory.find(tenant, now)
        if (taken !== -1) counted.memory.refund(taken, points)
      }
      return { admitted: false, state: undefined, retryAfterMs: memory.msUntilRoom(now) }
    }
    const share = Math.ceil(window.points / divisor)
    const consumed = memory.consumed(slot)
    const state = stateOf(window, consumed, memory.resetAt(slot) - now, share)
    if (!(consumed <= share)) return { admitted: false, state }
    states.push(state)
  }
  return { admitted: true, states }
}

/**
 * With the memory store: the spent window that resets last, from the windows themselves (a
 * window whose points are all consumed refuses everything until it resets).
 */
function spentInMemory(plan: Plan, tenant: string, now: number): State | undefined {
  let state: State | undefined
  const { windows } = plan
  for (let index = 0; index < windows.length; index++) {
    const window = windows[index] as Window
    const slot = window.memory.find(tenant, now)
    if (slot === -1 || window.memory.consumed(slot) < window.points) continue
    const msBeforeReset = window.memory.resetAt(slot) - now
    if (state === undefined || msBeforeReset > state.msBeforeReset) {
      state = { window, remaining: 0, msBeforeReset }
    }
  }
  return state
}

/** A store that answered, but not what its contract says: it fails the request, not the store. */
function isAnswerError(error: unknown): boolean {
  return error instanceof LimiterStoreError && error.code === 'ERR_STORE_ANSWER'
}

function stateOf(window: Window, consumed: number, msBeforeNext: number, limit: number): State {
  // A key without a TTL cannot come from the scripts; never report "no reset".
  const msBeforeReset = msBeforeNext > 0 ? msBeforeNext : window.durationSeconds * 1000
  // Admitted while `consumed <= limit`: the callers test that themselves (no tuple per window).
  const remaining = consumed <= limit ? limit - consumed : 0
  return { window, remaining, msBeforeReset }
}

/** The spent window that resets last, so that `Retry-After` is never too early. */
function blockedState(plan: Plan, tenant: string, now: number): State | undefined {
  let state: State | undefined
  const { windows } = plan
  for (let index = 0; index < windows.length; index++) {
    const window = windows[index] as Window
    const slot = window.blocked.find(tenant, now)
    if (slot === -1) continue
    const msBeforeReset = window.blocked.expiresAt(slot) - now
    if (state === undefined || msBeforeReset > state.msBeforeReset) {
      state = { window, remaining: 0, msBeforeReset }
    }
  }
  return state
}

/**
 * A window with no points left refuses everything until it resets: later requests are refused
 * from process memory, without a store round trip (and without a Redis call while it is down).
 * O(1) whatever the number of spent tenants; when `maxTenants` are remembered, the oldest is
 * forgotten, and the store refuses it again.
 */
function rememberSpent(tenant: string, outcome: Outcome, now: number): void {
  if (outcome.admitted) {
    const { states } = outcome
    for (let i = 0; i < states.length; i++) {
      const state = states[i] as State
      if (state.remaining <= 0) remember(tenant, state, now)
    }
  } else if (outcome.state !== undefined) {
    remember(tenant, outcome.state, now)
  }
}

function remember(tenant: string, state: State, now: number): void {
  const { blocked } = state.window
  const until = now + state.msBeforeReset
  const slot = blocked.find(tenant, now)
  if (slot === -1) blocked.open(tenant, 0, until, now, true)
  else blocked.expireAt(slot, until)
}

/** The limiter of a window when the store is not rate-limiter-flexible: never called. */
const NO_LIMITER: FlexibleLimiterLike = {
  points: 0,
  duration: 0,
  consume: () => Promise.reject(new Error('no rate-limiter-flexible store')),
}

function checkedCost(cost: unknown): number {
  if (typeof cost === 'number' && Number.isSafeInteger(cost) && cost >= 1) return cost
  throw new TypeError(
    `"rateLimit.cost" must return an integer ≥ 1 (got ${summarize(cost)}); fix the cost function`,
  )
}

function buildWindow(
  plan: string,
  window: RateLimitWindow,
  count: number,
  limiter: FlexibleLimiterLike | undefined,
  maxTenants: number,
): Window {
  const name = window.name ?? (count === 1 ? plan : `${plan}-${window.durationSeconds}s`)
  return {
    limiter: limiter ?? NO_LIMITER,
    name,
    points: window.points,
    durationSeconds: window.durationSeconds,
    keySuffix: `:${plan}:${window.durationSeconds}`,
    memory: new MemoryWindow(window.durationSeconds, maxTenants),
    blocked: new TenantTable(maxTenants),
  }
}
