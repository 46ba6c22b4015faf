/**
 * The `audience` token request parameter (Auth0's, and what `tollgate/client`'s `audience` option
 * sends) read as a resource indicator: oidc-provider knows only RFC 8707's `resource`, and a
 * request naming its API by `audience` would otherwise silently get a token for the client's
 * default API.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'

import type { NormalizedDevResource } from './dev-options.js'

// oidc-provider's own limit on request bodies.
const MAX_BODY_BYTES = 56 * 1024

/**
 * `req` itself, or, for a form with `audience` and no `resource`, a request carrying the same
 * form plus a `resource` per audience: the indicator of the API with that `audience` (or the
 * value itself, which oidc-provider then refuses with `invalid_target` unless it is one).
 */
export async function audienceAsResource(
  req: IncomingMessage,
  resources: ReadonlyMap<string, NormalizedDevResource>,
): Promise<IncomingMessage> {
  const type = req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
  if (req.method !== 'POST' || type !== 'application/x-www-form-urlencoded') return req
  const chunks: Buffer[] = []
  let received = 0
  for await (const chunk of req) {
    received += (chunk as Buffer).length
    if (received > MAX_BODY_BYTES) break
    chunks.push(chunk as Buffer)
  }
  let body = Buffer.concat(chunks)
  const form = new URLSearchParams(body.toString('utf8'))
  if (form.has('audience') && !form.has('resource')) {
    for (const audience of form.getAll('audience')) {
      const indicator = [...resources].find(([, resource]) => resource.audience === audience)?.[0]
      form.append('resource', indicator ?? audience)
    }
    form.delete('audience')
    body = Buffer.from(form.toString(), 'utf8')
  }
  // The body was read from `req`: oidc-provider reads this copy, with the request's headers.
  const replay = Readable.from([body], { objectMode: false })
  return Object.assign(replay, {
    headers: { ...req.headers, 'content-length': String(body.length) },
    rawHeaders: req.rawHeaders,
    method: req.method,
    url: req.url,
    httpVersion: req.httpVersion,
    httpVersionMajor: req.httpVersionMajor,
    httpVersionMinor: req.httpVersionMinor,
    socket: req.socket,
    connection: req.socket,
  }) as unknown as IncomingMessage
}
