/**
 * The asymmetric JWS algorithms tollgate verifies, and how each maps to node:crypto.
 * Symmetric (HS*) and `none` are absent on purpose: no option can turn them on (RFC 8725 §3.1, §3.2).
 *
 * @module
 */
import { constants, type KeyObject, verify } from 'node:crypto'

/** Every algorithm tollgate can verify. */
export type JWSAlgorithm =
  | 'RS256'
  | 'RS384'
  | 'RS512'
  | 'PS256'
  | 'PS384'
  | 'PS512'
  | 'ES256'
  | 'ES384'
  | 'ES512'
  | 'EdDSA'

/** Default allow-list: the asymmetric algorithms OpenID providers sign access tokens with. */
export const DEFAULT_ALGORITHMS: readonly JWSAlgorithm[] = ['RS256', 'PS256', 'ES256', 'EdDSA']

interface AlgorithmSpec {
  /** Digest for `crypto.verify`; `null` for EdDSA, which hashes internally. */
  readonly hash: string | null
  readonly kty: 'RSA' | 'EC' | 'OKP'
  /** For EC and OKP keys: the only curves this algorithm may use. */
  readonly curves?: readonly string[]
  readonly pss?: boolean
  /** Fixed signature length in bytes (ECDSA r||s, Ed25519), when the algorithm has one. */
  readonly signatureBytes?: number
}

export const ALGORITHMS: Readonly<Record<JWSAlgorithm, AlgorithmSpec>> = {
  RS256: { hash: 'sha256', kty: 'RSA' },
  RS384: { hash: 'sha384', kty: 'RSA' },
  RS512: { hash: 'sha512', kty: 'RSA' },
  PS256: { hash: 'sha256', kty: 'RSA', pss: true },
  PS384: { hash: 'sha384', kty: 'RSA', pss: true },
  PS512: { hash: 'sha512', kty: 'RSA', pss: true },
  ES256: { hash: 'sha256', kty: 'EC', curves: ['P-256'], signatureBytes: 64 },
  ES384: { hash: 'sha384', kty: 'EC', curves: ['P-384'], signatureBytes: 96 },
  ES512: { hash: 'sha512', kty: 'EC', curves: ['P-521'], signatureBytes: 132 },
  EdDSA: { hash: null, kty: 'OKP', curves: ['Ed25519', 'Ed448'] },
}

const PSS_SALT_BYTES: Record<string, number> = { sha256: 32, sha384: 48, sha512: 64 }

export function isJWSAlgorithm(value: unknown): value is JWSAlgorithm {
  return typeof value === 'string' && Object.hasOwn(ALGORITHMS, value)
}

/** What `crypto.verify` needs for one (key, algorithm) pair, built once per key refresh. */
export interface PreparedVerifier {
  readonly hash: string | null
  readonly key:
    | KeyObject
    | { key: KeyObject; padding?: number; saltLength?: number; dsaEncoding?: 'ieee-p1363' }
  /** Exact signature length the algorithm and key imply, or 0 when not fixed. */
  readonly signatureBytes: number
  /** ECDSA: the JWS signature is r||s and is handed to `crypto.verify` as DER. */
  readonly ecdsa?: boolean
}

function derInteger(bytes: Buffer): Buffer {
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0) start++
  const body = bytes.subarray(start)
  const pad = (body[0] as number) & 0x80 ? Buffer.of(0) : Buffer.alloc(0)
  return Buffer.concat([Buffer.of(0x02, body.length + pad.length), pad, body])
}

/** r||s (IEEE P1363) as a DER ECDSA-Sig-Value (RFC 3279 §2.2.3). */
function derOfP1363(signature: Buffer): Buffer {
  const half = signature.length / 2
  const content = Buffer.concat([
    derInteger(signature.subarray(0, half)),
    derInteger(signature.subarray(half)),
  ])
  const length = content.length < 0x80 ? Buffer.of(content.length) : Buffer.of(0x81, content.length)
  return Buffer.concat([Buffer.of(0x30), length, content])
}

/** Builds the `crypto.verify` arguments for `alg` with `key`; the caller checked compatibility. */
export function prepareVerifier(
  alg: JWSAlgorithm,
  key: KeyObject,
  crv: string | undefined,
): PreparedVerifier {
  const spec = ALGORITHMS[alg]
  if (spec.kty === 'RSA') {
    const modulusBits = key.asymmetricKeyDetails?.modulusLength ?? 0
    const signatureBytes = Math.ceil(modulusBits / 8)
    if (spec.pss) {
      const saltLength = PSS_SALT_BYTES[spec.hash as string] as number
      return {
        hash: spec.hash,
        key: { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength },
        signatureBytes,
      }
    }
    return { hash: spec.hash, key, signatureBytes }
  }
  if (spec.kty === 'EC') {
    // JWS carries ECDSA signatures as r||s (RFC 7518 §3.4): signatureMatches turns them into DER,
    // because workerd's verify() refuses a KeyObject inside { key, dsaEncoding }.
    return { hash: spec.hash, key, signatureBytes: spec.signatureBytes ?? 0, ecdsa: true }
  }
  return { hash: null, key, signatureBytes: crv === 'Ed448' ? 114 : 64 }
}

/**
 * Whether `signature` is a valid signature of `data` under `verifier`. A signature of the wrong
 * length (a DER-encoded ECDSA signature, a truncated RSA one) is refused before `crypto.verify`;
 * a malformed one is `false`, never an exception.
 */
export function signatureMatches(
  data: Buffer,
  signature: Buffer,
  verifier: PreparedVerifier,
): boolean {
  if (verifier.signatureBytes !== 0 && signature.length !== verifier.signatureBytes) return false
  try {
    const bytes = verifier.ecdsa === true ? derOfP1363(signature) : signature
    return verify(verifier.hash, data, verifier.key, bytes)
  } catch {
    return false
  }
}
