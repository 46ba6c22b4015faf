/**
 * The framework-neutral view of a WHATWG Fetch `Request` (Fetch handlers, Hono, Bun, Deno,
 * Workers): what `tollgate/fetch` and `tollgate/hono` hand to the gate.
 *
 * @module
 */
import type { ErrorResponse } from '../errors.js'
import type { CallbackRequest } from '../revocation/callback-body.js'
import type { CallbackResponse } from '../revocation/callbacks.js'
import type { HeadersLike, PeerSocket, RequestLike } from '../types.js'

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
 * What a {@link HeadersLike} view of Fetch `Headers` keeps: the fields, and a copy once listed.
 * Private fields: `util.inspect` (what an application's own logging of `request.headers` calls)
 * does not show them.
 */
class FetchFields {
  readonly #fields: Headers
  readonly #url: string
  /** Read once here: the gate reads it again, and a host may check the whole value per read. */
  readonly #authorization: string | undefined
  #every: Record<string, string> | undefined

  constructor(fields: Headers, url: string) {
    this.#fields = fields
    this.#url = url
    this.#authorization = fields.get('authorization') ?? undefined
  }

  static authorization(view: FetchFields): string | undefined {
    return view.#authorization
  }

  /** Every field, lower-cased and joined as Fetch has them, plus Host from the URL when absent. */
  static every(view: FetchFields): Record<string, string> {
    if (view.#every === undefined) {
      const every: Record<string, string> = Object.create(null)
      view.#fields.forEach((value, name) => {
        every[name] = value
      })
      if (every['host'] === undefined) every['host'] = new URL(view.#url).host
      view.#every = every
    }
    return view.#every
  }

  /** One field, read when asked for: lower-case names only, as in Node's `req.headers`. */
  static field(view: FetchFields, name: string | symbol): string | undefined {
    if (typeof name !== 'string' || name === '' || name !== name.toLowerCase()) return undefined
    if (view.#every !== undefined) return view.#every[name]
    if (name === 'authorization') return view.#authorization
    let value: string | null
    try {
      value = view.#fields.get(name)
    } catch {
      return undefined // not a field name Fetch accepts: no such field
    }
    // Some hosts keep Host out of `Headers`; the URL has it (DPoP's `htu` check reads it).
    if (value === null) return name === 'host' ? new URL(view.#url).host : undefined
    return value
  }
}

// Node's `util.inspect` finds this on the proxy's target and calls it on the proxy, whose spread
// lists the fields: an application inspecting `request.headers` sees them. Nothing is written here.
Object.defineProperty(FetchFields.prototype, Symbol.for('nodejs.util.inspect.custom'), {
  value(this: object) {
    return { ...this }
  },
})

/**
 * The fields as a read-only record whose fields are read when asked for, to keep the cached-token
 * hit cheap: the gate reads one or two, and copying them all first made Hono on Node build the full
 * `Headers` that @hono/node-server otherwise never builds, which cost its hit more than the gate
 * itself. Listing the keys (`Object.keys`, spread, `JSON.stringify`) copies every field once.
 */
const FIELDS: ProxyHandler<FetchFields> = {
  get: (view, name) => FetchFields.field(view, name),
  has: (view, name) => FetchFields.field(view, name) !== undefined,
  ownKeys: (view) => Object.keys(FetchFields.every(view)),
  getOwnPropertyDescriptor(view, name) {
    const value = FetchFields.field(view, name)
    if (value === undefined) return undefined
    return { value, writable: false, enumerable: true, configurable: true }
  },
  set: () => false,
  defineProperty: () => false,
  deleteProperty: () => false,
  getPrototypeOf: () => null,
  setPrototypeOf: () => false,
}

/**
 * The {@link RequestLike} of a Fetch `Request`. `body` is the body the application parsed before
 * the gate, if any (it is used only to refuse a token sent in the body as well, RFC 6750 §2.2):
 * the request's own body stream is never read. A Fetch `Request` says nothing of its connection:
 * `socket` is what the host told the application of it (peer address, TLS client certificate).
 * `requiredScope`: the scopes of the guard that runs the gate, named in its challenges.
 */
export function requestOfFetch(
  request: Request,
  body?: unknown,
  socket?: PeerSocket,
  requiredScope?: string,
): RequestLike {
  const url = request.url
  const view = new FetchFields(request.headers, url)
  const headers = new Proxy(view, FIELDS) as unknown as HeadersLike
  // Fetch Headers join repeated fields with ", " (lower-cased names); the raw list says "twice".
  const authorization = FetchFields.authorization(view)
  return {
    headers,
    // Two raw entries are how the core learns of a repeated field (Node keeps a raw list).
    rawHeaders:
      authorization !== undefined && joinsAuthorizationFields(authorization)
        ? JOINED_AUTHORIZATION
        : undefined,
    method: request.method,
    url: targetOf(url),
    secure: url.startsWith('https:'),
    body,
    socket,
    requiredScope,
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
