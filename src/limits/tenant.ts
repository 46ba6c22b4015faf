/**
 * Tenant resolution: turns a verified token into the tenant it acts for (and that tenant's plan),
 * or refuses it. Runs only after signature, issuer, audience and time checks have passed, so
 * nothing here ever sees an unverified claim.
 *
 * @module
 */
import { InvalidTokenError, TenantRefusedError } from '../errors.js'
import { custom, fn, group, type Normalized } from '../options-kit.js'
import type { VerifiedToken } from '../token/verify.js'
import type { TokenClaims } from '../types.js'
import { fail, summarize } from '../validate.js'

export type { VerifiedToken } from '../token/verify.js'

/** The tenant a verified token acts for. */
export interface ResolvedTenant {
  /** Matches {@link TenantOptions.idPattern}; safe for Redis keys, logs and metrics labels. */
  readonly id: string
  /** The tenant's plan, when the policy or the plan claim gives one. */
  readonly plan: string | undefined
}

/** What a {@link TenantPolicy} decides about a tenant id taken from a verified token. */
export type TenantDecision =
  /** Let the request through, optionally on a given plan (overrides {@link TenantOptions.planClaim}). */
  | { readonly action: 'admit'; readonly plan?: string | undefined }
  /** A known tenant the deployment refuses (suspended, unpaid): 403 `ERR_TENANT_REFUSED`. */
  | { readonly action: 'refuse' }
  /** A tenant the deployment does not know: 401 `invalid_token`, `ERR_TENANT_UNKNOWN`. */
  | { readonly action: 'unknown' }

/**
 * Decides about a tenant id. Called once per request after the id passed validation; may be
 * async (a database or cache lookup). Errors it throws are not caught: they reach the
 * application's error handling as they are.
 */
export type TenantPolicy = (
  tenantId: string,
  verified: VerifiedToken,
) => TenantDecision | Promise<TenantDecision>

/**
 * Reads the tenant id from a verified token. Return `undefined` (or anything that is not a
 * string) when the token names no tenant: the request is refused with 401.
 */
export type TenantFunction = (verified: VerifiedToken) => unknown

/** How the tenant is resolved from a verified token. */
export interface TenantOptions {
  /**
   * Where the tenant id comes from: `'claim'` (default), the claim at {@link TenantOptions.claim};
   * `'realm'`, the Keycloak realm of the verified issuer (one realm per tenant); or a function of
   * the verified token. If the function throws, the request is refused with 401
   * `ERR_TENANT_INVALID` and the exception is kept as `cause`.
   */
  readonly from?: 'claim' | 'realm' | TenantFunction
  /**
   * The claim holding the tenant id, with `from: 'claim'`. A string is a dot path
   * (`'org.id'` reads `{ "org": { "id": "acme" } }`); an array lists the path segments as they
   * are, for claim names that contain dots (`['https://example.com/tenant']`). Only own
   * properties of plain objects are followed (never arrays, never the prototype); the segments
   * `__proto__`, `prototype` and `constructor` are refused. Default `'tenant'`.
   */
  readonly claim?: string | readonly string[]
  /**
   * What a valid tenant id looks like; ids longer than 256 characters are refused whatever it
   * says. Must be anchored (`^…$`) and must not use the `g` or `y` flags.
   * Default {@link DEFAULT_TENANT_ID_PATTERN}: an ASCII letter or digit, then up to 63 letters,
   * digits, `.`, `_`, `:` or `-`.
   */
  readonly idPattern?: RegExp
  /**
   * The claim holding the tenant's plan (same path rules as {@link TenantOptions.claim}). A value
   * that is not a plan name ({@link PLAN_NAME_PATTERN}) is ignored: the rate limiter then
   * applies its default plan. A plan from {@link TenantOptions.policy} wins over this claim.
   */
  readonly planClaim?: string | readonly string[]
  /** Refuses tenants or assigns plans; see {@link TenantPolicy}. Default: admit every valid id. */
  readonly policy?: TenantPolicy
}

