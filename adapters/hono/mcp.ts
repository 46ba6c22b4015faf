/**
 * An MCP endpoint behind the Hono gate, operation by operation: `mcpGate(auth, policy)`.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from 'hono'

import { requestOfFetch } from '../../src/fetch/request.js'
import { emitOf, type Gate } from '../../src/gate/gate.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import { parseMcpBody, readFetchBody } from '../../src/mcp/body.js'
import {
  type BuiltRule,
  createMcpPolicy,
  type McpAuthorized,
  type McpDecision,
  type McpPolicyOptions,
  merge,
} from '../../src/mcp/policy.js'
import type { Admission } from '../../src/types.js'

/** What the handler learns of the MCP request: the operation authorized, and the parsed body. */
export interface HonoMcpAuthorized extends McpAuthorized {
  /** The JSON-RPC body as the gate parsed it (`undefined` without one): hand it to the transport. */
  readonly body: unknown
}

/** What `mcpGate` adds to a Hono app's variables, for `new Hono<McpEnv>()` where wanted. */
export interface McpEnv {
  Variables: { auth: Admission | undefined; mcp: HonoMcpAuthorized }
}

/**
 * Middleware for every method of an MCP endpoint (`app.all('/mcp', …)`): runs the gate when it
 * has not decided on the request, reads the JSON-RPC body from a clone of the request (at most
 * `maxBodyBytes`), refuses headers that disagree with the body (400, JSON-RPC -32020), answers
 * 403 `insufficient_scope` naming exactly the scopes of the tool, resource or prompt called,
 * counts the call in the tool's own windows, and sets `c.get('mcp')` (its `body` is the parsed
 * body, for the transport's `parsedBody`).
 *
 * @example
 * ```ts
 * app.all('/mcp', mcpGate(auth, { tools: { search: { scopes: ['mcp:search'] } } }), (c) =>
 *   transport.handleRequest(c.req.raw, { parsedBody: c.get('mcp').body }))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
/**
 * What `mcpGate` uses of the middleware `tollgate(options)` returns (declared here, not imported
 * from the entry point, which exports `mcpGate`: no import runs back to it).
 */
export interface McpGateMiddleware extends MiddlewareHandler {
  readonly gate: Gate
  requireScopes(...scopes: string[]): MiddlewareHandler
}

export function mcpGate(
  auth: McpGateMiddleware,
  options: McpPolicyOptions = {},
): MiddlewareHandler {
  const { gate } = auth
  // The tool windows report through the gate's listener, as its own limiter does.
  const policy = createMcpPolicy(options, { onEvent: emitOf(gate) })
  const guards = new Map<BuiltRule, MiddlewareHandler | undefined>(
    policy.rules.map((rule) => [
      rule,
      rule.scopes.length === 0 ? undefined : auth.requireScopes(...rule.scopes),
    ]),
  )
  const refuse = (error: unknown): Response => {
    if (gate.errorHandling === 'framework') throw error
    const { status, headers, body } = renderMcpError(error)
    return new Response(body, { status, headers })
  }
  /** Runs a middleware of the gate: its answer when it refused, else `undefined`. */
  const run = async (middleware: MiddlewareHandler, c: Context): Promise<Response | undefined> => {
    let passed = false
    const answer = await middleware(c, async () => {
      passed = true
    })
    return passed ? undefined : (answer ?? c.res)
  }

  return async function tollgateMcp(c, next) {
    // The gate first: a request without valid credentials learns nothing of the MCP checks.
    const refused = await run(auth, c)
    if (refused !== undefined) return refused
    const raw = c.req.raw
    let body: unknown
    let decision: McpDecision
    try {
      if (raw.method === 'POST') body = parseMcpBody(await readFetchBody(raw, policy.maxBodyBytes))
      decision = policy.decide(raw.method, body, requestOfFetch(raw).headers)
    } catch (error) {
      return refuse(error)
    }
    for (const rule of decision.rules) {
      const guard = guards.get(rule)
      if (guard === undefined) continue
      const answer = await run(guard, c)
      if (answer !== undefined) return answer
    }
    if (policy.limited) {
      const view = requestOfFetch(raw, body)
      const admission = c.get('auth') as Admission | undefined
      try {
        const limited = policy.limit(decision, admission, view)
        const headers = limited instanceof Promise ? await limited : limited
        if (headers !== undefined) {
          const joined: Record<string, string> = {}
          for (const name in headers) {
            const existing = c.res.headers.get(name)
            if (existing !== null) joined[name] = existing
          }
          merge(joined, headers)
          for (const name in joined) c.header(name, joined[name] as string)
        }
      } catch (error) {
        // Through the gate's refusal point: reported as the gate's refusals are.
        try {
          gate.authorize(
            () => {
              throw error
            },
            admission,
            view,
          )
        } catch (answered) {
          return refuse(answered)
        }
      }
    }
    c.set('mcp' as never, { ...policy.authorized(decision), body } as never)
    await next()
  }
}
