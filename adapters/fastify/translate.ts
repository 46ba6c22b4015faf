/**
 * How a Fastify request is read and answered: shared by `tollgate/fastify` and by
 * `tollgate/nestjs` on the Fastify platform, so that their answers are byte for byte the same.
 * Type imports only: nothing here loads Fastify.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'

import { type ErrorResponse, isTollgateError } from '../../src/errors.js'
import type { Admission, CheckResult, RequestLike } from '../../src/types.js'

/** The request as the gate reads it; `requiredScope`: the scopes of the guard that runs the gate. */
export function requestOf(request: FastifyRequest, requiredScope?: string): RequestLike {
  const { headers, method, url, body, raw } = request
  const socket = raw.socket ?? undefined
  const secure = (socket as { encrypted?: boolean } | undefined)?.encrypted === true
  const rawHeaders = raw.rawHeaders
  return { headers, rawHeaders, method, url, body, secure, socket, requiredScope }
}

/** Sets `request.auth` (`undefined` when admitted without a token) and the admission's headers. */
export function admitOn(request: FastifyRequest, reply: FastifyReply, result: CheckResult): void {
  ;(request as { auth?: Admission | undefined }).auth = result.auth
  reply.headers(result.headers)
}

/**
 * With `errorHandling: 'framework'`: sets a refusal's headers (`WWW-Authenticate`, `Retry-After`,
 * the RateLimit fields) on the reply before the error is handed on, so that an error handler that
 * only sets the status and a body still answers with them.
 */
export function keepHeaders(reply: FastifyReply, error: unknown): void {
  if (isTollgateError(error) && !reply.sent) reply.headers(error.headers)
}

/**
 * A transport (an MCP server's) writes to Node's response after `reply.hijack()` (the SDK's
 * `handleRequest(request.raw, reply.raw, …)`), which sends none of the reply's headers: the
 * fields set so far (the gate's and the tool's rate-limit fields) are set on it as well. Node
 * joins them to what the transport or Fastify writes, the latter winning for the same name.
 */
export function handOver(reply: FastifyReply): void {
  const headers = reply.getHeaders()
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined) reply.raw.setHeader(name, value)
  }
}

export function send(reply: FastifyReply, { status, headers, body }: ErrorResponse): void {
  reply.code(status).headers(headers).send(body)
}
