/**
 * Where the user goes after signing in: only a path on this site. Anything that a browser could
 * read as another origin is refused (open redirect, RFC 9700 §4.11): `//evil`, `/\evil` (browsers
 * treat `\` as `/`), absolute URLs, control characters (stripped by URL parsers, so `/\t/evil`
 * becomes `//evil`) and the same tricks percent-encoded once.
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
  return `${url.pathname}${url.search}${url.hash}`
}
