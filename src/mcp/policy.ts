/**
 * Per-operation policy for an MCP endpoint: the scopes each tool, resource (by URI pattern) and
 * prompt needs, a default for every other method, and rate-limit windows per (tenant, tool). Built
 * and validated once; per request it only looks the operation up. The adapters run each rule's
 * scopes through their own guard (so that the 403 and its challenge are the gate's own) and call
 * {@link McpPolicy.limit} for the windows.
 *
 * @module
 */
import { createEmit, type GateEvent, type GateEventListener } from '../events.js'
import { type Guard, requireScopes } from '../gate/guards.js'
import type { FlexibleLimiterFactory } from '../limits/flexible.js'
import { normalizeRateLimitOptions } from '../limits/options.js'
import {
  createTenantLimiter,
  type LimiterEmit,
  type RateLimitHeaderMode,
  type RateLimitWindow,
  type RedisClientLike,
  type StoreFailurePolicy,
  type TenantLimiter,
} from '../limits/rate-limit.js'
import { PLAN_NAME_PATTERN, type VerifiedToken } from '../limits/tenant.js'
import type { SharedStore } from '../shared-store.js'
import type { Admission, HeadersLike, RequestLike } from '../types.js'
import { type McpMessages, type McpOperation, readMcpMessages } from './operation.js'

/** What an operation needs. */
export interface McpRule {
  /** Scopes the token must all have (exact match against `scope` or `scp`). Default: none beyond the gate's admission. */
  readonly scopes?: readonly string[]
}

/** What a tool needs, and its own rate-limit windows. */
export interface McpToolRule extends McpRule {
  /**
   * Windows counted per (tenant, tool), on top of the tenant's own limit: an expensive tool gets
   * its own budget. Same shape as `rateLimit.windows`; the `RateLimit-Policy` item is the
   * window's `name`, else the tool's `policy`.
   */
  readonly rateLimit?: readonly RateLimitWindow[]
  /**
   * The plan name of the tool's windows ({@link PLAN_NAME_PATTERN}), named in `RateLimit-Policy`
   * and in the store's keys. Default `tool.<name>`; required when the tool's name does not fit.
   */
  readonly policy?: string
}

/** A resource rule: the URIs it governs, and what they need. */
export interface McpResourceRule extends McpRule {
  /**
   * A URI, or a pattern where `*` matches any run of characters (`file:///public/*`), or a
   * RegExp tested against the whole URI. The first rule that matches governs.
   */
  readonly uri: string | RegExp
}

/** Where the per-tool windows are counted: the same stores as `rateLimit`. */
export interface McpRateLimitOptions {
  /** As `rateLimit.store`. Default `'memory'`. */
  readonly store?:
    | 'memory'
    | { readonly redis: RedisClientLike }
    | { readonly flexible: FlexibleLimiterFactory }
    | { readonly shared: SharedStore }
  /** Prefix of the store's keys (`<prefix>:{<tenant>}:<policy>:<seconds>`). Default `'tollgate:mcp'`. */
  readonly keyPrefix?: string
  /** As `rateLimit.storeTimeoutMs`. */
  readonly storeTimeoutMs?: number
  /** As `rateLimit.onStoreError`. */
  readonly onStoreError?: StoreFailurePolicy
  /** As `rateLimit.headers`. */
  readonly headers?: RateLimitHeaderMode
  /** As `rateLimit.maxTenants`: (tenant, tool) windows held in process memory. */
  readonly maxTenants?: number
}

/** The policy of one MCP endpoint. */
export interface McpPolicyOptions {
  /** Tools by name. A tool not listed falls under `default`. */
  readonly tools?: Readonly<Record<string, McpToolRule>>
  /** Resource rules, first match wins (`resources/read`, `resources/subscribe`, `resources/unsubscribe`). */
  readonly resources?: readonly McpResourceRule[]
  /** Prompts by name (`prompts/get`). */
  readonly prompts?: Readonly<Record<string, McpRule>>
  /**
   * Every other operation: `initialize`, `tools/list`, notifications, the GET stream, DELETE, and
   * tools, resources and prompts without a rule of their own. Default: no scope beyond admission.
   */
  readonly default?: McpRule
  /** Where the tools' `rateLimit` windows are counted. */
  readonly rateLimit?: McpRateLimitOptions
  /**
   * Largest body an adapter reads itself when the framework has not parsed it (bytes, 1 KiB to
   * 64 MiB). Default 4 MiB. A larger one is refused with 413.
   */
  readonly maxBodyBytes?: number
}

