/**
 * MCP endpoints behind tollgate/nestjs, operation by operation: what {@link TollgateGuard} does on
 * a route marked `@McpGate()`, once the gate admitted the request and the route's `@Require…`
 * decorators passed. The policy is the module's (`moduleOptions.mcp`), built with the gate.
 *
 * @module
 */
import type { Gate } from '../../src/gate/gate.js'
import { parsedBodyOf, parseMcpBody, readNodeBody } from '../../src/mcp/body.js'
import {
  joinedHeaders,
  type McpAuthorized,
  type McpDecision,
  type McpPolicy,
} from '../../src/mcp/policy.js'
import type { Admission, RequestLike } from '../../src/types.js'

/** What the MCP step reads and writes of one HTTP platform (Express or Fastify). */
export interface McpPlatform {
  /** The request as the gate reads it; `requiredScope`: the scopes a refusal names. */
  requestOf(request: unknown, requiredScope?: string): RequestLike
  /** The Node request whose stream holds a body no parser read. */
  streamOf(request: unknown): AsyncIterable<Uint8Array | string>
  /** A field the response holds already, when it holds one as text. */
  headerOf(response: unknown, name: string): string | undefined
  setHeaders(response: unknown, headers: Readonly<Record<string, string>>): void
  /**
   * Sets the response's fields on Node's response as well, for a transport that writes to it
   * (`@Res() reply`, then `reply.raw` on Fastify, which sends none of the reply's headers).
   */
  handOver(response: unknown): void
}

/** What the step sets on the platform's request, for `@Mcp()` and the handler. */
interface McpHolder {
  body?: unknown
  mcp?: McpAuthorized
  method?: string
  headers: Record<string, string | string[] | undefined>
}

/**
 * The JSON-RPC body: as the platform's parsers left it (Nest's `json` parser on Express, Fastify's
 * on Fastify; text Fastify's `text/plain` parser left is parsed), else read from the stream, at
 * most `maxBytes` (Express without a parser for its type or with `bodyParser: false`, a catch-all
 * parser on Fastify that leaves it unread). Set on the request when parsed here, as a parser would.
 */
function bodyOf(request: McpHolder, platform: McpPlatform, maxBytes: number): unknown {
  const { body } = request
  if (request.method !== 'POST') return body
  const parsed = parsedBodyOf(body, request.headers['content-type'])
  if (parsed === undefined) {
    return readNodeBody(platform.streamOf(request), maxBytes).then((text) =>
      handOn(request, parseMcpBody(text)),
    )
  }
  return parsed === body ? body : handOn(request, parsed)
}

/** Sets the parsed body on the request, as a JSON parser would: the transport takes it. */
function handOn(request: McpHolder, parsed: unknown): unknown {
  request.body = parsed
  return parsed
}

/** The MCP checks of the module's policy, run by the guard on an `@McpGate()` route. */
export class McpStep {
  readonly #gate: Gate
  readonly #policy: McpPolicy
  // A request reaches the guard more than once (global, and on the route): checked and counted
  // once. Under a symbol of this step's own, as the gate's decisions are kept.
  readonly #done = Symbol('tollgate.mcp')

  constructor(gate: Gate, policy: McpPolicy) {
    this.#gate = gate
    this.#policy = policy
  }

  /**
   * Reads the operation from the body, refuses headers that disagree with it, runs the scopes of
   * each rule it falls under and counts the tools' windows, then sets `request.mcp`. Throws (or
   * rejects with) what `refusal` makes of the first refusal.
   */
  run(
    request: object,
    response: unknown,
    auth: Admission | undefined,
    platform: McpPlatform,
    refusal: (error: unknown) => unknown,
  ): true | Promise<true> {
    const holder = request as McpHolder & Record<symbol, true | undefined>
    if (holder[this.#done] === true) return true
    let body: unknown
    try {
      body = bodyOf(holder, platform, this.#policy.maxBodyBytes)
    } catch (error) {
      throw refusal(error)
    }
    if (body instanceof Promise) {
      return body.then(
        (read: unknown) => this.#check(holder, response, auth, platform, refusal, read),
        (error: unknown) => {
          throw refusal(error)
        },
      )
    }
    return this.#check(holder, response, auth, platform, refusal, body)
  }

  #check(
    request: McpHolder & Record<symbol, true | undefined>,
    response: unknown,
    auth: Admission | undefined,
    platform: McpPlatform,
    refusal: (error: unknown) => unknown,
    body: unknown,
  ): true | Promise<true> {
    const gate = this.#gate
    const policy = this.#policy
    let decision: McpDecision
    try {
      decision = policy.decide(request.method, body, request.headers)
    } catch (error) {
      throw refusal(error)
    }
    for (const { guard } of decision.rules) {
      if (guard === undefined) continue
      try {
        // Met: nothing to build. Refused: the gate runs it again on a view naming its scopes.
        guard(auth)
      } catch {
        try {
          gate.authorize(guard, auth, platform.requestOf(request, guard.scope))
        } catch (error) {
          throw refusal(error)
        }
      }
    }
    const done = (headers: Record<string, string> | undefined): true => {
      if (headers !== undefined) {
        platform.setHeaders(
          response,
          joinedHeaders(headers, (name) => platform.headerOf(response, name)),
        )
      }
      request.mcp = policy.authorized(decision)
      request[this.#done] = true
      platform.handOver(response)
      return true
    }
    if (!policy.limited) return done(undefined)
    const view = platform.requestOf(request)
    // Through the gate's refusal point: reported as the gate's refusals are.
    const refused = (error: unknown): never => {
      try {
        gate.authorize(
          () => {
            throw error
          },
          auth,
          view,
        )
      } catch (answered) {
        throw refusal(answered)
      }
      throw refusal(error)
    }
    let limited: ReturnType<McpPolicy['limit']>
    try {
      limited = policy.limit(decision, auth, view)
    } catch (error) {
      return refused(error)
    }
    return limited instanceof Promise ? limited.then(done, refused) : done(limited)
  }
}
