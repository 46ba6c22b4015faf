/**
 * Checking one DPoP proof (RFC 9449 §4.3) against the request and the access token it comes
 * with: strict compact JWS parse, `typ`, an allowed asymmetric `alg`, a public `jwk` whose RFC 7638
 * thumbprint is the token's `cnf.jkt`, the signature, `htm`, `htu`, `iat` and `ath`. Nonces and
 * replay are the caller's (they need state); nothing here does I/O.
 *
 * @module
 */
import { hash } from 'node:crypto'

import { LRUCache } from 'lru-cache'
import { InvalidDpopProofError, InvalidTokenError } from '../errors.js'
import { type JWSAlgorithm, signatureMatches } from '../token/algorithms.js'
import { type PreparedKey, prepareKey } from '../token/jwk.js'
import { parseCompactJWS } from '../token/jws.js'

/** A proof that passed every stateless check. */
export interface CheckedProof {
  readonly jti: string
  readonly nonce: string | undefined
}

/** What a proof must match: the request and the token it comes with. */
export interface ProofExpectations {
  readonly method: string | undefined
  /** The request's URL, normalized with {@link normalizeHtu}; `undefined` when it cannot be known. */
  readonly htu: string | undefined
  readonly token: string
  /** The token's `cnf.jkt`. */
  readonly jkt: string
}

/** A proof key: its thumbprint, and the key itself unless it may not verify (short RSA…). */
interface Signer {
  readonly jkt: string
  readonly key: PreparedKey | undefined
}

/** The settings of proof checks, and the keys already imported, for one gate. */
export interface ProofChecker {
  check(proof: string, expected: ProofExpectations, nowMs: number): CheckedProof
}

// RFC 7638 §3.2: the required members of each key type, in lexicographic order.
const THUMBPRINT_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  OKP: ['crv', 'kty', 'x'],
  RSA: ['e', 'kty', 'n'],
}
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']
/** Larger proofs are refused unparsed: an RSA 4096 key in the header stays well below. */
export const MAX_PROOF_BYTES = 8192
const MAX_JTI_LENGTH = 256
/** Keys of recent clients: a client signs many proofs with one key, under one header. */
const MAX_CACHED_KEYS = 1000
const UNRESERVED = /[A-Za-z0-9\-._~]/

const invalid = (check: string) => new InvalidDpopProofError({ detail: { check } })

/** The RFC 7638 SHA-256 thumbprint of a public JWK, base64url; `undefined` if it is not one. */
export function jwkThumbprint(jwk: Readonly<Record<string, unknown>>): string | undefined {
  const members = typeof jwk.kty === 'string' ? THUMBPRINT_MEMBERS[jwk.kty] : undefined
  if (members === undefined) return undefined
  const parts: string[] = []
  for (const member of members) {
    const value = jwk[member]
    if (typeof value !== 'string' || value === '') return undefined
    parts.push(`${JSON.stringify(member)}:${JSON.stringify(value)}`)
  }
  return hash('sha256', `{${parts.join(',')}}`, 'base64url')
}

/** base64url(SHA-256(token)): the `ath` of a proof for `token` (RFC 9449 §4.2). */
export function accessTokenHash(token: string): string {
  // Tokens are ASCII (b64token), so UTF-8, what hash() encodes strings with, is ASCII here.
  return hash('sha256', token, 'base64url')
}

/**
 * An `http(s)` URL without query and fragment, normalized as RFC 9449 §4.3 asks (RFC 3986 §6.2.2
 * and §6.2.3): lower-case scheme and host, no default port, dot segments resolved, an empty path
 * as `/`, percent-escapes of unreserved characters decoded and the others upper-cased.
 * `undefined` for anything else.
 */
export function normalizeHtu(value: string): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return undefined
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
  if (url.username !== '' || url.password !== '') return undefined
  const path = url.pathname.replace(/%[0-9A-Fa-f]{2}/g, (encoded) => {
    const character = String.fromCharCode(Number.parseInt(encoded.slice(1), 16))
    return UNRESERVED.test(character) ? character : encoded.toUpperCase()
  })
  return `${url.protocol}//${url.host}${path}`
}

