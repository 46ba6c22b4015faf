/**
 * Attack class: sender-constrained tokens (RFC 9449). A DPoP-bound token stolen without its key,
 * proofs captured and replayed, proofs forged with `none`, a MAC or a leaked private key, proofs
 * for another request, and the downgrade of a bound token to the Bearer scheme. Every case runs
 * through the four framework majors with the hygiene checks (nothing echoed, proof included).
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import {
  createDpopKey,
  createTestIssuer,
  type DpopProofOptions,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  type Case,
  type Expected,
  INVALID_TOKEN,
  OK,
  type Probe,
  ROUTE,
  useApps,
} from './helpers.js'

const BASE = 'https://api.example.test'
const ALGS = 'algs="ES256 EdDSA PS256 RS256"'
let issuer: TestIssuer
let key: TestDpopKey
let thief: TestDpopKey

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  key = await createDpopKey('ES256')
  thief = await createDpopKey('ES256')
})
afterAll(async () => {
  await issuer.close()
})

const PROOF: Expected = {
  status: 401,
  challenge: `Bearer realm="api", DPoP realm="api", error="invalid_dpop_proof", error_description="invalid DPoP proof", ${ALGS}`,
  body: { error: 'invalid_dpop_proof', error_description: 'invalid DPoP proof' },
}
const BINDING: Expected = {
  status: 401,
  challenge: `Bearer realm="api", DPoP realm="api", error="invalid_token", error_description="invalid token", ${ALGS}`,
  body: INVALID_TOKEN.body,
}
const DOWNGRADE: Expected = {
  status: 401,
  challenge: `Bearer realm="api", error="invalid_token", error_description="invalid token", DPoP realm="api", ${ALGS}`,
  body: INVALID_TOKEN.body,
}

/** A DPoP request for ROUTE with a bound token; `proof` changes what the proof says. */
async function dpop(
  proof: Partial<DpopProofOptions> = {},
  signer: TestDpopKey = key,
  extraHeaders: ReadonlyArray<readonly [string, string]> = [],
): Promise<Probe> {
  const token = await issuer.mint({}, { dpop: key })
  const value = await signer.proof({
    method: 'GET',
    url: `${BASE}${ROUTE}`,
    accessToken: token,
    ...proof,
  })
  return { authorization: `DPoP ${token}`, headers: [['DPoP', value], ...extraHeaders] }
}

const now = () => Math.floor(Date.now() / 1000)

describe('DPoP allowed', () => {
  const apps = useApps(() => ({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    dpop: { mode: 'allowed', publicBaseUrl: BASE },
  }))

  const cases: Case[] = [
    ['a bound token with its proof (control)', () => dpop(), OK],
    ['a proof for another path', () => dpop({ url: `${BASE}/api/v1/admin` }), PROOF],
    ['a proof for another origin', () => dpop({ url: `https://evil.example${ROUTE}` }), PROOF],
    [
      'a proof for http instead of https',
      () => dpop({ url: `http://api.example.test${ROUTE}` }),
      PROOF,
    ],
    ['a proof for another method', () => dpop({ method: 'DELETE' }), PROOF],
    ['a proof from two minutes ago', () => dpop({ iat: now() - 120 }), PROOF],
    ['a proof from the future', () => dpop({ iat: now() + 120 }), PROOF],
    ['a proof for another token', () => dpop({ accessToken: 'other.access.token' }), PROOF],
    ['a proof signed by a thief with his own key', () => dpop({}, thief), BINDING],
    [
      'a thief proof carrying the victim public key',
      () => dpop({ header: { jwk: key.publicJwk } }, thief),
      PROOF,
    ],
    ['a proof carrying the private key', () => dpop({ header: { jwk: key.privateJwk } }), PROOF],
    ['alg none', () => dpop({ header: { alg: 'none' } }), PROOF],
    ['alg HS256', () => dpop({ header: { alg: 'HS256' } }), PROOF],
    ['typ JWT', () => dpop({ header: { typ: 'JWT' } }), PROOF],
    ['crit in the header', () => dpop({ header: { crit: ['htu'] } }), PROOF],
    ['jwk as a string', () => dpop({ header: { jwk: 'x' } }), PROOF],
    ['jti missing', () => dpop({ claims: { jti: undefined } }), PROOF],
    ['htu as an array', () => dpop({ claims: { htu: [`${BASE}${ROUTE}`] } }), PROOF],
    ['iat as a string', () => dpop({ claims: { iat: String(now()) } }), PROOF],
    [
      'two DPoP fields',
      async () => {
        const probe = await dpop()
        return { ...probe, headers: [...(probe.headers ?? []), ...(probe.headers ?? [])] }
      },
      PROOF,
    ],
    ['an empty DPoP field', async () => ({ ...(await dpop()), headers: [['DPoP', '']] }), PROOF],
    [
      'a proof that is not a JWS',
      async () => ({ ...(await dpop()), headers: [['DPoP', 'not-a-proof']] }),
      PROOF,
    ],
    [
      'the bound token with the Bearer scheme',
      async () => ({ authorization: `Bearer ${await issuer.mint({}, { dpop: key })}` }),
      DOWNGRADE,
    ],
    [
      'the bound token with the Bearer scheme and a valid proof',
      async () => {
        const probe = await dpop()
        return {
          ...probe,
          authorization: (probe.authorization as string).replace('DPoP', 'Bearer'),
        }
      },
      DOWNGRADE,
    ],
    [
      'an unbound token with the DPoP scheme and a proof',
      async () => {
        const token = await issuer.mint()
        const proof = await key.proof({ method: 'GET', url: `${BASE}${ROUTE}`, accessToken: token })
        return { authorization: `DPoP ${token}`, headers: [['DPoP', proof]] }
      },
      BINDING,
    ],
    [
      'X-Forwarded headers naming the proof URL do not change the request URL',
      () =>
        dpop({ url: `https://evil.example${ROUTE}` }, key, [
          ['X-Forwarded-Host', 'evil.example'],
          ['X-Forwarded-Proto', 'https'],
        ]),
      PROOF,
    ],
    [
      'the DPoP scheme in lower case',
      async () => {
        const probe = await dpop()
        return { ...probe, authorization: (probe.authorization as string).replace('DPoP', 'dpop') }
      },
      OK,
    ],
    [
      'the DPoP scheme with two tokens',
      async () => {
        const probe = await dpop()
        return { ...probe, authorization: `${probe.authorization as string} extra` }
      },
      { status: 400 },
    ],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })

  it('refuses a captured proof replayed after the client used it', async () => {
    const probe = await dpop()
    await apps.expectAll(probe, OK)
    await apps.expectAll(probe, PROOF)
  })
})
