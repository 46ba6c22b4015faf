/**
 * RFC 9701 signed answers (`jwtResponse: true`), by §6: the answer's signature is verified with
 * the gate's own algorithm allow-list (not only RS256, and nothing the gate does not allow), and
 * the keys that verify it obey the rule the JWT path's keys do: a `jwks_uri` over plain http off
 * loopback is refused before any token is sent.
 */
import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'

import { SignJWT } from 'jose'
import request from 'supertest'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import { createGate, type GateOptions } from '../../src/index.js'
import { APPS } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
let endpoint: IntrospectionEndpointStub

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint([
    { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa', use: 'sig', alg: 'RS256' },
    { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec', use: 'sig', alg: 'ES256' },
  ])
})
afterAll(() => endpoint.close())
beforeEach(() => {
  endpoint.calls.length = 0
  endpoint.documents = {}
})

async function signedAnswer(alg: 'RS256' | 'ES256', key: KeyObject, kid: string) {
  const jwt = await new SignJWT({
    token_introspection: {
      active: true,
      iss: endpoint.url,
      aud: 'billing',
      client_id: 'shop',
      scope: 'billing:read',
      exp: Math.floor(Date.now() / 1000) + 120,
    },
  })
    .setProtectedHeader({ alg, kid, typ: 'token-introspection+jwt' })
    .setIssuer(endpoint.url)
    .setAudience('billing-api')
    .setIssuedAt()
    .sign(key)
  return { contentType: 'application/token-introspection+jwt', body: jwt }
}

const optionsOf = (extra: Partial<GateOptions> = {}, events: GateEvent[] = []): GateOptions => ({
  issuers: [
    {
      issuer: endpoint.url,
      jwksUri: `${endpoint.url}/jwks`,
      introspection: {
        endpoint: `${endpoint.url}/introspect`,
        clientId: 'billing-api',
        clientSecret: 'billing-secret',
        jwtResponse: true,
      },
    },
  ],
  audience: 'billing',
  onEvent: (event) => events.push(event),
  ...extra,
})
const check = (gate: ReturnType<typeof createGate>) =>
  gate.check({ headers: { authorization: `Bearer ${randomBytes(24).toString('base64url')}` } })
const failure = (events: GateEvent[]) => events.find((e) => e.type === 'introspection_failed')

describe('the algorithms of signed answers are the gate’s', () => {
  it("admits an answer signed ES256 with the issuer's published key", async () => {
    const answer = await signedAnswer('ES256', ec.privateKey, 'ec')
    endpoint.answer = () => answer
    const gate = createGate(optionsOf())
    await expect(check(gate)).resolves.toMatchObject({ auth: { clientId: 'shop' } })
  })

  it('refuses (503) an answer signed with an algorithm the gate does not allow', async () => {
    const events: GateEvent[] = []
    const answer = await signedAnswer('RS256', rsa.privateKey, 'rsa')
    endpoint.answer = () => answer
    const gate = createGate(optionsOf({ algorithms: ['ES256'] }, events))
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'invalid_response' })
  })

  it('admits an RS256 answer when the gate allows RS256 (the control case)', async () => {
    const answer = await signedAnswer('RS256', rsa.privateKey, 'rsa')
    endpoint.answer = () => answer
    const gate = createGate(optionsOf({ algorithms: ['RS256'] }))
    await expect(check(gate)).resolves.toMatchObject({ auth: { clientId: 'shop' } })
  })
})

describe('the keys of signed answers', () => {
  function discovering(jwksUri: string, events: GateEvent[], jwks: GateOptions['jwks'] = {}) {
    endpoint.documents['/.well-known/openid-configuration'] = {
      body: JSON.stringify({
        issuer: endpoint.url,
        jwks_uri: jwksUri,
        introspection_endpoint: `${endpoint.url}/introspect`,
      }),
    }
    const fetched: string[] = []
    const gate = createGate(
      optionsOf(
        {
          jwks,
          issuers: [
            {
              issuer: endpoint.url,
              discovery: true,
              introspection: {
                clientId: 'billing-api',
                clientSecret: 'billing-secret',
                jwtResponse: true,
                fetch: (input, init) => {
                  const url = String(input instanceof Request ? input.url : input)
                  fetched.push(url)
                  // Plain http off loopback: answered from here, so nothing leaves the machine.
                  if (url.startsWith('http://keys.example')) {
                    return Promise.resolve(
                      new Response(JSON.stringify({ keys: [] }), {
                        headers: { 'content-type': 'application/json' },
                      }),
                    )
                  }
                  return fetch(input, init)
                },
              },
            },
          ],
        },
        events,
      ),
    )
    return { gate, fetched }
  }

  it('refuses a discovered jwks_uri over plain http off loopback: 503 insecure_endpoint, no token sent', async () => {
    const events: GateEvent[] = []
    const { gate, fetched } = discovering('http://keys.example/jwks', events)
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'insecure_endpoint' })
    expect(endpoint.calls).toEqual([])
    expect(fetched.some((url) => url.startsWith('http://keys.example'))).toBe(false)
  })

  it('accepts it where the gate accepts such key URLs (jwks.allowInsecureHttp)', async () => {
    const events: GateEvent[] = []
    endpoint.answer = () => ({ body: '{"active":false}' })
    const { gate } = discovering('http://keys.example/jwks', events, { allowInsecureHttp: true })
    // The discovery passes; the plain JSON answer is then refused as jwtResponse requires.
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'invalid_response' })
    expect(endpoint.calls).toEqual(['/introspect'])
  })

  it('accepts a discovered jwks_uri over http on loopback', async () => {
    const answer = await signedAnswer('ES256', ec.privateKey, 'ec')
    endpoint.answer = () => answer
    const { gate } = discovering(`${endpoint.url}/jwks`, [])
    await expect(check(gate)).resolves.toMatchObject({ auth: { clientId: 'shop' } })
  })
})

describe.each(APPS)('%s: a signed answer', (_name, createApp) => {
  it('is admitted signed ES256, and refused 503 signed with an algorithm not allowed', async () => {
    const es256 = await signedAnswer('ES256', ec.privateKey, 'ec')
    const rs256 = await signedAnswer('RS256', rsa.privateKey, 'rsa')
    const server = createApp(optionsOf({ algorithms: ['ES256', 'EdDSA'] }))
    try {
      const path = '/api/v1/billing/subscriptions'
      const bearer = () => `Bearer ${randomBytes(24).toString('base64url')}`
      endpoint.answer = () => es256
      expect((await request(server).get(path).set('Authorization', bearer())).status).toBe(200)
      endpoint.answer = () => rs256
      const refused = await request(server).get(path).set('Authorization', bearer())
      expect(refused.status).toBe(503)
      expect(refused.headers['retry-after']).toBe('5')
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
