/**
 * The physical limit of JWT verification with node:crypto: split, base64url-decode, parse the
 * header and payload, and `crypto.verify` against a KeyObject prepared once. No claim checks beyond
 * what a verifier cannot skip (the signature), so nothing real can be faster.
 */
import crypto, { type KeyObject } from 'node:crypto'
import type { Alg } from '../fixtures.ts'

export function rawVerifier(alg: Alg, publicKey: KeyObject): (token: string) => unknown {
  const digest = alg === 'EdDSA' ? null : 'sha256'
  const key = alg === 'ES256' ? { key: publicKey, dsaEncoding: 'ieee-p1363' as const } : publicKey
  return (token) => {
    const [h, p, s] = token.split('.')
    if (h === undefined || p === undefined || s === undefined) throw new Error('malformed')
    const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg: string }
    const payload: unknown = JSON.parse(Buffer.from(p, 'base64url').toString())
    if (header.alg !== alg) throw new Error('alg')
    const data = Buffer.from(`${h}.${p}`)
    if (!crypto.verify(digest, data, key, Buffer.from(s, 'base64url'))) throw new Error('signature')
    return payload
  }
}
