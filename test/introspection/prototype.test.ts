/**
 * A member named `__proto__` in what a provider answers (a plain JSON answer, the
 * `token_introspection` of a signed one) or in a JWT's payload is data, never the prototype of
 * `auth.claims`: an inherited `aud`, `exp`, `scope` or `act` would pass the gate's checks while
 * no log shows it (docs/security.md: such claims do nothing). Each answer with
 * `__proto__: { aud, exp, scope, act }` is refused or admitted exactly as the same answer without
 * it, and nothing is inherited.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto'

import { SignJWT } from 'jose'
import request from 'supertest'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createGate, type GateOptions } from '../../src/index.js'
import { APPS } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

const key = generateKeyPairSync('ec', { namedCurve: 'P-256' })
let endpoint: IntrospectionEndpointStub

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint([
    { ...key.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'ES256' },
  ])
})
afterAll(() => endpoint.close())
beforeEach(() => {
  endpoint.calls.length = 0
})

const nowSeconds = () => Math.floor(Date.now() / 1000)
/** What an attacker would like the claims to inherit. */
const inherited = () => ({
  aud: 'billing',
  exp: nowSeconds() + 600,
  scope: 'billing:read billing:admin',
  act: { sub: 'intruder' },
  client_id: 'shop',
})
/** JSON text with an own `__proto__` member, as a provider's body would carry it. */
const withProto = (facts: Record<string, unknown>) =>
  `${JSON.stringify(facts).slice(0, -1)},"__proto__":${JSON.stringify(inherited())}}`

const optionsOf = (jwtResponse = false): GateOptions => ({
  issuers: [
    {
      issuer: endpoint.url,
      jwksUri: `${endpoint.url}/jwks`,
      introspection: {
        endpoint: `${endpoint.url}/introspect`,
        clientId: 'billing-api',
        clientSecret: 'billing-secret',
        jwtResponse,
      },
    },
  ],
  audience: 'billing',
})
const opaque = () => randomBytes(24).toString('base64url')
const verdictOf = (gate: ReturnType<typeof createGate>, token = opaque()) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
    ({ auth }) => ({
      admitted: true,
      scopes: auth?.scopes,
      actor: auth?.actor,
      prototype: Object.getPrototypeOf(auth?.claims) === Object.prototype,
      inheritedKeys: ['aud', 'exp', 'scope', 'act', 'client_id'].filter(
        (name) => auth !== undefined && name in auth.claims && !Object.hasOwn(auth.claims, name),
      ),
    }),
    (error: { status: number; reason: string }) => ({
      admitted: false,
      status: error.status,
      reason: error.reason,
    }),
  )

/** Answers that must be judged on their own members alone. */
const CASES: [string, Record<string, unknown>][] = [
  ['no aud', { active: true, iss: '', client_id: 'shop', exp: 0 }],
  ['no exp', { active: true, iss: '', aud: 'billing', client_id: 'shop' }],
  ['no scope, no actor', { active: true, iss: '', aud: 'billing', client_id: 'shop', exp: 0 }],
]
const complete = (facts: Record<string, unknown>) => ({
  ...facts,
  iss: endpoint.url,
  ...(facts['exp'] === 0 ? { exp: nowSeconds() + 120 } : {}),
})

describe('__proto__ in a plain JSON answer', () => {
  it.each(CASES)('judges an answer with %s exactly as without __proto__', async (_name, facts) => {
    const gate = createGate(optionsOf())
    endpoint.answer = () => ({ body: JSON.stringify(complete(facts)) })
    const without = await verdictOf(gate)
    endpoint.answer = () => ({ body: withProto(complete(facts)) })
    const withIt = await verdictOf(gate)
    expect(withIt).toEqual(without)
  })

  it('lends the claims nothing: plain prototype, no inherited aud, exp, scope, act, no actor', async () => {
    const gate = createGate(optionsOf())
    endpoint.answer = () => ({
      body: withProto(complete({ active: true, aud: 'billing', client_id: 'shop', exp: 0 })),
    })
    expect(await verdictOf(gate)).toEqual({
      admitted: true,
      scopes: [],
      actor: undefined,
      prototype: true,
      inheritedKeys: [],
    })
  })
})

