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

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Decodes canonical unpadded base64url, or returns `undefined`. Node's decoder is lenient (it
 * accepts `+`, `/`, padding, skips stray characters and ignores non-zero trailing bits, so one
 * signed token could have many spellings); re-encoding and comparing refuses every such
 * spelling, and costs less than scanning the characters first.
 */
function decodeCanonical(segment: string): Buffer | undefined {
  const bytes = Buffer.from(segment, 'base64url')
  return bytes.length > 0 && bytes.toString('base64url') === segment ? bytes : undefined
}

/** A compact JWS split into canonical parts, its header parsed and its payload not yet. */
export interface SplitJWS {
  readonly header: Record<string, unknown>
  /** The payload's bytes: {@link parsePayload} reads them, once the signature has been checked. */
  readonly payloadBytes: Buffer
  /** The ASCII signing input (`header.payload`). */
  readonly signingInput: string
  readonly signature: Buffer
}

/** A JSON object in valid UTF-8 (a JWS header or payload), or `undefined`. */
export function parsePayload(bytes: Buffer): Record<string, unknown> | undefined {
  return decodeJSONObject(bytes)
}

function decodeJSONObject(bytes: Buffer): Record<string, unknown> | undefined {
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

/**
 * Splits a compact JWS and parses its header, or returns `undefined` for anything that is not
 * one. The payload is left as bytes, so a gate that knows which keys to try can check the
 * signature before parsing JSON it cannot yet trust.
 */
export function splitCompactJWS(token: string): SplitJWS | undefined {
  const firstDot = token.indexOf('.')
  const secondDot = token.indexOf('.', firstDot + 1)
  // Exactly two dots: a JWE (four) or a nested/unsecured form is not an access token here.
  if (firstDot <= 0 || secondDot <= firstDot + 1 || token.indexOf('.', secondDot + 1) !== -1) {
    return undefined
  }
  // Canonical segments joined by dots are always a b64token: the gate relies on it to check the
  // charset only for tokens this refuses.
  const headerBytes = decodeCanonical(token.slice(0, firstDot))
  const payloadBytes = headerBytes && decodeCanonical(token.slice(firstDot + 1, secondDot))
  const signature = payloadBytes && decodeCanonical(token.slice(secondDot + 1))
  if (signature === undefined) return undefined
  const header = decodeJSONObject(headerBytes as Buffer)
  if (header === undefined) return undefined
  return {
    header,
    payloadBytes: payloadBytes as Buffer,
    signingInput: token.slice(0, secondDot),
    signature,
  }
}

/** Parses a compact JWS, or returns `undefined` for anything that is not one. */
export function parseCompactJWS(token: string): ParsedJWS | undefined {
  const split = splitCompactJWS(token)
  const payload = split && decodeJSONObject(split.payloadBytes)
  if (payload === undefined) return undefined
  const { header, signingInput, signature } = split as SplitJWS
  return { header, payload, signingInput, signature }
}
