/**
 * A minimal self-signed X.509 certificate, DER-encoded by hand, so header-injection cases can
 * carry an attacker's certificate in `x5c` without a stored private key or an openssl binary.
 */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto'

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size])
  const bytes: number[] = []
  for (let rest = size; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content)
  return Buffer.concat([Buffer.from([tag]), length(body.length), body])
}

const SEQUENCE = 0x30
const SHA256_WITH_RSA = Buffer.from('06092a864886f70d01010b0500', 'hex') // OID + NULL
const COMMON_NAME = Buffer.from('0603550403', 'hex')

function name(commonName: string): Buffer {
  return tlv(SEQUENCE, tlv(0x31, tlv(SEQUENCE, COMMON_NAME, tlv(0x0c, Buffer.from(commonName)))))
}

/** A self-signed RSA certificate for `commonName` and its private key. */
export function selfSignedCertificate(commonName = 'attacker.example'): {
  der: Buffer
  privateKey: KeyObject
  publicKey: KeyObject
} {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const algorithm = tlv(SEQUENCE, SHA256_WITH_RSA)
  const tbs = tlv(
    SEQUENCE,
    Buffer.from('a003020102', 'hex'), // [0] version v3
    Buffer.from('020101', 'hex'), // serial 1
    algorithm,
    name(commonName),
    tlv(
      SEQUENCE,
      tlv(0x17, Buffer.from('250101000000Z')),
      tlv(0x18, Buffer.from('20991231235959Z')),
    ),
    name(commonName),
    publicKey.export({ type: 'spki', format: 'der' }),
  )
  const signature = sign('sha256', tbs, privateKey)
  const der = tlv(SEQUENCE, tbs, algorithm, tlv(0x03, Buffer.from([0]), signature))
  return { der, privateKey, publicKey }
}
