import { calculateJwkThumbprint } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  accessTokenHash,
  createProofChecker,
  jwkThumbprint,
  MAX_PROOF_BYTES,
  normalizeHtu,
  type ProofExpectations,
} from '../../src/dpop/proof.js'
import { InvalidDpopProofError, InvalidTokenError } from '../../src/errors.js'
import { createDpopKey, type TestDpopKey } from '../../src/testing/index.js'
import { TEST_ALGORITHMS } from '../../src/testing/keys.js'

const NOW_MS = 1_800_000_000_000
const NOW = NOW_MS / 1000
const URL_OF_ROUTE = 'https://api.example.test/orders'
const TOKEN = 'header.payload.signature'

let key: TestDpopKey
let other: TestDpopKey

beforeAll(async () => {
  key = await createDpopKey('ES256')
  other = await createDpopKey('ES256')
})

const checker = () =>
  createProofChecker({
    algorithms: ['ES256', 'EdDSA', 'PS256', 'RS256'],
    maxProofAgeSeconds: 60,
    clockToleranceSeconds: 5,
  })

function expectations(overrides: Partial<ProofExpectations> = {}): ProofExpectations {
  return {
    method: 'GET',
    htu: normalizeHtu(URL_OF_ROUTE),
    token: TOKEN,
    jkt: key.jkt,
    ...overrides,
  }
}

function proofFor(
  options: Parameters<TestDpopKey['proof']>[0] extends infer O ? Partial<O> : never,
) {
  return key.proof({
    method: 'GET',
    url: URL_OF_ROUTE,
    accessToken: TOKEN,
    iat: NOW,
    ...options,
  })
}

function refusalOf(run: () => unknown): { name: string; reason: string; check: unknown } {
  try {
    run()
  } catch (error) {
    if (error instanceof InvalidDpopProofError || error instanceof InvalidTokenError) {
      return { name: error.constructor.name, reason: error.reason, check: error.detail?.check }
    }
    throw error
  }
  throw new Error('expected a refusal')
}

describe('jwkThumbprint', () => {
  it.each(TEST_ALGORITHMS)(
    'matches jose calculateJwkThumbprint for a %s key (RFC 7638)',
    async (alg) => {
      const dpopKey = await createDpopKey(alg)
      expect(jwkThumbprint(dpopKey.publicJwk)).toBe(await calculateJwkThumbprint(dpopKey.publicJwk))
      expect(dpopKey.jkt).toBe(jwkThumbprint(dpopKey.publicJwk))
    },
  )

  it('matches the RFC 7638 §3.1 example', () => {
    const jwk = {
      kty: 'RSA',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
    }
    expect(jwkThumbprint(jwk)).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
  })

  it.each([
    { kty: 'oct', k: 'AAAA' },
    { kty: 'EC', crv: 'P-256', x: 'abc' },
    { kty: 'RSA', n: 1, e: 'AQAB' },
    {},
  ])('is undefined for what is not a public key: %j', (jwk) => {
    expect(jwkThumbprint(jwk)).toBeUndefined()
  })
})

describe('normalizeHtu', () => {
  it.each([
    ['https://API.Example.test:443/a/./b/../c', 'https://api.example.test/a/c'],
    ['HTTP://example.test:80', 'http://example.test/'],
    ['https://example.test/%7euser/%2f', 'https://example.test/~user/%2F'],
    ['https://example.test/p?q=1#frag', 'https://example.test/p'],
    ['https://example.test:8443/p', 'https://example.test:8443/p'],
  ])('normalizes %s to %s (RFC 3986 §6.2.2, §6.2.3)', (input, expected) => {
    expect(normalizeHtu(input)).toBe(expected)
  })

  it.each(['ftp://example.test/', 'https://user:pass@example.test/', '/relative', 'not a url'])(
    'refuses %s',
    (input) => {
      expect(normalizeHtu(input)).toBeUndefined()
    },
  )
})

