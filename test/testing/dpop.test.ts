import { createHash } from 'node:crypto'

import {
  calculateJwkThumbprint,
  decodeJwt,
  decodeProtectedHeader,
  importJWK,
  jwtVerify,
} from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDpopKey, createTestIssuer, type TestIssuer } from '../../src/testing/index.js'

let issuer: TestIssuer

beforeAll(async () => {
  issuer = await createTestIssuer({ audience: 'orders' })
})
afterAll(async () => {
  await issuer.close()
})

describe('createDpopKey', () => {
  it('names the key by its RFC 7638 thumbprint and publishes only its public members', async () => {
    const key = await createDpopKey()
    expect(key.alg).toBe('ES256')
    expect(Object.keys(key.publicJwk).sort()).toEqual(['crv', 'kty', 'x', 'y'])
    expect(key.jkt).toBe(await calculateJwkThumbprint(key.publicJwk))
    expect(key.privateJwk).toHaveProperty('d')
  })

  it('signs proofs that jose verifies with the key they carry (RFC 9449 §4.2)', async () => {
    const key = await createDpopKey('EdDSA')
    const proof = await key.proof({
      method: 'POST',
      url: 'https://api.example.test/orders?page=2#top',
      accessToken: 'a.b.c',
      nonce: 'n-1',
    })
    const header = decodeProtectedHeader(proof)
    expect(header).toEqual({ typ: 'dpop+jwt', alg: 'EdDSA', jwk: key.publicJwk })
    const { payload } = await jwtVerify(proof, await importJWK(key.publicJwk, 'EdDSA'), {
      typ: 'dpop+jwt',
    })
    expect(payload).toMatchObject({
      htm: 'POST',
      htu: 'https://api.example.test/orders',
      ath: createHash('sha256').update('a.b.c').digest('base64url'),
      nonce: 'n-1',
    })
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('lets a test remove or override any header member or claim', async () => {
    const key = await createDpopKey()
    const proof = await key.proof({
      method: 'GET',
      url: 'https://api.example.test/',
      header: { typ: undefined, alg: 'none' },
      claims: { iat: undefined, extra: true },
    })
    expect(decodeProtectedHeader(proof)).toEqual({ alg: 'none', jwk: key.publicJwk })
    expect(decodeJwt(proof)).not.toHaveProperty('iat')
    expect(decodeJwt(proof)).toHaveProperty('extra', true)
  })

  it('gives the two headers of a DPoP request, with a fresh jti each time', async () => {
    const key = await createDpopKey()
    const request = { method: 'GET', url: 'https://api.example.test/orders' }
    const first = await key.headers('tok.en.value', request)
    const second = await key.headers('tok.en.value', request)
    expect(first.Authorization).toBe('DPoP tok.en.value')
    expect(decodeJwt(first.DPoP).jti).not.toBe(decodeJwt(second.DPoP).jti)
  })
})

describe('TestIssuer.mint with a DPoP key', () => {
  it('binds the token to the key through cnf.jkt (RFC 9449 §6.1)', async () => {
    const key = await createDpopKey()
    const token = await issuer.mint({ sub: 'alice' }, { dpop: key })
    expect(decodeJwt(token)).toMatchObject({ sub: 'alice', cnf: { jkt: key.jkt } })
  })

  it('lets a cnf claim given by the test win', async () => {
    const key = await createDpopKey()
    const token = await issuer.mint({ cnf: { jkt: 'other' } }, { dpop: key })
    expect(decodeJwt(token).cnf).toEqual({ jkt: 'other' })
  })
})
