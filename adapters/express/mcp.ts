/**
 * An MCP endpoint behind the Express gate, operation by operation: `mcpGate(auth, policy)`.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'
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
import { requestOf, send } from './translate.js'

declare global {
  namespace Express {
    interface Request {
      /** Set by tollgate's `mcpGate`: the MCP operation the request was authorized for. */
      mcp?: McpAuthorized
    }
  }
}

/**
 * Middleware for every method of an MCP endpoint (`app.all('/mcp', …)`): runs the gate when it
 * has not decided on the request, reads the JSON-RPC body (Express's `req.body` when a parser
 * ran, else it reads at most `maxBodyBytes` itself and sets `req.body`, for the MCP transport),
 * refuses a request whose `Mcp-Method` / `Mcp-Name` headers disagree with the body (400, JSON-RPC
 * error -32020), answers 403 `insufficient_scope` naming exactly the scopes of the tool, resource
 * or prompt called, and counts the call in the tool's own windows. Then `req.mcp` says which
 * operation was authorized.
 *
 * @example
 * ```ts
 * app.all('/mcp', express.json(), mcpGate(auth, { tools: { search: { scopes: ['mcp:search'] } } }),
 *   (req, res) => transport.handleRequest(req, res, req.body))
 * ```
 * @throws TypeError at creation when `options` are invalid.
 */
/**
 * What `mcpGate` uses of the middleware `tollgate(options)` returns (declared here, not imported
 * from the entry point, which exports `mcpGate`: no import runs back to it).
 */
export interface McpGateMiddleware extends RequestHandler {
  readonly gate: Gate
  requireScopes(...scopes: string[]): RequestHandler
}

export function mcpGate(auth: McpGateMiddleware, options: McpPolicyOptions = {}): RequestHandler {
  const { gate } = auth
  // The tool windows report through the gate's listener, as its own limiter does.
  const policy = createMcpPolicy(options, { onEvent: emitOf(gate) })
  // Each rule's scopes checked by the gate's own guard: its 403 and challenge, its decision.
  const guards = new Map<BuiltRule, RequestHandler | undefined>(
    policy.rules.map((rule) => [
      rule,
      rule.scopes.length === 0 ? undefined : auth.requireScopes(...rule.scopes),
    ]),
  )
  const refuse = (error: unknown, res: Response, next: NextFunction): void => {
    if (gate.errorHandling === 'framework') return void next(error)
    send(res, renderMcpError(error))
  }

  function limit(req: Request, res: Response, next: NextFunction, decision: McpDecision): void {
    // No tool with windows of its own: nothing to count, no closure built.
    if (!policy.limited) {
      req.mcp = policy.authorized(decision)
      next()
      return
    }
    const request = requestOf(req)
    const done = (headers: Record<string, string> | undefined): void => {
      if (res.headersSent) return
      if (headers !== undefined) {
        const joined: Record<string, string> = {}
        for (const name in headers) {
          const existing = res.getHeader(name)
          if (typeof existing === 'string') joined[name] = existing
        }
        merge(joined, headers)
        for (const name in joined) res.setHeader(name, joined[name] as string)
      }
      req.mcp = policy.authorized(decision)
      next()
    }
    // Through the gate's refusal point: reported as the gate's refusals are.
    const refused = (error: unknown): void => {
      try {
        gate.authorize(
          () => {
            throw error
          },
          req.auth,
          request,
        )
      } catch (answered) {
        refuse(answered, res, next)
      }
    }
    let limited: ReturnType<typeof policy.limit>
    try {
      limited = policy.limit(decision, req.auth, request)
    } catch (error) {
      refused(error)
      return
    }
    if (limited instanceof Promise) return void limited.then(done, refused)
    done(limited)
  }

  function check(
    req: Request,
    res: Response,
    next: NextFunction,
    decision: McpDecision,
    index: number,
  ): void {
    for (let at = index; at < decision.rules.length; at++) {
      const guard = guards.get(decision.rules[at] as BuiltRule)
      if (guard === undefined) continue
      // A guard that admits calls on synchronously or later; a refusal answers (or is passed on).
      return void guard(req, res, (error?: unknown) => {
        if (error !== undefined) return next(error)
        check(req, res, next, decision, at + 1)
      })
    }
    limit(req, res, next, decision)
  }

  function decideOn(req: Request, res: Response, next: NextFunction, body: unknown): void {
    let decision: McpDecision
    try {
      decision = policy.decide(req.method, body, req.headers)
    } catch (error) {
      refuse(error, res, next)
      return
    }
    check(req, res, next, decision, 0)
  }

  return function tollgateMcp(req, res, next) {
    // The gate first: a request without valid credentials learns nothing of the MCP checks.
    auth(req, res, (error?: unknown) => {
      if (error !== undefined) return next(error)
      if (req.method !== 'POST' || req.body !== undefined) return decideOn(req, res, next, req.body)
      readNodeBody(req, policy.maxBodyBytes)
        .then(parseMcpBody)
        .then(
          (body) => {
            req.body = body
            decideOn(req, res, next, body)
          },
          (error: unknown) => refuse(error, res, next),
        )
    })
  }
}
