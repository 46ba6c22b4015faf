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

/** Between cookie-pairs: "; " in one field, ", " where a Fetch host joined several fields. */
const COOKIE_SEPARATOR = /[;,]/

/**
 * The value of cookie `name`, or `undefined` (also when it is sent twice: no guessing which).
 *
 * Several `Cookie` fields (HTTP/2 "crumbs", RFC 9113 §8.2.3, or a proxy that splits them) reach
 * the application joined: with "; " by Node and undici (`Headers` under Node, Bun), with ", " by
 * `Headers` as the Fetch standard has it (Deno, Workers and the like). Pairs are therefore split
 * on ';' and on ','; a cookie-octet (RFC 6265 §4.1.1) is never either, so no conforming value is
 * cut. The rule for the values that do not conform, stated once:
 * - A piece without '=' (the tail of another cookie's value cut at ',') names no cookie: skipped.
 * - `name` seen twice, wherever the second one came from, gives `undefined`: two of one name mean
 *   a sibling subdomain set one (cookie tossing), and another cookie's value that embeds
 *   ", name=…" looks exactly like a second field, so neither is trusted. The answer is then
 *   "signed out" (or "no sign-in under way"), never the planted value.
 * - Without a `name` cookie of its own, such an embedded ", name=…" is read as the cookie: on a
 *   host that joined with ", " it cannot be told from a second field. The caller still verifies
 *   it (the session is signed, the transaction sealed), so it can only be a value tollgate issued.
 * - A value of `name` itself that holds ',' or ';' cannot be read whole; tollgate's own values
 *   (base64url and dots) never do.
 */
export function readCookie(
  header: string | string[] | undefined,
  name: string,
): string | undefined {
  const lines = Array.isArray(header) ? header : header === undefined ? [] : [header]
  let found: string | undefined
  let count = 0
  for (const line of lines) {
    for (const pair of line.split(COOKIE_SEPARATOR)) {
      const equals = pair.indexOf('=')
      if (equals < 0) continue
      if (pair.slice(0, equals).trim() !== name) continue
      count++
      found = pair.slice(equals + 1).trim()
    }
  }
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
