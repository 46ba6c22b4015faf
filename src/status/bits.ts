/**
 * A decoded status list (Token Status List §4.1): the `lst` member is the base64url of the ZLIB
 * (RFC 1950) compression of a byte array holding `bits` bits per referenced token, index 0 in the
 * least significant bits of byte 0. Decompressed once per fetched list, with node:zlib and a
 * bound on the output, so a small hostile list cannot inflate into gigabytes; read per request
 * with one shift and one mask, no allocation.
 *
 * @module
 */
import { promisify } from 'node:util'
import { deflateSync, inflate } from 'node:zlib'

const inflateAsync = promisify(inflate)

/** The bit sizes a status list may use (§4.1 `bits`). */
export type StatusBits = 1 | 2 | 4 | 8

export function isStatusBits(value: unknown): value is StatusBits {
  return value === 1 || value === 2 || value === 4 || value === 8
}

/** The status values the draft registers (§7.1); others are application-specific. */
export const STATUS_VALID = 0x00
export const STATUS_INVALID = 0x01
export const STATUS_SUSPENDED = 0x02

/** A decompressed list: its bytes and what a lookup needs. */
export class StatusBitList {
  readonly bits: StatusBits
  /** How many referenced tokens the list holds a status for. */
  readonly size: number
  private readonly bytes: Uint8Array
  private readonly mask: number
  /** log2(8 / bits): the index's shift to its byte. */
  private readonly perByteShift: number

  constructor(bytes: Uint8Array, bits: StatusBits) {
    this.bytes = bytes
    this.bits = bits
    this.size = (bytes.length * 8) / bits
    this.mask = (1 << bits) - 1
    this.perByteShift = bits === 1 ? 3 : bits === 2 ? 2 : bits === 4 ? 1 : 0
  }

  /** The status at `index`, or `undefined` past the end of the list (§8.2: a refusal). */
  at(index: number): number | undefined {
    if (index >= this.size) return undefined
    const byte = this.bytes[index >>> this.perByteShift] as number
    const shift = (index & ((1 << this.perByteShift) - 1)) * this.bits
    return (byte >>> shift) & this.mask
  }
}

/** Why a list's `lst` could not be decoded. */
export type DecodeProblem = 'encoding' | 'compression' | 'too_large'

/**
 * Decodes `lst`. `maxBytes` bounds the decompressed size (a list of a million 1-bit statuses is
 * 125 KB): a longer output stops zlib and is refused, not truncated.
 */
export async function decodeStatusList(
  lst: string,
  bits: StatusBits,
  maxBytes: number,
): Promise<StatusBitList | DecodeProblem> {
  if (!/^[A-Za-z0-9_-]*$/.test(lst) || lst.length % 4 === 1) return 'encoding'
  const compressed = Buffer.from(lst, 'base64url')
  let bytes: Buffer
  try {
    bytes = await inflateAsync(compressed, { maxOutputLength: maxBytes })
  } catch (error) {
    return (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE'
      ? 'too_large'
      : 'compression'
  }
  if (bytes.length === 0) return 'compression'
  return new StatusBitList(bytes, bits)
}

/**
 * Encodes statuses as a list's `lst` (§4.1): `bits` bits each, index 0 in the least significant
 * bits of byte 0, ZLIB-compressed, base64url. For issuers (the testing kit's): a gate only reads.
 */
export function encodeStatusList(statuses: ArrayLike<number>, bits: StatusBits): string {
  const perByte = 8 / bits
  const bytes = new Uint8Array(Math.max(1, Math.ceil(statuses.length / perByte)))
  const mask = (1 << bits) - 1
  for (let index = 0; index < statuses.length; index++) {
    const value = statuses[index] as number
    if (!Number.isInteger(value) || value < 0 || value > mask) {
      throw new RangeError(`status ${index} must be a whole number from 0 to ${mask}`)
    }
    const byte = Math.floor(index / perByte)
    bytes[byte] = (bytes[byte] as number) | (value << ((index % perByte) * bits))
  }
  return deflateSync(bytes, { level: 9 }).toString('base64url')
}
