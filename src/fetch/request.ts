/**
 * The framework-neutral view of a WHATWG Fetch `Request` (Fetch handlers, Hono, Bun, Deno,
 * Workers): what `tollgate/fetch` and `tollgate/hono` hand to the gate.
 *
 * @module
 */
import type { ErrorResponse } from '../errors.js'
import type { CallbackRequest } from '../revocation/callback-body.js'
import type { CallbackResponse } from '../revocation/callbacks.js'
import type { HeadersLike, RequestLike } from '../types.js'

// What follows ", " in a joined Authorization value when a second field was joined to the first:
// a scheme alone, or a scheme and token68 credentials (RFC 9110 §11.4). Auth-params of a single
// field (`realm="api"`, `nonce=…`) do not look like this.
const CREDENTIALS_START = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?: +[A-Za-z0-9\-._~+/]+=*)?$/
const JOINED_AUTHORIZATION = ['authorization', '', 'authorization', '']

/**
 * Whether an Authorization value is several fields that the host joined. Fetch `Headers` join
 * repeated fields with ", " and keep no raw list; a Bearer or DPoP token68 never contains a
 * comma, so ", " followed by something shaped like credentials (or by nothing), or a value that
 * starts with ", " (an empty first field), means more than one field arrived.
 */
export function joinsAuthorizationFields(value: string): boolean {
  if (!value.includes(', ')) return false
  const parts = value.split(', ')
  if (parts[0] === '') return true
  for (let index = 1; index < parts.length; index++) {
    const part = parts[index] as string
    if (part === '' || CREDENTIALS_START.test(part)) return true
  }
  return false
}

/** Path and query of an absolute URL, as Node's `req.url` would have them. */
function targetOf(url: string): string {
  const scheme = url.indexOf('://')
  const path = url.indexOf('/', scheme === -1 ? 0 : scheme + 3)
  if (path === -1) return '/'
  const hash = url.indexOf('#', path)
  return hash === -1 ? url.slice(path) : url.slice(path, hash)
}

/**
 * The {@link RequestLike} of a Fetch `Request`. `body` is the body the application parsed before
 * the gate, if any (it is used only to refuse a token sent in the body as well, RFC 6750 §2.2):
 * the request's own body stream is never read.
 */
export function requestOfFetch(request: Request, body?: unknown): RequestLike {
  const headers: Record<string, string> = {}
  // Fetch Headers iterate with lower-cased names, repeated fields already joined.
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  const authorization = headers['authorization']
  const url = request.url
  // Some hosts keep Host out of `Headers`; the URL has it (DPoP's `htu` check reads it).
  if (headers['host'] === undefined) headers['host'] = new URL(url).host
  return {
    headers: headers as HeadersLike,
    // Two raw entries are how the core learns of a repeated field (Node keeps a raw list).
    rawHeaders:
      authorization !== undefined && joinsAuthorizationFields(authorization)
        ? JOINED_AUTHORIZATION
        : undefined,
    method: request.method,
    url: targetOf(url),
    secure: url.startsWith('https:'),
    body,
  }
}

async function* buffersOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Buffer> {
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  }
}

/** What a provider callback (back-channel logout, Keycloak push) needs of a Fetch `Request`. */
export function callbackRequestOfFetch(request: Request): CallbackRequest {
  const headers: Record<string, string> = {}
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  const stream = request.body
  return {
    headers,
    method: request.method,
    // The callbacks read Node-style Buffer chunks; a body already read is no longer there.
    stream: stream === null || request.bodyUsed ? undefined : buffersOf(stream),
  }
}

/** A complete answer of the core (a refusal, the metadata document, a callback's) as a `Response`. */
export function responseOfFetch({
  status,
  headers,
  body,
}: ErrorResponse | CallbackResponse): Response {
  // A Response with a status such as 204 or 304 must not have a body, even an empty one.
  return new Response(body === '' ? null : body, { status, headers })
}