describe('__proto__ in a signed answer (RFC 9701 token_introspection)', () => {
  it.each(CASES)('judges an answer with %s exactly as without __proto__', async (_name, facts) => {
    const gate = createGate(optionsOf(true))
    const sign = async (introspection: string) => {
      const payload = `{"iss":${JSON.stringify(endpoint.url)},"aud":"billing-api","iat":${nowSeconds()},"token_introspection":${introspection}}`
      const header = Buffer.from(
        JSON.stringify({ alg: 'ES256', kid: 'k1', typ: 'token-introspection+jwt' }),
      ).toString('base64url')
      const body = Buffer.from(payload).toString('base64url')
      const { createSign } = await import('node:crypto')
      const signature = createSign('SHA256')
        .update(`${header}.${body}`)
        .sign({ key: key.privateKey, dsaEncoding: 'ieee-p1363' })
        .toString('base64url')
      return {
        contentType: 'application/token-introspection+jwt',
        body: `${header}.${body}.${signature}`,
      }
    }
    const plain = await sign(JSON.stringify(complete(facts)))
    const proto = await sign(withProto(complete(facts)))
    endpoint.answer = () => plain
    const without = await verdictOf(gate)
    // Judged on its members (admitted, or refused 401), not failed as an answer.
    expect(without).not.toMatchObject({ status: 503 })
    endpoint.answer = () => proto
    expect(await verdictOf(gate)).toEqual(without)
  })
})

describe('__proto__ in a JWT payload (the JWT path)', () => {
  it('refuses a JWT whose only aud is under __proto__ as it refuses one with no aud', async () => {
    const gate = createGate({
      issuers: [{ issuer: endpoint.url, jwksUri: `${endpoint.url}/jwks` }],
      audience: 'billing',
    })
    const sign = async (payload: string) => {
      const jwt = await new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .sign(key.privateKey)
      const [header] = jwt.split('.')
      const body = Buffer.from(payload).toString('base64url')
      const { createSign } = await import('node:crypto')
      const signature = createSign('SHA256')
        .update(`${header}.${body}`)
        .sign({ key: key.privateKey, dsaEncoding: 'ieee-p1363' })
        .toString('base64url')
      return `${header}.${body}.${signature}`
    }
    const facts = { iss: endpoint.url, sub: 'u1', client_id: 'shop', exp: nowSeconds() + 120 }
    const without = await verdictOf(gate, await sign(JSON.stringify(facts)))
    const withIt = await verdictOf(gate, await sign(withProto(facts)))
    expect(without).toEqual({ admitted: false, status: 401, reason: 'audience' })
    expect(withIt).toEqual(without)
  })
})

describe.each(APPS)('%s: __proto__ in an introspection answer', (_name, createApp) => {
  it('grants no scope: the scoped route is refused 403 as without it', async () => {
    endpoint.answer = () => ({
      body: withProto(complete({ active: true, aud: 'billing', client_id: 'shop', exp: 0 })),
    })
    const server = createApp(optionsOf())
    try {
      const res = await request(server).get('/scoped').set('Authorization', `Bearer ${opaque()}`)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"')
      const admitted = await request(server)
        .get('/api/v1/billing/subscriptions')
        .set('Authorization', `Bearer ${opaque()}`)
      expect(admitted.status).toBe(200)
      endpoint.answer = () => ({
        body: withProto(complete({ active: true, client_id: 'shop', exp: 0 })),
      })
      const refused = await request(server)
        .get('/api/v1/billing/subscriptions')
        .set('Authorization', `Bearer ${opaque()}`)
      expect(refused.status).toBe(401)
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