/** A rule as built: its scopes and the guard that checks them (`undefined` when none). */
export interface BuiltRule {
  readonly scopes: readonly string[]
  readonly guard: Guard | undefined
  /** The tool's plan name, when it has windows of its own. */
  readonly plan: string | undefined
}

/** What the policy says of one request. */
export interface McpDecision extends McpMessages {
  /** The rules to check, in body order, each once. */
  readonly rules: readonly BuiltRule[]
}

/**
 * What a handler learns of the operation it serves (`req.mcp` and the like): the method and
 * target of a single message, every message's for a batch.
 */
export interface McpAuthorized {
  /** The JSON-RPC method of a single message; `undefined` for a batch and a request without a body. */
  readonly method: string | undefined
  /** Its tool or prompt name, or resource URI. */
  readonly name: string | undefined
  /** Every message's operation, in body order. */
  readonly operations: readonly McpOperation[]
}

/** The per-operation policy of one MCP endpoint, built once. */
export interface McpPolicy {
  /** Every rule built, for the adapters to wrap each in their own guard once. */
  readonly rules: readonly BuiltRule[]
  /** Largest body an adapter reads itself. */
  readonly maxBodyBytes: number
  /** Some tool has windows of its own: {@link McpPolicy.limit} may count the request. */
  readonly limited: boolean
  /**
   * Reads and checks the request's operations and finds their rules.
   *
   * @throws McpRequestError on a header/body disagreement or an unreadable body.
   */
  decide(method: string | undefined, body: unknown, headers: HeadersLike): McpDecision
  /**
   * Counts the request in the windows of the tools it calls, per (tenant, tool): the rate-limit
   * fields to add, synchronously with the memory store, a promise with another; `undefined` when
   * no tool it calls has windows.
   *
   * @throws RateLimitedError (429), ServiceUnavailableError (503) as the tenant limiter does.
   */
  limit(
    decision: McpDecision,
    auth: Admission | undefined,
    request: RequestLike,
  ): Record<string, string> | Promise<Record<string, string>> | undefined
  /** What the handler is told of the authorized operation. */
  authorized(decision: McpDecision): McpAuthorized
}

const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

function fail(path: string, message: string): never {
  throw new TypeError(`mcp policy: ${path} ${message}`)
}

function ruleOf(rule: unknown, path: string, plan?: string): BuiltRule {
  if (typeof rule !== 'object' || rule === null) fail(path, 'must be an object ({ scopes })')
  const { scopes } = rule as McpRule
  if (scopes !== undefined && !Array.isArray(scopes)) {
    fail(`${path}.scopes`, 'must be an array of scope names')
  }
  const list = Object.freeze([...(scopes ?? [])])
  return Object.freeze({ scopes: list, guard: guardOf(list, `${path}.scopes`), plan })
}

/** The guard of a rule's scopes, which requireScopes validates (no spaces, quotes or backslashes). */
function guardOf(scopes: readonly string[], path: string): Guard | undefined {
  if (scopes.length === 0) return undefined
  try {
    return requireScopes(...scopes)
  } catch (error) {
    fail(
      path,
      `must be scope names, each without spaces, quotes or backslashes (${(error as Error).message})`,
    )
  }
}

function patternOf(uri: unknown, path: string): RegExp {
  if (uri instanceof RegExp) return new RegExp(`^(?:${uri.source})$`, uri.flags.replace('g', ''))
  if (typeof uri !== 'string' || uri === '')
    fail(path, 'must be a URI, a pattern with * or a RegExp')
  const source = uri
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
  return new RegExp(`^${source}$`, 's')
}