/** Resolves the tenant of a verified token, or throws a tollgate error. */
export type TenantResolver = (verified: VerifiedToken) => ResolvedTenant | Promise<ResolvedTenant>

/** The default {@link TenantOptions.idPattern}. */
export const DEFAULT_TENANT_ID_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/

/** What a plan name looks like (plans also name rate-limit policies in response headers). */
export const PLAN_NAME_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** Hard cap on tenant id length, applied before any pattern. */
const MAX_TENANT_ID_LENGTH = 256
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor'])

/** The schema of {@link TenantOptions}: rules, defaults and the reference table. */
export const tenantSchema = group<TenantOptions>()(
  {
    from: custom(
      (value, path): 'claim' | 'realm' | TenantFunction => {
        const from = value ?? 'claim'
        if (typeof from === 'function') return from as TenantFunction
        if (from !== 'claim' && from !== 'realm') {
          fail(path, "must be 'claim', 'realm' or a function", from, { show: true })
        }
        return from
      },
      { accepts: "'claim' | 'realm' | (verified) => id", default: "'claim'" },
    ),
    claim: custom(
      (value, path, { from }): readonly string[] | undefined => {
        if (from === 'claim') return pathOption(value ?? 'tenant', path)
        if (value !== undefined) {
          fail(path, 'only applies with from: \'claim\'; remove it or drop "from"')
        }
        return undefined
      },
      { accepts: 'dot path or array of segments', default: "'tenant'" },
    ),
    idPattern: custom(patternOption, {
      accepts: 'RegExp, anchored, without g or y',
      default: String(DEFAULT_TENANT_ID_PATTERN),
    }),
    planClaim: custom(
      (value, path) => (value === undefined ? undefined : pathOption(value, path)),
      { accepts: 'dot path or array of segments' },
    ),
    policy: fn<TenantPolicy>('(id, verified) => decision', 'admit every valid id'),
  },
  {
    absent: 'required',
    finish: ({ from, claim, idPattern, planClaim, policy }) =>
      Object.freeze({
        readId: idReader(from, claim),
        idPattern,
        planPath: planClaim,
        policy,
      }),
  },
)

/** {@link TenantOptions}, validated: what the resolver needs, ready to use. */
export type NormalizedTenantOptions = Normalized<typeof tenantSchema>

/**
 * Validates {@link TenantOptions} once (`createGate` calls it for `options.tenant`).
 *
 * @throws TypeError naming the option and what to change.
 */
export function normalizeTenantOptions(options: unknown): NormalizedTenantOptions {
  return tenantSchema.read(options, 'tenant', {})
}

/**
 * The plan a tenant is metered on, from its id and the plan its claim or policy gave. With rate
 * limits, the limiter's rule (`tenantPlans`, then that plan if configured, then `defaultPlan`), so
 * that `auth.plan`, events and metrics name the plan the request was metered on.
 */
export type PlanNamer = (id: string, plan: string | undefined) => string | undefined

/**
 * Returns the resolver the gate calls after verification.
 *
 * The resolver throws `InvalidTokenError` with code `ERR_TENANT_INVALID` (401) when the token
 * names no tenant or a malformed one, `ERR_TENANT_UNKNOWN` (401) when the policy does not know
 * it, and `TenantRefusedError` (`ERR_TENANT_REFUSED`, 403) when the policy refuses it.
 *
 * @example
 * ```ts
 * const resolveTenant = createTenantResolver(
 *   normalizeTenantOptions({ claim: 'org.id', policy: async (id) => ((await db.suspended(id)) ? { action: 'refuse' } : { action: 'admit' }) }),
 * )
 * ```
 */
