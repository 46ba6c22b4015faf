/**
 * Where the user goes after signing in: only a path on this site. Anything that a browser could
 * read as another origin is refused (open redirect, RFC 9700 §4.11): `//evil`, `/\evil` (browsers
 * treat `\` as `/`), absolute URLs, control characters (stripped by URL parsers, so `/\t/evil`
 * becomes `//evil`), the same tricks percent-encoded once, and dot segments that resolve to any of
 * them (`/.//evil`, `/a/..//evil`, `/%2e%2e//evil`): the resolved path is checked again.
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

/** The path to send the user to, or `undefined` when `value` is not a same-origin relative path. */
export function safeReturnTo(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return undefined
  if (!value.startsWith('/') || value.startsWith('//') || hasUnsafeCharacter(value))
    return undefined
  let decoded: string
  try {
    decoded = decodeURIComponent(value)
  } catch {
    return undefined
  }
  if (decoded.startsWith('//') || hasUnsafeCharacter(decoded)) return undefined
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
  let decodedPath: string
  try {
    decodedPath = decodeURIComponent(path)
  } catch {
    return undefined
  }
  if (decodedPath.startsWith('//') || hasUnsafeCharacter(decodedPath)) return undefined
  return path
}
