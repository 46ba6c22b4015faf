/**
 * Hand-made tokens for the attack suites: exact headers and payloads, any signature, any key.
 * Nothing here goes through the library under test.
 */
import {
  constants,
  createHmac,
  createPrivateKey,
  generateKeyPairSync,
  KeyObject,
  sign,
} from 'node:crypto'

import type { TestIssuer } from '../../src/testing/index.js'

export type Json = Record<string, unknown>

/** base64url of a JSON value, a UTF-8 string or raw bytes. */
export function b64(value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString('base64url')
  if (typeof value === 'string') return Buffer.from(value, 'utf8').toString('base64url')
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

/** The three segments of a compact token. */
export function parts(token: string): [string, string, string] {
  const [header = '', payload = '', signature = ''] = token.split('.')
  return [header, payload, signature]
}

export function decode(segment: string): Json {
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Json
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000)
}

/** Claims of a good access token of `realm` for audience `gateway`, with `overrides` on top. */
export function accessClaims(issuer: TestIssuer, overrides: Json = {}, realm?: string): Json {
  const now = nowSeconds()
  const claims: Json = {
    iss: issuer.issuer(realm),
    aud: 'gateway',
    sub: 'user-1',
    azp: 'test-client',
    typ: 'Bearer',
    scope: 'openid profile',
    iat: now,
    exp: now + 300,
    jti: `jti-${Math.random().toString(36).slice(2)}`,
    ...overrides,
  }
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name]
  return claims
}

/** A compact JWS with exactly these segments; `signature` is raw bytes or already-encoded text. */
export function compact(
  header: unknown,
  payload: unknown,
  signature: Buffer | string = '',
): string {
  const sig = typeof signature === 'string' ? signature : signature.toString('base64url')
  return `${b64(header)}.${b64(payload)}.${sig}`
}

/** HS* token signed with `secret`: the RS→HS key-confusion attack. */
export function hmacToken(
  header: Json,
  payload: Json | string,
  secret: Buffer | string,
  hash: 'sha256' | 'sha384' | 'sha512' = 'sha256',
): string {
  const input = `${b64(header)}.${b64(payload)}`
  return `${input}.${createHmac(hash, secret).update(input).digest('base64url')}`
}

const HASHES: Record<string, string | null> = {
  RS256: 'sha256',
  RS384: 'sha384',
  RS512: 'sha512',
  PS256: 'sha256',
  PS384: 'sha384',
  PS512: 'sha512',
  ES256: 'sha256',
  ES384: 'sha384',
  ES512: 'sha512',
  EdDSA: null,
}

/** Signs `signingInput` as `alg` would with `key` (node:crypto, synchronous). */
export function signInput(key: KeyObject, alg: string, signingInput: string): Buffer {
  const hash = HASHES[alg] ?? null
  const data = Buffer.from(signingInput, 'latin1')
  if (alg.startsWith('PS')) {
    const saltLength = hash === 'sha256' ? 32 : hash === 'sha384' ? 48 : 64
    return sign(hash, data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength })
  }
  if (alg.startsWith('ES')) return sign(hash, data, { key, dsaEncoding: 'ieee-p1363' })
  return sign(hash, data, key)
}

/** A compact JWS of exactly `header` and `payload` signed with `key` as `alg`. */
export function signWith(key: KeyObject, alg: string, header: unknown, payload: unknown): string {
  const input = `${b64(header)}.${b64(payload)}`
  return `${input}.${signInput(key, alg, input).toString('base64url')}`
}

/** A compact JWS of header and payload JSON *text* exactly as written, signed with `key`. */
export function signText(
  key: KeyObject,
  alg: string,
  headerText: string,
  payloadText: string,
): string {
  const input = `${b64(headerText)}.${b64(payloadText)}`
  return `${input}.${signInput(key, alg, input).toString('base64url')}`
}

/** The private key of one of the test issuer's keys, as a node:crypto KeyObject. */
export function privateKeyOf(issuer: TestIssuer, kid: string): KeyObject {
  return KeyObject.from(issuer.privateKey(kid).key)
}

/** The published JWK of `kid` (public members, `kid`, `alg`, `use`). */
export function publicJwkOf(issuer: TestIssuer, kid: string, realm?: string): Json {
  const jwk = issuer.jwks(realm).keys.find((key) => key['kid'] === kid)
  if (jwk === undefined) throw new Error(`no published key ${kid}`)
  return jwk
}

/** The kid of the realm's current key for `alg` (read from a freshly minted token). */
export async function kidOf(issuer: TestIssuer, alg: string, realm?: string): Promise<string> {
  const token = await issuer.mint({}, { alg: alg as 'RS256', realm })
  return decode(parts(token)[0])['kid'] as string
}

/** A key pair nobody trusts. */
export function attackerKey(kind: 'rsa' | 'ec' | 'ed25519' = 'rsa') {
  if (kind === 'rsa') return generateKeyPairSync('rsa', { modulusLength: 2048 })
  if (kind === 'ec') return generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return generateKeyPairSync('ed25519')
}

export function privateKeyFromJwk(jwk: Json): KeyObject {
  return createPrivateKey({ key: jwk as never, format: 'jwk' })
}
