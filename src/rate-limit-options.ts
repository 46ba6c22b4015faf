/**
 * Validation of the rate-limit options: every rule, default and message in one place, so that
 * the limiter's hot path trusts what it receives.
 *
 * @module
 */

import type {
  RateLimitCost,
  RateLimitOptions,
  RateLimitWindow,
  RedisClientLike,
  StoreFailurePolicy,
} from './rate-limit.js'
import type { RateLimitHeaderMode } from './rate-limit-headers.js'
import { PLAN_NAME_PATTERN } from './tenant.js'

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

/** {@link RateLimitOptions} with every default filled in; plans keyed by name in a Map. */
export interface NormalizedRateLimitOptions {
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

/**
 * Validates {@link RateLimitOptions} once, at construction.
 *
 * @throws TypeError naming the option, what it must be and a safe summary of what it got.
 */
export function normalizeRateLimitOptions(options: RateLimitOptions): NormalizedRateLimitOptions {
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
export function summarize(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return `an array of length ${value.length}`
  if (typeof value === 'object') return 'an object'
  if (typeof value === 'string') return `a string of length ${value.length}`
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${value}`
  return typeof value
}
