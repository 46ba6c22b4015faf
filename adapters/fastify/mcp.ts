/**
 * An MCP endpoint behind the Fastify gate, operation by operation: `mcpGate(auth, policy)`.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'

import { emitOf, type Gate } from '../../src/gate/gate.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import { parsedBodyOf, parseMcpBody, readNodeBody } from '../../src/mcp/body.js'
import {
  type BuiltRule,
  createMcpPolicy,
  joinedHeaders,
  type McpAuthorized,
  type McpDecision,
  type McpPolicyOptions,
} from '../../src/mcp/policy.js'
import type { Admission } from '../../src/types.js'
import { handOver, keepHeaders, requestOf, send } from './translate.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by tollgate's `mcpGate`: the MCP operation the request was authorized for. */
    mcp?: McpAuthorized
  }
}

/** A `preHandler` in callback style (the entry point's `TollgateHook`). */
type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

/**
 * Where the plugin keeps its hook that runs the gate only, when it has not decided on the request
 * (Express's middleware itself does that; a Fastify plugin is no hook). Under a symbol: it is for
 * `mcpGate`, not an API of the plugin.
 */
export const RUN_GATE: unique symbol = Symbol('tollgate.runGate')

/**
 * What `mcpGate` uses of the plugin `tollgate(options)` returns (declared here, not imported from
 * the entry point, which exports `mcpGate`: no import runs back to it).
 */
export interface McpGatePlugin {
  readonly gate: Gate
  requireScopes(...scopes: string[]): Hook
  readonly [RUN_GATE]: Hook
}

/**
 * The body as the MCP policy reads it: as Fastify's parsers left it (text its `text/plain` parser
 * left is parsed), else read from the stream, at most `maxBodyBytes` (a catch-all parser that
 * leaves the body unread).
 */
function bodyOf(request: FastifyRequest, maxBytes: number): unknown {
  if (request.method !== 'POST') return request.body
  const parsed = parsedBodyOf(request.body, request.headers['content-type'])
  return parsed !== undefined ? parsed : readNodeBody(request.raw, maxBytes).then(parseMcpBody)
}

/**
 * A `preHandler` for every method of an MCP endpoint (`app.route({ method: ['POST', 'GET',
 * 'DELETE'], url: '/mcp', preHandler: mcpGate(auth, policy), handler })`): runs the gate when it
 * has not decided on the request (the plugin registered, or the route guarded on its own), reads
 * the JSON-RPC body (Fastify's parsed `request.body`; text or bytes a parser left are parsed, a
 * body no parser read is read from the stream, at most `maxBodyBytes`, and set on
 * `request.body` for the transport), refuses a request whose `Mcp-Method` / `Mcp-Name` headers
 * disagree with the body (400, JSON-RPC error -32020), answers 403 `insufficient_scope` naming
 * exactly the scopes of the tool, resource or prompt called, and counts the call in the tool's
 * own windows. Then `request.mcp` says which operation was authorized, and the rate-limit fields
 * are on `reply.raw` too, for a transport that writes to it after `reply.hijack()`.
 *
 * @example
 * ```ts
 * app.route({
 *   method: ['POST', 'GET', 'DELETE'],
 *   url: '/mcp',
 *   preHandler: mcpGate(auth, { tools: { search: { scopes: ['mcp:search'] } } }),
 *   handler: async (request, reply) => {
 *     reply.hijack()
 *     await transport.handleRequest(request.raw, reply.raw, request.body)
 *   },
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
export function mcpGate(auth: McpGatePlugin, options: McpPolicyOptions = {}): Hook {
  const { gate } = auth
  // The tool windows report through the gate's listener, as its own limiter does.
  const policy = createMcpPolicy(options, { onEvent: emitOf(gate) })
  const runGate = auth[RUN_GATE]
  // Each rule's scopes checked by the gate's own guard: its 403 and challenge, its decision.
  const guards = new Map<BuiltRule, Hook | undefined>(
    policy.rules.map((rule) => [
      rule,
      rule.scopes.length === 0 ? undefined : auth.requireScopes(...rule.scopes),
    ]),
  )
  const refuse = (error: unknown, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    if (gate.errorHandling === 'framework') {
      keepHeaders(reply, error)
      return void done(error as Error)
    }
    // An answer from a hook: Fastify skips the rest of the chain; `done` is not called.
    send(reply, renderMcpError(error))
  }

  function limit(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    decision: McpDecision,
  ): void {
    const admission = (request as { auth?: Admission | undefined }).auth
    // No tool with windows of its own: nothing to count, no closure built.
    if (!policy.limited) {
      request.mcp = policy.authorized(decision)
      handOver(reply)
      return void done()
    }
    const view = requestOf(request)
    const finish = (headers: Record<string, string> | undefined): void => {
      if (reply.sent) return
      if (headers !== undefined) {
        reply.headers(
          joinedHeaders(headers, (name) => {
            const value = reply.getHeader(name)
            return typeof value === 'string' ? value : undefined
          }),
        )
      }
      request.mcp = policy.authorized(decision)
      handOver(reply)
      done()
    }
    // Through the gate's refusal point: reported as the gate's refusals are.
    const refused = (error: unknown): void => {
      try {
        gate.authorize(
          () => {
            throw error
          },
          admission,
          view,
        )
      } catch (answered) {
        refuse(answered, reply, done)
      }
    }
    let limited: ReturnType<typeof policy.limit>
    try {
      limited = policy.limit(decision, admission, view)
    } catch (error) {
      refused(error)
      return
    }
    if (limited instanceof Promise) return void limited.then(finish, refused)
    finish(limited)
  }

  function check(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    decision: McpDecision,
    index: number,
  ): void {
    for (let at = index; at < decision.rules.length; at++) {
      const guard = guards.get(decision.rules[at] as BuiltRule)
      if (guard === undefined) continue
      // A guard that admits calls on; a refusal answers (or is passed on), and nothing follows.
      return void guard(request, reply, (error?: unknown) => {
        if (error !== undefined) return done(error as Error)
        check(request, reply, done, decision, at + 1)
      })
    }
    limit(request, reply, done, decision)
  }

  function decideOn(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    body: unknown,
  ): void {
    let decision: McpDecision
    try {
      decision = policy.decide(request.method, body, request.headers)
    } catch (error) {
      refuse(error, reply, done)
      return
    }
    check(request, reply, done, decision, 0)
  }

  return function tollgateMcp(request, reply, done) {
    // The gate first: a request without valid credentials learns nothing of the MCP checks.
    runGate(request, reply, (error?: unknown) => {
      if (error !== undefined) return done(error as Error)
      let body: unknown
      try {
        body = bodyOf(request, policy.maxBodyBytes)
      } catch (caught) {
        return refuse(caught, reply, done)
      }
      if (!(body instanceof Promise)) {
        if (body !== request.body) request.body = body
        return decideOn(request, reply, done, body)
      }
      body.then(
        (read: unknown) => {
          request.body = read
          decideOn(request, reply, done, read)
        },
        (caught: unknown) => refuse(caught, reply, done),
      )
    })
  }
}