export function createTenantResolver(
  options: NormalizedTenantOptions,
  planName: PlanNamer = (_id, plan) => plan,
): TenantResolver {
  const { readId, idPattern, planPath, policy } = options
  const invalid = (reason: 'tenant_missing' | 'tenant_malformed', cause?: unknown) =>
    new InvalidTokenError({ code: 'ERR_TENANT_INVALID', reason, cause })

  function validId(verified: VerifiedToken): string {
    let id: unknown
    try {
      id = readId(verified)
    } catch (error) {
      throw invalid('tenant_malformed', error)
    }
    if (id === undefined || id === null) throw invalid('tenant_missing')
    if (typeof id !== 'string' || id.length > MAX_TENANT_ID_LENGTH || !idPattern.test(id)) {
      throw invalid('tenant_malformed')
    }
    return id
  }

  function planFromClaim(verified: VerifiedToken): string | undefined {
    if (planPath === undefined) return undefined
    const plan = readPath(verified.claims, planPath)
    return typeof plan === 'string' && PLAN_NAME_PATTERN.test(plan) ? plan : undefined
  }

  if (policy === undefined) {
    return (verified) => {
      const id = validId(verified)
      return { id, plan: planName(id, planFromClaim(verified)) }
    }
  }

  return async (verified) => {
    const id = validId(verified)
    const decision: unknown = await policy(id, verified)
    switch (decisionAction(decision)) {
      case 'refuse':
        throw new TenantRefusedError()
      case 'unknown':
        throw new InvalidTokenError({ code: 'ERR_TENANT_UNKNOWN', reason: 'tenant_unknown' })
      case 'admit': {
        const plan = (decision as { plan?: unknown }).plan
        if (plan === undefined) return { id, plan: planName(id, planFromClaim(verified)) }
        if (typeof plan === 'string' && PLAN_NAME_PATTERN.test(plan)) {
          return { id, plan: planName(id, plan) }
        }
        throw new TypeError(
          `"tenant.policy" returned an invalid plan (got ${summarize(plan)}); a plan name must match ${PLAN_NAME_PATTERN}`,
        )
      }
    }
  }
}

function idReader(
  from: 'claim' | 'realm' | TenantFunction,
  path: readonly string[] | undefined,
): TenantFunction {
  if (typeof from === 'function') return from
  if (from === 'realm') return (verified) => verified.realm
  const segments = path as readonly string[]
  return (verified) => readPath(verified.claims, segments)
}

function patternOption(value: unknown, path: string): RegExp {
  if (value === undefined) return DEFAULT_TENANT_ID_PATTERN
  if (!(value instanceof RegExp)) {
    fail(path, 'must be a RegExp', value)
  }
  if (value.global || value.sticky) {
    // Both make test() stateful through lastIndex: the same id would pass, then fail.
    fail(path, 'must not use the g or y flags; remove them')
  }
  if (!value.source.startsWith('^') || !value.source.endsWith('$')) {
    fail(path, 'must be anchored: start it with ^ and end it with $')
  }
  return value
}

function pathOption(value: unknown, name: string): readonly string[] {
  const segments = typeof value === 'string' ? value.split('.') : value
  if (
    !Array.isArray(segments) ||
    segments.length === 0 ||
    segments.length > 16 ||
    !segments.every((segment) => typeof segment === 'string' && segment.length > 0)
  ) {
    fail(
      name,
      "must be a dot path such as 'org.id', or an array of 1 to 16 non-empty segments",
      value,
    )
  }
  for (const segment of segments as string[]) {
    if (FORBIDDEN_SEGMENTS.has(segment)) {
      fail(name, `must not contain the segment '${segment}'; name a claim instead`)
    }
  }
  return Object.freeze([...(segments as string[])])
}

/** Follows own properties of plain objects only: never arrays, never inherited properties. */
function readPath(claims: TokenClaims, path: readonly string[]): unknown {
  let value: unknown = claims
  for (let i = 0; i < path.length; i++) {
    const segment = path[i] as string
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
    if (!Object.hasOwn(value, segment)) return undefined
    value = (value as Record<string, unknown>)[segment]
  }
  return value
}

function decisionAction(decision: unknown): TenantDecision['action'] {
  if (typeof decision === 'object' && decision !== null) {
    const action = (decision as { action?: unknown }).action
    if (action === 'admit' || action === 'refuse' || action === 'unknown') return action
  }
  throw new TypeError(
    `"tenant.policy" must return { action: 'admit' | 'refuse' | 'unknown' } (got ${summarize(decision)})`,
  )
}
