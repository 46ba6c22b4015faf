/**
 * Authorization header parsing: RFC 6750 §2.1 `Bearer` and RFC 9449 §7.1 `DPoP`, and nothing else.
 *
 * @module
 */
import { InvalidRequestError } from './errors.js'
import type { RequestLike } from './types.js'

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/
const SPACE = 32

const malformed = () => new InvalidRequestError({ reason: 'malformed_credentials' })

/** `true` when `candidate` is an RFC 6750 b64token. */
export function isB64Token(candidate: string): boolean {
  return B64TOKEN.test(candidate)
}

/**
 * The credentials of a `Bearer` Authorization header, not yet checked against the b64token
 * charset: the gate first looks them up among verified tokens (which passed that check), and
 * checks the charset only on a miss. `undefined` when the request carries no credentials or uses
 * another scheme (the caller answers 401 without an error code, RFC 6750 §3.1). Tokens are never
 * read from the query string (RFC 6750 §2.3 puts them in logs and Referer).
 *
 * @throws InvalidRequestError (400) for `Bearer` without credentials or not followed by a space,
 * a repeated Authorization field, or a token sent in the query, or in the form body of a request
 * other than GET or HEAD, as well.
 */
export function readBearerCredentials(request: RequestLike): string | undefined {
  const value = authorizationOf(request)
  return value === undefined ? undefined : credentialsAfter(request, value, 'bearer')
}

/** The scheme a request authenticated with, and its token. */
export interface Credentials {
  readonly scheme: 'Bearer' | 'DPoP'
  readonly token: string
}

/**
 * Like {@link readBearerCredentials}, for a gate that also accepts the RFC 9449 §7.1 `DPoP`
 * scheme, whose credentials have the same syntax (`token68`, checked like a b64token) and the
 * same rules on repetition and tokens sent twice.
 */
export function readCredentials(request: RequestLike): Credentials | undefined {
  const value = authorizationOf(request)
  if (value === undefined) return undefined
  const bearer = credentialsAfter(request, value, 'bearer')
  if (bearer !== undefined) return { scheme: 'Bearer', token: bearer }
  const dpop = credentialsAfter(request, value, 'dpop')
  return dpop === undefined ? undefined : { scheme: 'DPoP', token: dpop }
}

function authorizationOf(request: RequestLike): string | undefined {
  const value = request.headers.authorization
  if (value === undefined) return undefined
  // Before the empty check: an empty field must not hide a second, non-empty one.
  if (typeof value !== 'string' || repeatsField(request.rawHeaders, 'authorization')) {
    throw new InvalidRequestError({ reason: 'repeated_authorization' })
  }
  return value
}

/** The credentials after `scheme` (lower case), or `undefined` when `value` uses another scheme. */
function credentialsAfter(
  request: RequestLike,
  value: string,
  scheme: 'bearer' | 'dpop',
): string | undefined {
  const length = scheme.length
  // Another scheme, including a longer one such as "Bearerx": no credentials for us.
  if (value.length < length || value.slice(0, length).toLowerCase() !== scheme) return undefined
  if (value.length > length && TCHAR.test(value.charAt(length))) return undefined
  let start = length
  while (value.charCodeAt(start) === SPACE) start++
  if (start === length || start === value.length) throw malformed()
  const credentials = value.slice(start)
  if (tokenInQuery(request.url) || tokenInBody(request)) {
    if (!isB64Token(credentials)) throw malformed()
    throw new InvalidRequestError({ reason: 'token_sent_twice' })
  }
  return credentials
}

/**
 * Whether the field `name` (lower case) appears more than once in Node's raw header list. Node
 * keeps only the first of repeated Authorization fields in `headers`, and a host other than Node
 * may keep one value of any repeated field: the raw list tells.
 */
export function repeatsField(rawHeaders: readonly string[] | undefined, name: string): boolean {
  if (rawHeaders === undefined) return false
  let seen = 0
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const field = rawHeaders[index] as string
    if (field.length === name.length && field.toLowerCase() === name && ++seen > 1) return true
  }
  return false
}

function tokenInQuery(url: string | undefined): boolean {
  if (url === undefined) return false
  const start = url.indexOf('?')
  if (start === -1) return false
  const query = url.slice(start + 1)
  // Frameworks decode `access%5Ftoken` to `access_token`: any escape means parsing the query.
  if (!query.includes('access_token') && !query.includes('%')) return false
  return new URLSearchParams(query).has('access_token')
}

/**
 * Whether the parsed body holds a token too. Not on GET or HEAD: RFC 6750 §2.2 allows the body
 * method only where the request body has defined semantics ("GET" MUST NOT be used), so there a
 * body is no credential channel, and the header alone decides. Most hosts (Fastify, every Fetch
 * host) never hand such a body over; Express and Koa parsers do: ignoring it everywhere gives
 * every adapter the same answer (docs/security.md).
 */
function tokenInBody({ body, method }: RequestLike): boolean {
  if (method === 'GET' || method === 'HEAD') return false
  return typeof body === 'object' && body !== null && Object.hasOwn(body, 'access_token')
}
