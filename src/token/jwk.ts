/**
 * Turning one JWK into a verification key: which keys may verify which allowed algorithms, and
 * their identity across refreshes.
 *
 * @module
 */
import { createPublicKey, type KeyObject } from 'node:crypto'

import {
  ALGORITHMS,
  type JWSAlgorithm,
  type PreparedVerifier,
  prepareVerifier,
} from './algorithms.js'

/** A verification key with its `crypto.verify` arguments per algorithm. */
export interface PreparedKey {
  readonly kid: string | undefined
  readonly verifiers: Readonly<Partial<Record<JWSAlgorithm, PreparedVerifier>>>
  /** Set when a refresh no longer lists this key: anything verified with it must be re-verified. */
  retired: boolean
}

const MIN_RSA_MODULUS_BITS = 2048
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

const PUBLIC_MEMBERS: Record<string, readonly string[]> = {
  RSA: ['n', 'e'],
  EC: ['crv', 'x', 'y'],
  OKP: ['crv', 'x'],
}

/**
 * Identity of a key across refreshes: everything that decides whether and how it may verify
 * (kid, alg, use, key_ops, private members) and its public material. A key republished with
 * `use: enc` or with private members is a different key, and is judged again.
 */
export function fingerprintOf(jwk: unknown): string | undefined {
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return undefined
  const record = jwk as Record<string, unknown>
  const members = typeof record.kty === 'string' ? PUBLIC_MEMBERS[record.kty] : undefined
  if (members === undefined) return undefined
  const privateMembers = PRIVATE_MEMBERS.filter((member) => record[member] !== undefined)
  const parts = [record.kty, record.kid, record.alg, record.use, record.key_ops, privateMembers]
  for (const member of members) {
    if (typeof record[member] !== 'string') return undefined
    parts.push(record[member])
  }
  return JSON.stringify(parts)
}

/**
 * Imports a JWK for verification, or `undefined` when it must not verify anything here:
 * encryption keys, keys whose `key_ops` exclude verify, keys carrying private members (a
 * misconfigured provider; the private half is never touched), short RSA moduli, and keys whose
 * `alg`, `kty` and `crv` do not fit an allowed algorithm.
 */
export function prepareKey(
  record: Record<string, unknown>,
  allowed: readonly JWSAlgorithm[],
): PreparedKey | undefined {
  if (record.use !== undefined && record.use !== 'sig') return undefined
  if (record.key_ops !== undefined) {
    if (!Array.isArray(record.key_ops) || !record.key_ops.includes('verify')) return undefined
  }
  if (PRIVATE_MEMBERS.some((member) => record[member] !== undefined)) return undefined
  if (record.kid !== undefined && (typeof record.kid !== 'string' || record.kid.length === 0)) {
    return undefined
  }
  if (record.alg !== undefined && typeof record.alg !== 'string') return undefined
  const crv = typeof record.crv === 'string' ? record.crv : undefined
  const algorithms = allowed.filter((alg) => {
    const spec = ALGORITHMS[alg]
    if (spec.kty !== record.kty) return false
    if (spec.curves !== undefined && (crv === undefined || !spec.curves.includes(crv))) return false
    return record.alg === undefined || record.alg === alg
  })
  if (algorithms.length === 0) return undefined

  let key: KeyObject
  try {
    const publicJwk: Record<string, string> = { kty: record.kty as string }
    for (const member of PUBLIC_MEMBERS[record.kty as string] ?? []) {
      publicJwk[member] = record[member] as string
    }
    key = createPublicKey({ key: publicJwk, format: 'jwk' })
  } catch {
    return undefined
  }
  if (
    record.kty === 'RSA' &&
    (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_MODULUS_BITS
  ) {
    return undefined
  }
  const verifiers: Partial<Record<JWSAlgorithm, PreparedVerifier>> = {}
  for (const alg of algorithms) verifiers[alg] = prepareVerifier(alg, key, crv)
  return { kid: record.kid as string | undefined, verifiers, retired: false }
}
