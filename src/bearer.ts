/**
 * RFC 6750 §2.1 Authorization header parsing, and nothing else.
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
 * a repeated Authorization field, or a token sent in the query or body as well.
 */
export function readBearerCredentials(request: RequestLike): string | undefined {
  const value = request.headers.authorization
  if (value === undefined) return undefined
  // Before the empty check: an empty field must not hide a second, non-empty one.
  if (typeof value !== 'string' || repeatsAuthorization(request.rawHeaders)) {
    throw new InvalidRequestError({ reason: 'repeated_authorization' })
  }
  // A scheme other than Bearer, including a longer one such as "Bearerx": no credentials for us.
  if (value.length < 6 || value.slice(0, 6).toLowerCase() !== 'bearer') return undefined
  if (value.length > 6 && TCHAR.test(value.charAt(6))) return undefined
  let start = 6
  while (value.charCodeAt(start) === SPACE) start++
  if (start === 6 || start === value.length) throw malformed()
  const credentials = value.slice(start)
  if (tokenInQuery(request.url) || tokenInBody(request.body)) {
    if (!isB64Token(credentials)) throw malformed()
    throw new InvalidRequestError({ reason: 'token_sent_twice' })
  }
  return credentials
}

/** Node keeps only the first of repeated Authorization fields in `headers`; the raw list tells. */
function repeatsAuthorization(rawHeaders: readonly string[] | undefined): boolean {
  if (rawHeaders === undefined) return false
  let seen = 0
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization' && ++seen > 1) return true
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

function tokenInBody(body: unknown): boolean {
  return typeof body === 'object' && body !== null && Object.hasOwn(body, 'access_token')
}
