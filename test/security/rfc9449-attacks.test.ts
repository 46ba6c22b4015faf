/**
 * DPoP proof checks of RFC 9449 §4.3, written from the RFC's list, over HTTP on every adapter:
 * each case is a proof that one check must refuse (401 `invalid_dpop_proof`), for a token bound
 * to the signing key, beside a control proof that is admitted. The header is a JWS header the
 * gate must understand in full (RFC 7515 §4.1.11: `crit`; RFC 7797: `b64: false` changes what
 * is signed), `htm` is the request's method exactly as sent (RFC 9110 §9.1: methods are case
 * sensitive), `jti` is bounded (RFC 9449 §11.1: the server stores it), a `nonce` is never
 * empty, and `iat` is not ahead of the clock beyond its tolerance.
 */
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import {
  createDpopKey,
  createTestIssuer,
  type DpopProofOptions,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'

const BASE = 'https://api.example.test'
const ROUTE = '/api/v1/billing/subscriptions'

let issuer: TestIssuer
let key: TestDpopKey

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  key = await createDpopKey('ES256')
})
afterAll(async () => {
  await issuer.close()
})

async function listen(server: ProtectedServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function close(server: ProtectedServer): Promise<void> {
  await server.gate.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}

/** What a proof says besides the defaults for GET of ROUTE, and the check that refuses it. */
const CASES: ReadonlyArray<
  readonly [label: string, proof: Partial<DpopProofOptions>, check: string]
> = [
  ['a header with b64: false (RFC 7797)', { header: { b64: false } }, 'header'],
  ['a header with b64: true', { header: { b64: true } }, 'header'],
  ['a header with crit', { header: { crit: ['exp'], exp: 1 } }, 'header'],
  ['htm in lower case', { method: 'get' }, 'htm'],
  ['htm of another method', { method: 'POST' }, 'htm'],
  ['a jti of 257 characters', { jti: 'j'.repeat(257) }, 'jti'],
  ['an empty jti', { claims: { jti: '' } }, 'jti'],
  ['an empty nonce', { claims: { nonce: '' } }, 'nonce'],
  ['a nonce that is a number', { claims: { nonce: 7 } }, 'nonce'],
]

describe.each(APPS)('DPoP proof checks (RFC 9449 §4.3) through %s', (_name, createApp) => {
  it('admits the control proof and refuses each proof a check must refuse', async () => {
    const events: GateEvent[] = []
    const server = createApp({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      dpop: { mode: 'allowed', publicBaseUrl: BASE },
      onEvent: (event) => events.push(event),
    })
    try {
      const url = await listen(server)
      const token = await issuer.mint({ sub: 'alice' }, { dpop: key })
      const send = async (proof: Partial<DpopProofOptions>) => {
        const value = await key.proof({
          method: 'GET',
          url: `${BASE}${ROUTE}`,
          accessToken: token,
          ...proof,
        })
        const res = await fetch(`${url}${ROUTE}`, {
          headers: { authorization: `DPoP ${token}`, dpop: value },
        })
        return { status: res.status, body: await res.text() }
      }
      expect((await send({})).status).toBe(200)
      // A 256-character jti is within the bound.
      expect((await send({ jti: 'j'.repeat(256) })).status).toBe(200)
      for (const [label, proof, check] of CASES) {
        events.length = 0
        const answer = await send(proof)
        expect(answer.status, label).toBe(401)
        expect(JSON.parse(answer.body), label).toMatchObject({ error: 'invalid_dpop_proof' })
        const rejected = events.find((event) => event.type === 'rejected')
        expect(rejected, label).toMatchObject({ reason: 'dpop_proof', detail: { check } })
      }
    } finally {
      await close(server)
    }
  })
})
