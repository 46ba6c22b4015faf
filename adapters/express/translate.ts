/**
 * How an Express request is read and answered: shared by `tollgate/express` and by
 * `tollgate/nestjs` on the Express platform, so that their answers are byte for byte the same.
 * Type imports only: nothing here loads Express.
 *
 * @module
 */
import type { ServerResponse } from 'node:http'

import type { Request, Response } from 'express'

import { type ErrorResponse, isTollgateError } from '../../src/errors.js'
import type { Admission, CheckResult, RequestLike } from '../../src/types.js'

/** The request as the gate reads it; `requiredScope`: the scopes of the guard that runs the gate. */
export function requestOf(req: Request, requiredScope?: string): RequestLike {
  const { headers, rawHeaders, method, originalUrl: url, body, socket } = req
  const secure = (socket as { encrypted?: boolean }).encrypted === true
  return { headers, rawHeaders, method, url, body, secure, socket, requiredScope }
}

/** Sets `req.auth` (when admitted with a token) and the admission's headers. */
export function admitOn(req: Request, res: Response, result: CheckResult): void {
  if (result.auth !== undefined) (req as { auth?: Admission }).auth = result.auth
  for (const name in result.headers) res.setHeader(name, result.headers[name] as string)
}

/**
 * With `errorHandling: 'framework'`: sets a refusal's headers (`WWW-Authenticate`, `Retry-After`,
 * the RateLimit fields) on the response before the error is handed on, so that an application's
 * own error handler that only sets the status and a body (`res.status(err.status).json(…)`) still
 * answers with them. Express's own handler sets them again from `err.headers`, to the same values.
 * Any Node response (the NestJS guard throws on either platform's raw response).
 */
export function keepHeaders(res: ServerResponse, error: unknown): void {
  if (!isTollgateError(error) || res.headersSent) return
  const headers = error.headers
  for (const name in headers) res.setHeader(name, headers[name] as string)
}

/**
 * Node's own calls, not `res.status().set()`: Express's helpers re-validate the status and look
 * up a charset for Content-Type on every refusal, and these answers carry theirs already. Any
 * Node response (the NestJS middleware answers on either platform's).
 */
export function send(res: ServerResponse, { status, headers, body }: ErrorResponse): void {
  res.statusCode = status
  for (const name in headers) res.setHeader(name, headers[name] as string)
  res.end(body)
}