/**
 * Builds an MCP endpoint's policy.
 *
 * @example
 * ```ts
 * const policy = createMcpPolicy({
 *   default: { scopes: ['mcp:use'] },
 *   tools: { search: { scopes: ['mcp:search'], rateLimit: [{ points: 10, durationSeconds: 60 }] } },
 *   resources: [{ uri: 'file:///reports/*', scopes: ['reports:read'] }],
 * })
 * ```
 * @param events.onEvent Receives the tool windows' limiter events (`rate_limited`,
 * `limiter_store_error`, `limiter_fallback`), as the gate's limiter reports its own, each with
 * `tool` naming the tool; exceptions it throws are swallowed. The adapters' `mcpGate` passes
 * the gate's `onEvent`.
 * @throws TypeError when an option is invalid; the message names it.
 */
export function createMcpPolicy(
  options: McpPolicyOptions = {},
  events: { readonly onEvent?: GateEventListener | undefined } = {},
): McpPolicy {
  if (typeof options !== 'object' || options === null) fail('options', 'must be an object')
  const fallback = ruleOf(options.default ?? {}, 'default')
  const tools = new Map<string, BuiltRule>()
  const plans: Record<string, readonly RateLimitWindow[]> = {}
  /** The tool of each plan, for the limiter's events. */
  const toolOf = new Map<string, string>()
  for (const [name, rule] of Object.entries(options.tools ?? {})) {
    const path = `tools.${name}`
    let plan: string | undefined
    if (rule?.rateLimit !== undefined) {
      plan = rule.policy ?? `tool.${name}`
      if (!PLAN_NAME_PATTERN.test(plan)) {
        fail(
          `${path}.policy`,
          `must be set to a name matching ${PLAN_NAME_PATTERN} (the tool's name does not fit one)`,
        )
      }
      if (Object.hasOwn(plans, plan)) fail(`${path}.policy`, `names a policy used twice (${plan})`)
      plans[plan] = rule.rateLimit
      toolOf.set(plan, name)
    }
    tools.set(name, ruleOf(rule, path, plan))
  }
  const prompts = new Map<string, BuiltRule>()
  for (const [name, rule] of Object.entries(options.prompts ?? {})) {
    prompts.set(name, ruleOf(rule, `prompts.${name}`))
  }
  if (options.resources !== undefined && !Array.isArray(options.resources)) {
    fail('resources', 'must be an array of { uri, scopes }')
  }
  const resources = (options.resources ?? []).map((rule, index) => ({
    pattern: patternOf(rule?.uri, `resources[${index}].uri`),
    rule: ruleOf(rule, `resources[${index}]`),
  }))
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1024 || maxBodyBytes > 64 * 1024 * 1024) {
    fail('maxBodyBytes', 'must be a whole number of bytes from 1024 to 67108864')
  }
  const emit = createEmit(events.onEvent)
  const limiter = limiterOf(
    plans,
    options.rateLimit,
    emit && ((event, plan) => emit({ ...event, tool: toolOf.get(plan) } as GateEvent)),
  )

  function ruleFor(operation: McpOperation): BuiltRule {
    const { kind, name } = operation
    if (kind === undefined || name === undefined) return fallback
    if (kind === 'tool') return tools.get(name) ?? fallback
    if (kind === 'prompt') return prompts.get(name) ?? fallback
    for (const resource of resources) if (resource.pattern.test(name)) return resource.rule
    return fallback
  }

  const DEFAULT_ONLY: readonly BuiltRule[] = Object.freeze([fallback])

  function decide(method: string | undefined, body: unknown, headers: HeadersLike): McpDecision {
    const messages = readMcpMessages(method, body, headers)
    const { operations } = messages
    if (operations.length === 0) return { ...messages, rules: DEFAULT_ONLY }
    if (operations.length === 1) {
      return { operations, batch: messages.batch, rules: [ruleFor(operations[0] as McpOperation)] }
    }
    return { ...messages, rules: [...new Set(operations.map(ruleFor))] }
  }

  function limit(
    decision: McpDecision,
    auth: Admission | undefined,
    request: RequestLike,
  ): Record<string, string> | Promise<Record<string, string>> | undefined {
    if (limiter === undefined) return undefined
    // Every call of a batch is counted, each in its tool's windows.
    let plansHit: string[] | undefined
    for (const operation of decision.operations) {
      if (operation.kind !== 'tool') continue
      const plan = ruleFor(operation).plan
      if (plan === undefined) continue
      if (plansHit === undefined) plansHit = []
      plansHit.push(plan)
    }
    if (plansHit === undefined) return undefined
    // The tenant the gate resolved; without tenant resolution, the token's subject (or client).
    // Encoded so that no subject can break out of the store's key (`{`, `}`, `:`).
    const id = auth?.tenant ?? encodeURIComponent(auth?.subject ?? auth?.clientId ?? '')
    // No cost function is configured on these windows: the token is never read by the limiter.
    const verified = undefined as unknown as VerifiedToken
    const { consumeNow } = limiter
    if (consumeNow !== undefined) {
      const headers: Record<string, string> = {}
      for (const plan of plansHit) merge(headers, consumeNow({ id, plan }, request, verified))
      return headers
    }
    return (async () => {
      const headers: Record<string, string> = {}
      for (const plan of plansHit) {
        merge(headers, await limiter.consume({ id, plan }, request, verified))
      }
      return headers
    })()
  }

  function authorized(decision: McpDecision): McpAuthorized {
    const { operations, batch } = decision
    const single = !batch && operations.length === 1 ? operations[0] : undefined
    return { method: single?.method, name: single?.name, operations }
  }

  const rules = [fallback, ...tools.values(), ...prompts.values(), ...resources.map((r) => r.rule)]
  return Object.freeze({
    rules,
    maxBodyBytes,
    limited: limiter !== undefined,
    decide,
    limit,
    authorized,
  })
}

