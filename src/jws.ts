/**
 * Compact JWS parsing (RFC 7515 §7.1), strict: three canonical base64url segments, a JSON object
 * header and payload in valid UTF-8. Nothing here trusts the token: the result is only a parse.
 *
 * @module
 */

/** A compact JWS split into its parts; nothing verified yet. */
export interface ParsedJWS {
  readonly header: Record<string, unknown>
  readonly payload: Record<string, unknown>
  /** The ASCII signing input (`header.payload`). */
  readonly signingInput: string
  readonly signature: Buffer
}

const NOT_BASE64URL = /[^A-Za-z0-9_-]/
const BASE64URL_INDEX = new Int8Array(128).fill(-1)
for (const [index, char] of [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_',
].entries()) {
  BASE64URL_INDEX[char.charCodeAt(0)] = index
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Canonical unpadded base64url: only the alphabet, no impossible length, and zero bits in the
 * unused low bits of the last character. Without the last rule `…Q` and `…R` decode to the same
 * bytes, so one signed token would have many spellings.
 */
function isCanonicalBase64url(segment: string): boolean {
  if (segment.length === 0 || NOT_BASE64URL.test(segment)) return false
  const rest = segment.length % 4
  if (rest === 1) return false
  if (rest === 0) return true
  const last = BASE64URL_INDEX[segment.charCodeAt(segment.length - 1)] as number
  return (last & (rest === 2 ? 0x0f : 0x03)) === 0
}

function decodeJSONObject(segment: string): Record<string, unknown> | undefined {
  const bytes = Buffer.from(segment, 'base64url')
  let text = bytes.toString('utf8')
  // Buffer decoding replaces invalid UTF-8 with U+FFFD; only then pay for the strict decoder,
  // which tells a literal U+FFFD from an invalid sequence.
  if (text.includes('\uFFFD')) {
    try {
      text = strictUtf8.decode(bytes)
    } catch {
      return undefined
    }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  return value as Record<string, unknown>
}

/** Parses a compact JWS, or returns `undefined` for anything that is not one. */
export function parseCompactJWS(token: string): ParsedJWS | undefined {
  const firstDot = token.indexOf('.')
  const secondDot = token.indexOf('.', firstDot + 1)
  // Exactly two dots: a JWE (four) or a nested/unsecured form is not an access token here.
  if (firstDot <= 0 || secondDot <= firstDot + 1 || token.indexOf('.', secondDot + 1) !== -1) {
    return undefined
  }
  const headerSegment = token.slice(0, firstDot)
  const payloadSegment = token.slice(firstDot + 1, secondDot)
  const signatureSegment = token.slice(secondDot + 1)
  if (
    !isCanonicalBase64url(headerSegment) ||
    !isCanonicalBase64url(payloadSegment) ||
    !isCanonicalBase64url(signatureSegment)
  ) {
    return undefined
  }
  const header = decodeJSONObject(headerSegment)
  if (header === undefined) return undefined
  const payload = decodeJSONObject(payloadSegment)
  if (payload === undefined) return undefined
  return {
    header,
    payload,
    signingInput: token.slice(0, secondDot),
    signature: Buffer.from(signatureSegment, 'base64url'),
  }
}
