/**
 * Cookie header parsing (RFC 6265 §5.4) and `Set-Cookie` lines (§4.1) for the session and the
 * sign-in transaction. Nothing else: what goes in a cookie is decided by the session module.
 *
 * @module
 */

/** Attributes of a cookie tollgate sets. `HttpOnly` is always on. */
export interface CookieAttributes {
  readonly path: string
  readonly secure: boolean
  readonly sameSite: 'Lax' | 'Strict'
  /** Seconds; `0` deletes the cookie, `undefined` makes it a browser-session cookie. */
  readonly maxAgeSeconds?: number | undefined
}

/**
 * The value of cookie `name`, or `undefined` (also when it is sent twice: no guessing which).
 *
 * Pairs are split on ';' only, as RFC 6265 §4.2.1 writes them and as hosts join several `Cookie`
 * fields (RFC 9113 §8.2.3: "; "; Node, undici, Bun and `Deno.serve` do). A host that joins them
 * with ", " instead gets "signed out", never a guess: splitting on ',' as well would read a
 * ", __Host-…=" planted inside a cookie a sibling domain set (browsers accept commas in values) as
 * the session cookie, which is what the `__Host-` prefix exists to prevent.
 */
export function readCookie(
  header: string | string[] | undefined,
  name: string,
): string | undefined {
  const lines = Array.isArray(header) ? header : header === undefined ? [] : [header]
  let found: string | undefined
  let count = 0
  for (const line of lines) {
    for (const pair of line.split(';')) {
      const equals = pair.indexOf('=')
      if (equals < 0) continue
      if (pair.slice(0, equals).trim() !== name) continue
      count++
      found = pair.slice(equals + 1).trim()
    }
  }
  // Two cookies of one name mean a sibling subdomain set one (cookie tossing): trust neither.
  return count === 1 ? found : undefined
}

/** A `Set-Cookie` line. `value` must already be cookie-safe (base64url and dots). */
export function serializeCookie(name: string, value: string, attributes: CookieAttributes): string {
  let line = `${name}=${value}; Path=${attributes.path}; HttpOnly; SameSite=${attributes.sameSite}`
  if (attributes.secure) line += '; Secure'
  if (attributes.maxAgeSeconds !== undefined) {
    line += `; Max-Age=${attributes.maxAgeSeconds}`
    if (attributes.maxAgeSeconds === 0) line += '; Expires=Thu, 01 Jan 1970 00:00:00 GMT'
  }
  return line
}