function limiterOf(
  plans: Record<string, readonly RateLimitWindow[]>,
  options: McpRateLimitOptions | undefined,
  emit: LimiterEmit,
): TenantLimiter | undefined {
  const names = Object.keys(plans)
  if (names.length === 0) {
    if (options !== undefined) fail('rateLimit', 'is set but no tool has rateLimit windows')
    return undefined
  }
  let normalized: ReturnType<typeof normalizeRateLimitOptions>
  try {
    normalized = normalizeRateLimitOptions({
      keyPrefix: 'tollgate:mcp',
      ...options,
      plans,
      defaultPlan: names[0],
    })
  } catch (error) {
    // The limiter's own messages name `rateLimit.plans.<policy>`: say where that is here.
    throw new TypeError(`mcp policy: ${(error as Error).message} (tools' rateLimit windows)`, {
      cause: error,
    })
  }
  return createTenantLimiter(normalized, { emit })
}

/**
 * Adds a tool's rate-limit fields to those of the request: draft-10's `RateLimit-Policy` and
 * `RateLimit` are lists, so the tool's items join the tenant's; the legacy fields are replaced by
 * the tool's, the narrower budget.
 */
export function merge(
  into: Record<string, string>,
  headers: Readonly<Record<string, string>>,
): void {
  for (const name in headers) {
    const value = headers[name] as string
    const lower = name.toLowerCase()
    const existing = into[name]
    into[name] =
      existing !== undefined && (lower === 'ratelimit-policy' || lower === 'ratelimit')
        ? `${existing}, ${value}`
        : value
  }
}

/**
 * The fields to set on a response that may hold rate-limit fields already (the tenant's): the
 * tool's, joined by {@link merge} to the response's own, which `existing` reads by name.
 */
export function joinedHeaders(
  headers: Readonly<Record<string, string>>,
  existing: (name: string) => string | undefined,
): Record<string, string> {
  const joined: Record<string, string> = {}
  for (const name in headers) {
    const value = existing(name)
    if (value !== undefined) joined[name] = value
  }
  merge(joined, headers)
  return joined
}
