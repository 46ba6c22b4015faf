/**
 * Where the user goes after signing in: only a path on this site. Anything that a browser could
 * read as another origin is refused (open redirect, RFC 9700 §4.11): `//evil`, `/\evil` (browsers
 * treat `\` as `/`), absolute URLs, control characters (stripped by URL parsers, so `/\t/evil`
 * becomes `//evil`), the same tricks percent-encoded once, and dot segments that resolve to any of
 * them, as sent (`/.//evil`, `/a/..//evil`, `/%2e%2e//evil`) or once decoded
 * (`/a/..%2F%2Fevil`, `/%2e%2F%2Fevil`): each form is resolved and checked again.
 *
 * @module
 */

const BACKSLASH = 0x5c

/** `true` for a backslash or a C0/DEL control character anywhere in `value`. */
function hasUnsafeCharacter(value: string): boolean {
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index)
    if (code < 0x20 || code === 0x7f || code === BACKSLASH) return true
  }
  return false
}
const BASE = 'https://return-to.invalid'

/**
 * `value` with its dot segments resolved, when both it and the result are same-origin paths
 * without an unsafe character; `undefined` otherwise.
 */
function resolvedPath(value: string): string | undefined {
  if (!value.startsWith('/') || value.startsWith('//') || hasUnsafeCharacter(value)) {
    return undefined
  }
  let url: URL
  try {
    url = new URL(value, BASE)
  } catch {
    return undefined
  }
  if (url.origin !== BASE) return undefined
  const path = `${url.pathname}${url.search}${url.hash}`
  // Dot segments resolve after the checks above: `/.//evil`, `/a/..//evil` and `/%2e//evil`
  // all come out as `//evil`. The result is what the browser gets, so it passes the same checks.
  if (!path.startsWith('/') || path.startsWith('//') || hasUnsafeCharacter(path)) return undefined
  return path
}

/** `true` when `value`, decoded once, is still a same-origin path once its dot segments resolve. */
function safeOnceDecoded(value: string): boolean {
  let decoded: string
  try {
    decoded = decodeURIComponent(value)
  } catch {
    return false
  }
  // A server or a proxy behind the redirect may decode `%2F` before resolving `..`:
  // `/a/..%2F%2Fevil` is one segment as sent, but `/a/..//evil`, then `//evil`, decoded.
  return resolvedPath(decoded) !== undefined
}

/** The path to send the user to, or `undefined` when `value` is not a same-origin relative path. */
export function safeReturnTo(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return undefined
  const path = resolvedPath(value)
  if (path === undefined) return undefined
  if (!safeOnceDecoded(value) || !safeOnceDecoded(path)) return undefined
  return path
}
