/**
 * An MCP endpoint behind the Koa gate, operation by operation: `mcpGate(auth, policy)`.
 *
 * @module
 */
import type { Context, Middleware } from 'koa'
import { emitOf, type Gate } from '../../src/gate/gate.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import { parseMcpBody, readNodeBody } from '../../src/mcp/body.js'
import {
  type BuiltRule,
  createMcpPolicy,
  type McpAuthorized,
  type McpDecision,
  type McpPolicyOptions,
  merge,
} from '../../src/mcp/policy.js'
import type { Admission, RequestLike } from '../../src/types.js'

/** The gate's part of `ctx.state` (as `TollgateState` of the entry point). */
interface GateState {
  auth?: Admission
}

/** What `mcpGate` adds to `ctx.state`: the MCP operation the request was authorized for. */
export interface McpState extends GateState {
  mcp?: McpAuthorized
}

/**
 * What `mcpGate` uses of the middleware `tollgate(options)` returns (declared here, not imported
 * from the entry point, which exports `mcpGate`: no import runs back to it).
 */
export interface McpGateMiddleware extends Middleware<GateState> {
  readonly gate: Gate
  requireScopes(...scopes: string[]): Middleware<GateState>
}

function requestOf(ctx: Context, body: unknown): RequestLike {
  const socket = ctx.req.socket
  const secure = (socket as { encrypted?: boolean }).encrypted === true
  const { headers, method, originalUrl: url } = ctx
  return { headers, rawHeaders: ctx.req.rawHeaders, method, url, body, secure, socket }
}

/**
 * Middleware for every method of an MCP endpoint (`router.all('/mcp', …)`): runs the gate when it
 * has not decided on the request, reads the JSON-RPC body (`ctx.request.body` when a body parser
 * ran, else at most `maxBodyBytes` itself, then set on `ctx.request.body` for the transport),
 * refuses headers that disagree with the body (400, JSON-RPC -32020), answers 403
 * `insufficient_scope` naming exactly the scopes of the tool, resource or prompt called, counts
 * the call in the tool's own windows, and sets `ctx.state.mcp`.
 *
 * @example
 * ```ts
 * router.all('/mcp', mcpGate(auth, { tools: { search: { scopes: ['mcp:search'] } } }), async (ctx) => {
 *   ctx.respond = false
 *   await transport.handleRequest(ctx.req, ctx.res, ctx.request.body)
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function mcpGate(
  auth: McpGateMiddleware,
  options: McpPolicyOptions = {},
): Middleware<McpState> {
  const { gate } = auth
  // The tool windows report through the gate's listener, as its own limiter does.
  const policy = createMcpPolicy(options, { onEvent: emitOf(gate) })
  const guards = new Map<BuiltRule, Middleware<GateState> | undefined>(
    policy.rules.map((rule) => [
      rule,
      rule.scopes.length === 0 ? undefined : auth.requireScopes(...rule.scopes),
    ]),
  )
  const refuse = (ctx: Context, error: unknown): void => {
    if (gate.errorHandling === 'framework') throw error
    const { status, headers, body } = renderMcpError(error)
    ctx.status = status
    ctx.set(headers)
    ctx.body = body
  }
  /** Runs a middleware of the gate; whether it let the request on. */
  const passes = async (middleware: Middleware<GateState>, ctx: Context): Promise<boolean> => {
    let passed = false
    await middleware(ctx as Parameters<typeof middleware>[0], async () => {
      passed = true
    })
    return passed
  }

  return async function tollgateMcp(ctx, next) {
    // The gate first: a request without valid credentials learns nothing of the MCP checks.
    if (!(await passes(auth, ctx))) return
    const request = ctx.request as { body?: unknown }
    let decision: McpDecision
    try {
      if (ctx.method === 'POST' && request.body === undefined) {
        request.body = parseMcpBody(await readNodeBody(ctx.req, policy.maxBodyBytes))
      }
      decision = policy.decide(ctx.method, request.body, ctx.headers)
    } catch (error) {
      return refuse(ctx, error)
    }
    for (const rule of decision.rules) {
      const guard = guards.get(rule)
      if (guard !== undefined && !(await passes(guard, ctx))) return
    }
    if (policy.limited) {
      const view = requestOf(ctx, request.body)
      try {
        const limited = policy.limit(decision, ctx.state.auth, view)
        const headers = limited instanceof Promise ? await limited : limited
        if (headers !== undefined) {
          const joined: Record<string, string> = {}
          for (const name in headers) {
            const existing = ctx.response.get(name)
            if (existing !== '') joined[name] = existing
          }
          merge(joined, headers)
          ctx.set(joined)
        }
      } catch (error) {
        // Through the gate's refusal point: reported as the gate's refusals are.
        try {
          gate.authorize(
            () => {
              throw error
            },
            ctx.state.auth,
            view,
          )
        } catch (answered) {
          return refuse(ctx, answered)
        }
      }
    }
    ctx.state.mcp = policy.authorized(decision)
    await next()
  }
}
