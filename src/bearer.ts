/**
 * RFC 6750 §2.1 Authorization header parsing, and nothing else.
 *
 * @module
 */
import { InvalidRequestError } from './errors.js'
import type { RequestLike } from './types.js'

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i
const SCHEME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/

/**
 * The bearer token of a request, or `undefined` when the request carries no credentials or uses
 * another scheme (the caller answers 401 without an error code, RFC 6750 §3.1).
 * Tokens are never read from the query string (RFC 6750 §2.3 puts them in logs and Referer).
 *
 * @throws InvalidRequestError (400) for a malformed `Bearer` value, more than one token, a
 * repeated Authorization field, or a token sent in the query or body as well.
 */
export function extractBearerToken(request: RequestLike, realm: string): string | undefined {
  const value = request.headers.authorization
  if (value === undefined) return undefined
  // Before the empty check: an empty field must not hide a second, non-empty one.
  if (typeof value !== 'string' || repeatsAuthorization(request.rawHeaders)) {
    throw new InvalidRequestError('more than one Authorization header', { realm })
  }
  if (value === '') return undefined
  const match = BEARER.exec(value)
  if (match === null) {
    const scheme = SCHEME.exec(value)?.[0]
    if (scheme === undefined || scheme.toLowerCase() !== 'bearer') return undefined
    throw new InvalidRequestError('malformed bearer credentials', { realm })
  }
  if (tokenInQuery(request.url) || tokenInBody(request.body)) {
    throw new InvalidRequestError('access token sent more than one way', { realm })
  }
  return match[1]
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