/** Creates the proof checker of one gate. */
export function createProofChecker(settings: {
  readonly algorithms: readonly JWSAlgorithm[]
  readonly maxProofAgeSeconds: number
  readonly clockToleranceSeconds: number
}): ProofChecker {
  const algorithms = new Set<string>(settings.algorithms)
  // By the proof's encoded header: its `jwk` decides everything cached here, and a client sends
  // the same header with every proof, so the key is judged, hashed and imported once.
  const signers = new LRUCache<string, Signer>({ max: MAX_CACHED_KEYS })
  const maxAge = settings.maxProofAgeSeconds
  const tolerance = settings.clockToleranceSeconds

  /** The proof key of `jwk`, imported from its required members only. */
  function signerOf(jwk: unknown): Signer {
    if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw invalid('jwk')
    const record = jwk as Record<string, unknown>
    // RFC 9449 §4.3 step 7: a private key in the header means the client leaked it.
    if (PRIVATE_MEMBERS.some((member) => record[member] !== undefined)) throw invalid('private_key')
    const jkt = jwkThumbprint(record)
    if (jkt === undefined) throw invalid('jwk')
    const publicOnly: Record<string, unknown> = {}
    for (const member of THUMBPRINT_MEMBERS[record.kty as string] ?? []) {
      publicOnly[member] = record[member]
    }
    return { jkt, key: prepareKey(publicOnly, settings.algorithms) }
  }

  function check(proof: string, expected: ProofExpectations, nowMs: number): CheckedProof {
    if (proof.length > MAX_PROOF_BYTES) throw invalid('too_large')
    const parsed = parseCompactJWS(proof)
    if (parsed === undefined) throw invalid('syntax')
    const { header, payload } = parsed
    // RFC 9449 §4.2: explicit typing keeps other JWTs (an access or ID token) from passing as proofs.
    if (typeof header.typ !== 'string' || header.typ.toLowerCase() !== 'dpop+jwt') {
      throw invalid('typ')
    }
    // RFC 9449 §4.3 step 5: an asymmetric algorithm from the allow-list; `none` and MACs never.
    const alg = header.alg
    if (typeof alg !== 'string' || !algorithms.has(alg)) throw invalid('alg')
    if (header.crit !== undefined || header.b64 !== undefined) throw invalid('header')
    const encodedHeader = proof.slice(0, proof.indexOf('.'))
    let signer = signers.get(encodedHeader)
    if (signer === undefined) {
      signer = signerOf(header.jwk)
      signers.set(encodedHeader, signer)
    }
    // RFC 9449 §6.1: the proof key must be the key the token was bound to.
    if (signer.jkt !== expected.jkt) throw new InvalidTokenError({ reason: 'dpop_binding' })
    const verifier = signer.key?.verifiers[alg as JWSAlgorithm]
    if (verifier === undefined) throw invalid('jwk')
    if (!signatureMatches(Buffer.from(parsed.signingInput, 'latin1'), parsed.signature, verifier)) {
      throw invalid('signature')
    }

    const { jti, htm, htu, iat, ath, nonce } = payload
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) throw invalid('jti')
    if (typeof htm !== 'string' || htm !== expected.method) throw invalid('htm')
    if (
      typeof htu !== 'string' ||
      expected.htu === undefined ||
      normalizeHtu(htu) !== expected.htu
    ) {
      throw invalid('htu')
    }
    // RFC 9449 §4.3 step 11, §11.1: a short window, so that the replay cache stays bounded.
    const now = nowMs / 1000
    if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('iat')
    if (iat > now + tolerance || iat < now - maxAge - tolerance) throw invalid('iat')
    // RFC 9449 §4.3 step 12: the proof is for this very token.
    if (typeof ath !== 'string' || ath !== accessTokenHash(expected.token)) throw invalid('ath')
    if (nonce !== undefined && (typeof nonce !== 'string' || nonce === '')) throw invalid('nonce')
    return { jti, nonce }
  }

  return { check }
}