describe('createProofChecker', () => {
  it('accepts a proof for this request, token and key, and returns its jti', async () => {
    const proof = await proofFor({ jti: 'one' })
    expect(checker().check(proof, expectations(), NOW_MS)).toEqual({ jti: 'one', nonce: undefined })
  })

  it('accepts a proof from an iat up to the tolerance ahead and the max age behind', async () => {
    const check = checker()
    for (const iat of [NOW + 5, NOW - 65]) {
      expect(() => check.check(iatProof[iat] as string, expectations(), NOW_MS)).not.toThrow()
    }
  })

  const iatProof: Record<number, string> = {}
  beforeAll(async () => {
    for (const iat of [NOW + 5, NOW - 65, NOW + 6, NOW - 66])
      iatProof[iat] = await proofFor({ iat })
  })

  it('refuses a proof from an iat just outside the window', () => {
    const check = checker()
    for (const iat of [NOW + 6, NOW - 66]) {
      expect(refusalOf(() => check.check(iatProof[iat] as string, expectations(), NOW_MS))).toEqual(
        { name: 'InvalidDpopProofError', reason: 'dpop_proof', check: 'iat' },
      )
    }
  })

  it.each([
    ['typ', { header: { typ: 'JWT' } }],
    ['typ', { header: { typ: undefined } }],
    ['alg', { header: { alg: 'none' } }],
    ['alg', { header: { alg: 'HS256' } }],
    ['alg', { header: { alg: 'ES512' } }],
    ['header', { header: { crit: ['exp'] } }],
    ['jwk', { header: { jwk: undefined } }],
    ['jwk', { header: { jwk: 'key' } }],
    ['jwk', { header: { jwk: { kty: 'EC', crv: 'P-256' } } }],
    ['jwk', { header: { alg: 'RS256' } }],
    ['jti', { jti: '' }],
    ['jti', { jti: 'x'.repeat(257) }],
    ['jti', { claims: { jti: 7 } }],
    ['htm', { method: 'POST' }],
    ['htm', { method: 'get' }],
    ['htu', { url: 'https://api.example.test/orders/1' }],
    ['htu', { url: 'http://api.example.test/orders' }],
    ['htu', { claims: { htu: 42 } }],
    ['iat', { claims: { iat: '1800000000' } }],
    ['ath', { accessToken: 'another.token.value' }],
    ['ath', { claims: { ath: undefined } }],
    ['nonce', { nonce: '' }],
  ] as const)('refuses a proof failing the %s check', async (check, options) => {
    const proof = await proofFor(options as Parameters<typeof proofFor>[0])
    expect(refusalOf(() => checker().check(proof, expectations(), NOW_MS))).toEqual({
      name: 'InvalidDpopProofError',
      reason: 'dpop_proof',
      check,
    })
  })

  it('refuses a proof with the private key in its header', async () => {
    const proof = await proofFor({ header: { jwk: { ...key.privateJwk } } })
    expect(refusalOf(() => checker().check(proof, expectations(), NOW_MS))).toMatchObject({
      check: 'private_key',
    })
  })

  it('refuses a proof with a forged signature', async () => {
    const proof = await proofFor({})
    const forged = await other.proof({
      method: 'GET',
      url: URL_OF_ROUTE,
      accessToken: TOKEN,
      iat: NOW,
    })
    const [header, payload] = proof.split('.')
    const tampered = `${header}.${payload}.${forged.split('.')[2]}`
    expect(refusalOf(() => checker().check(tampered, expectations(), NOW_MS))).toMatchObject({
      check: 'signature',
    })
  })

  it('refuses as invalid_token a proof by a key the token is not bound to (RFC 9449 §6.1)', async () => {
    const proof = await other.proof({
      method: 'GET',
      url: URL_OF_ROUTE,
      accessToken: TOKEN,
      iat: NOW,
    })
    expect(refusalOf(() => checker().check(proof, expectations(), NOW_MS))).toEqual({
      name: 'InvalidTokenError',
      reason: 'dpop_binding',
      check: undefined,
    })
  })

  it('refuses what is not a compact JWS, and oversized proofs unparsed', () => {
    const check = checker()
    for (const proof of ['', 'a.b', 'a.b.c.d', 'x'.repeat(MAX_PROOF_BYTES + 1)]) {
      expect(refusalOf(() => check.check(proof, expectations(), NOW_MS)).check).toMatch(
        /^(syntax|too_large)$/,
      )
    }
  })

  it('refuses every proof when the request URL cannot be known', async () => {
    const proof = await proofFor({})
    expect(
      refusalOf(() => checker().check(proof, expectations({ htu: undefined }), NOW_MS)),
    ).toMatchObject({ check: 'htu' })
  })

  it('hashes the access token as RFC 9449 §4.2 says (base64url SHA-256 of its ASCII)', () => {
    expect(accessTokenHash('Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU')).toBe(
      'fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo',
    )
  })
})
