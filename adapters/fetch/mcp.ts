/**
 * An MCP endpoint behind the Fetch gate, operation by operation: `mcpGate(auth, policy)`.
 *
 * @module
 */

import { requestOfFetch, responseOfFetch } from '../../src/fetch/request.js'
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
export interface FetchMcpAuthorized extends McpAuthorized {
  /** The JSON-RPC body as the gate parsed it (`undefined` without one): hand it to the transport. */
  readonly body: unknown
}

/** An MCP endpoint's handler: the request, the admission, the operation authorized. */
export type McpHandler<Rest extends unknown[]> = (
  request: Request,
  auth: Admission | undefined,
  mcp: FetchMcpAuthorized,
  ...rest: Rest
) => Response | Promise<Response>

/** Wraps an MCP endpoint's handler: see {@link mcpGate}. */
export type McpWrapper = <Rest extends unknown[]>(
  handler: McpHandler<Rest>,
) => (request: Request, ...rest: Rest) => Promise<Response>

function withHeaders(response: Response, headers: Readonly<Record<string, string>>): Response {
  let target = response
  const set = (into: Response) => {
    const joined: Record<string, string> = {}
    for (const name in headers) {
      const existing = into.headers.get(name)
      if (existing !== null) joined[name] = existing
    }
    merge(joined, headers)
    for (const name in joined) into.headers.set(name, joined[name] as string)
  }
  try {
    set(target)
  } catch {
    // Immutable headers (a `fetch()` response, `Response.redirect()`): a copy takes them.
    target = new Response(response.body, response)
    set(target)
  }
  return target
}

/**
 * Wraps the handler of an MCP endpoint (every method: POST, the GET stream, DELETE): the gate
 * decides, then the JSON-RPC body is read from a clone of the request (at most `maxBodyBytes`;
 * the handler still reads the original, or takes `mcp.body`), a request whose `Mcp-Method` /
 * `Mcp-Name` headers disagree with the body is refused (400, JSON-RPC error -32020), a call
 * outside the token's scopes gets 403 `insufficient_scope` naming exactly the tool's (or
 * resource's, prompt's) scopes, and the call is counted in its tool's windows. The handler's
 * response gets the rate-limit fields.
 *
 * @example
 * ```ts
 * const mcp = mcpGate(auth, { tools: { search: { scopes: ['mcp:search'] } } })
 * export const POST = mcp((request, user, { body }) => transport.handleRequest(request, { parsedBody: body }))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
/** An admitted request, as `auth.handle()` answers it (the entry point's `Admitted`). */
interface McpAdmitted {
  readonly auth: Admission | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly response?: undefined
}

/** A route guard, as `auth.requireScopes(…)` makes it (the entry point's `FetchGuard`). */
type McpGuard = (
  request: Request,
  admitted: McpAdmitted,
) => Response | undefined | Promise<Response | undefined>

/**
 * What `mcpGate` uses of what `tollgate(options)` returns (declared here, not imported from the
 * entry point, which exports `mcpGate`: no import runs back to it).
 */
export interface McpFetchTollgate {
  readonly gate: Gate
  requireScopes(...scopes: string[]): McpGuard
  handle(
    request: Request,
  ): Promise<McpAdmitted | { readonly response: Response; readonly auth?: undefined }>
}

export function mcpGate(auth: McpFetchTollgate, options: McpPolicyOptions = {}): McpWrapper {
  const { gate } = auth
  // The tool windows report through the gate's listener, as its own limiter does.
  const policy = createMcpPolicy(options, { onEvent: emitOf(gate) })
  const guards = new Map<BuiltRule, McpGuard | undefined>(
    policy.rules.map((rule) => [
      rule,
      rule.scopes.length === 0 ? undefined : auth.requireScopes(...rule.scopes),
    ]),
  )
  const refusal = (error: unknown, headers: Readonly<Record<string, string>>): Response => {
    if (gate.errorHandling === 'framework') throw error
    return withHeaders(responseOfFetch(renderMcpError(error)), headers)
  }

  return <Rest extends unknown[]>(handler: McpHandler<Rest>) =>
    async function tollgateMcp(request: Request, ...rest: Rest): Promise<Response> {
      const admitted = await auth.handle(request)
      if (admitted.response !== undefined) return admitted.response
      let body: unknown
      let decision: McpDecision
      try {
        if (request.method === 'POST') {
          body = parseMcpBody(await readFetchBody(request, policy.maxBodyBytes))
        }
        decision = policy.decide(request.method, body, requestOfFetch(request).headers)
      } catch (error) {
        return refusal(error, admitted.headers)
      }
      for (const rule of decision.rules) {
        const guard = guards.get(rule)
        if (guard === undefined) continue
        const refused = await guard(request, admitted)
        if (refused !== undefined) return refused
      }
      const view = requestOfFetch(request)
      const headers: Record<string, string> = { ...admitted.headers }
      try {
        const limited = policy.limit(decision, admitted.auth, view)
        if (limited !== undefined) {
          merge(headers, limited instanceof Promise ? await limited : limited)
        }
      } catch (error) {
        // Through the gate's refusal point: reported as the gate's refusals are.
        try {
          gate.authorize(
            () => {
              throw error
            },
            admitted.auth,
            view,
          )
        } catch (answered) {
          return refusal(answered, admitted.headers)
        }
      }
      const authorized: FetchMcpAuthorized = { ...policy.authorized(decision), body }
      const response = await handler(request, admitted.auth, authorized, ...rest)
      return withHeaders(response, headers)
    }
}
