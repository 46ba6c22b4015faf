/**
 * The RFC 9440 `Client-Cert` field a TLS-terminating proxy sends: the DER of the client's
 * certificate as one structured-field byte sequence (RFC 8941 §3.3.5), `:base64:`. Read only from
 * a trusted proxy (see `certificate.ts`); anything else in the field is a malformed field.
 *
 * @module
 */
import { repeatsField } from '../bearer.js'
import type { RequestLike } from '../types.js'

/** Longest field accepted, in characters: a leaf certificate is 1–3 KiB, Node's whole head 16 KiB. */
const MAX_FIELD_CHARS = 16_384

// RFC 8941 §3.1.2 parameters after the item (`;key` or `;key=bare-item`); RFC 9440 defines none,
// and a parser ignores those it does not know. Bare items: integer or decimal, string, token,
// byte sequence, boolean.
const BARE_ITEM =
  '(?:-?[0-9]{1,15}(?:\\.[0-9]{1,3})?|"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\["\\\\])*"|[A-Za-z*][!#$%&\'*+\\-.^_`|~0-9A-Za-z:/]*|:[A-Za-z0-9+/=]*:|\\?[01])'
const PARAMETER = `;\\x20*[a-z*][a-z0-9_\\-.*]*(?:=${BARE_ITEM})?`
/** One byte sequence item, with optional parameters, nothing else (a list of several is not it). */
const BYTE_SEQUENCE = new RegExp(`^:([A-Za-z0-9+/]*={0,2}):(?:${PARAMETER})*$`)

/** Why a `Client-Cert` field could not be read: what an operator reads in the refusal's detail. */
export type ClientCertProblem =
  | 'repeated'
  | 'too_large'
  | 'not_a_byte_sequence'
  | 'not_a_certificate'

/**
 * Whether `bytes` are one DER SEQUENCE and nothing more, as a certificate is: a cheap shape check
 * that names garbage as such. Parsing the certificate (`new X509Certificate`, tens of µs) would
 * prove no more: what binds is its SHA-256, which only the certificate's own bytes can have.
 */
function isDerSequence(bytes: Buffer): boolean {
  if (bytes.length < 2 || bytes[0] !== 0x30) return false
  const first = bytes[1] as number
  if (first < 0x80) return first + 2 === bytes.length
  const count = first & 0x7f
  if (count === 0 || count > 4 || bytes.length < 2 + count) return false
  let length = 0
  for (let index = 0; index < count; index++) length = length * 256 + (bytes[2 + index] as number)
  return length + 2 + count === bytes.length
}

/** The field's certificate (its DER), `undefined` when there is no field, or the problem with it. */
export function clientCertOf(
  request: RequestLike,
): Buffer | undefined | { readonly problem: ClientCertProblem } {
  const value = request.headers['client-cert']
  if (value === undefined) return undefined
  // Node and Fetch join repeated fields with ", ", which no byte sequence contains; a host that
  // keeps one value of a repeated field leaves only the raw list to tell.
  if (typeof value !== 'string' || repeatsField(request.rawHeaders, 'client-cert')) {
    return { problem: 'repeated' }
  }
  if (value.length > MAX_FIELD_CHARS) return { problem: 'too_large' }
  // RFC 8941 §4.2: leading and trailing spaces are discarded (hosts trim tabs already).
  const match = BYTE_SEQUENCE.exec(value.trim())
  if (match === null) {
    return { problem: value.includes(', ') ? 'repeated' : 'not_a_byte_sequence' }
  }
  const base64 = match[1] as string
  // RFC 8941 §4.2.7: missing padding is tolerated; a length no padding can explain is not base64.
  if (base64.replace(/=+$/, '').length % 4 === 1) return { problem: 'not_a_byte_sequence' }
  const der = Buffer.from(base64, 'base64')
  return isDerSequence(der) ? der : { problem: 'not_a_certificate' }
}
