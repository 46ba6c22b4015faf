/**
 * Where an opaque token may go when several issuers introspect (RFC 7662 §4: the token is a
 * bearer secret, and the introspection call carries it and the gate's credentials to the
 * provider). An opaque token names no issuer: sent to a provider that cannot be its issuer, it
 * reaches that provider's operator, cannot be admitted as its own issuer's, and is admitted as the
 * wrong issuer's if that provider calls it active. The gate sends one only where an explicit rule
 * says, refuses at construction a setup where that is ambiguous, and refuses `unrouted`, sending
 * it nowhere, a token no rule claims.
 */
import { randomBytes } from 'node:crypto'

import request from 'supertest'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import { createGate, type GateOptions, type IntrospectionOptions } from '../../src/index.js'
import { APPS } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

let endpoint: IntrospectionEndpointStub
const A = () => `${endpoint.url}/a`
const B = () => `${endpoint.url}/b`

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
})
afterAll(() => endpoint.close())
beforeEach(() => {
  endpoint.calls.length = 0
  // Every provider calls every token active, as its own: only routing keeps them apart.
  endpoint.answer = (_form, path) => ({
    body: JSON.stringify({
      active: true,
      iss: `${endpoint.url}${path.replace('/introspect', '')}`,
      aud: 'billing',
      client_id: 'shop',
      scope: 'billing:read',
      exp: Math.floor(Date.now() / 1000) + 120,
    }),
  })
})

type Entry = GateOptions['issuers'][number]
const entry = (issuer: string, opaqueTokens?: IntrospectionOptions['opaqueTokens']): Entry => ({
  issuer,
  jwksUri: `${endpoint.url}/jwks`,
  introspection: {
    endpoint: `${issuer}/introspect`,
    clientId: 'billing-api',
    clientSecret: 'billing-secret',
    ...(opaqueTokens === undefined ? {} : { opaqueTokens }),
  },
})
const optionsOf = (issuers: Entry[], events: GateEvent[] = []): GateOptions => ({
  issuers,
  audience: 'billing',
  onEvent: (event) => events.push(event),
})
const check = (gate: ReturnType<typeof createGate>, token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } })
const opaque = (prefix = '') => `${prefix}${randomBytes(24).toString('base64url')}`

describe('construction: which issuer receives opaque tokens must be unambiguous', () => {
  it('refuses two introspecting issuers when neither says which opaque tokens it receives', () => {
    expect(() => createGate(optionsOf([entry(A()), entry(B())]))).toThrow(
      /^createGate\(options\): "issuers\[0\]\.introspection\.opaqueTokens" is required when several issuers introspect: set it on each of them: 'all' on the one issuer whose opaque tokens carry no mark, \{ prefix \} or a function where a provider marks its tokens, 'none' where all of its tokens are JWTs/,
    )
  })

  it('refuses two introspecting issuers when only one of them says', () => {
    expect(() => createGate(optionsOf([entry(A(), 'all'), entry(B())]))).toThrow(
      '"issuers[1].introspection.opaqueTokens" is required when several issuers introspect',
    )
  })

  it("refuses 'all' on two issuers", () => {
    expect(() => createGate(optionsOf([entry(A(), 'all'), entry(B(), 'all')]))).toThrow(
      `createGate(options): "issuers[1].introspection.opaqueTokens" is 'all', as is "issuers[0].introspection.opaqueTokens": only one issuer may receive the opaque tokens no rule claims; give the others a { prefix }, a function or 'none'`,
    )
  })

  it('refuses prefixes of two issuers where one starts the other', () => {
    expect(() =>
      createGate(optionsOf([entry(A(), { prefix: 'at_' }), entry(B(), { prefix: 'at_b_' })])),
    ).toThrow(
      'createGate(options): "issuers[0].introspection.opaqueTokens" and "issuers[1].introspection.opaqueTokens" have overlapping prefixes',
    )
  })

  it.each([
    ['a string other than all or none', 'some', "(got 'some')"],
    ['an empty prefix', { prefix: '' }, '"issuers[0].introspection.opaqueTokens.prefix"'],
    ['an empty prefix list', { prefix: [] }, 'must be a non-empty string or a non-empty list'],
    ['a number', 7, "must be 'all', 'none', { prefix: string | string[] } or a function"],
  ])('refuses opaqueTokens as %s, saying what it must be', (_name, value, message) => {
    expect(() =>
      createGate(optionsOf([entry(A(), value as unknown as IntrospectionOptions['opaqueTokens'])])),
    ).toThrow(message)
  })

  it('lets the one introspecting issuer receive opaque tokens without saying so', async () => {
    const gate = createGate(optionsOf([entry(A())]))
    await expect(check(gate, opaque())).resolves.toMatchObject({ auth: { issuer: A() } })
    expect(endpoint.calls).toEqual(['/a/introspect'])
  })
})

describe('a token goes only to the issuer a rule names', () => {
  it("never sends issuer B's prefixed token to issuer A: only B is asked, and B's issuer admits it", async () => {
    const gate = createGate(optionsOf([entry(A(), { prefix: 'a_' }), entry(B(), { prefix: 'b_' })]))
    await expect(check(gate, opaque('b_'))).resolves.toMatchObject({ auth: { issuer: B() } })
    await expect(check(gate, opaque('a_'))).resolves.toMatchObject({ auth: { issuer: A() } })
    expect(endpoint.calls).toEqual(['/b/introspect', '/a/introspect'])
  })

  it('refuses 401 unrouted a token that no rule claims, and sends it nowhere', async () => {
    const events: GateEvent[] = []
    const gate = createGate(
      optionsOf([entry(A(), { prefix: 'a_' }), entry(B(), { prefix: ['b_', 'bb-'] })], events),
    )
    await expect(check(gate, opaque('c_'))).rejects.toMatchObject({
      status: 401,
      code: 'ERR_TOKEN_INVALID',
      reason: 'unrouted',
      headers: { 'WWW-Authenticate': expect.stringContaining('error="invalid_token"') },
    })
    expect(endpoint.calls).toEqual([])
    expect(events.find((event) => event.type === 'rejected')).toMatchObject({ reason: 'unrouted' })
  })

  it("sends to the 'all' issuer only what no other rule claims", async () => {
    const gate = createGate(optionsOf([entry(A(), 'all'), entry(B(), { prefix: 'b_' })]))
    await check(gate, opaque('b_'))
    await check(gate, opaque('z_'))
    expect(endpoint.calls).toEqual(['/b/introspect', '/a/introspect'])
  })

  it("sends nothing to an issuer whose opaqueTokens is 'none'", async () => {
    const gate = createGate(optionsOf([entry(A(), 'none'), entry(B(), 'none')]))
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 401, reason: 'unrouted' })
    expect(endpoint.calls).toEqual([])
  })

  it('sends to the issuer whose function claims the token, and nowhere when two claim it', async () => {
    const gate = createGate(
      optionsOf([
        entry(A(), (token) => token.endsWith('.a') || token.startsWith('both')),
        entry(B(), (token) => token.endsWith('.b') || token.startsWith('both')),
      ]),
    )
    await expect(check(gate, `${opaque()}.b`)).resolves.toMatchObject({ auth: { issuer: B() } })
    await expect(check(gate, `both${opaque()}`)).rejects.toMatchObject({
      status: 401,
      reason: 'unrouted',
    })
    await expect(check(gate, opaque())).rejects.toMatchObject({ reason: 'unrouted' })
    expect(endpoint.calls).toEqual(['/b/introspect'])
  })

  it('sends nowhere a token that a prefix gives to one issuer and a function to another', async () => {
    const gate = createGate(
      optionsOf([entry(A(), { prefix: 'a_' }), entry(B(), (token) => token.length > 10)]),
    )
    await expect(check(gate, opaque('a_'))).rejects.toMatchObject({ reason: 'unrouted' })
    expect(endpoint.calls).toEqual([])
  })
})

describe('what routing costs', () => {
  it("spends no call on a string without the provider's mark: the budget stays whole for marked tokens", async () => {
    const issuer = entry(A(), { prefix: 'a_' }) as Entry & { introspection: IntrospectionOptions }
    const gate = createGate(
      optionsOf([{ ...issuer, introspection: { ...issuer.introspection, budget: { calls: 2 } } }]),
    )
    for (let i = 0; i < 50; i++) {
      await expect(check(gate, opaque('x_'))).rejects.toMatchObject({ reason: 'unrouted' })
    }
    await expect(check(gate, opaque('a_'))).resolves.toMatchObject({ auth: { issuer: A() } })
    expect(endpoint.calls).toEqual(['/a/introspect'])
  })

  it("gives each issuer its own budget: a flood of one provider's tokens does not spend another's", async () => {
    const withBudget = (issuer: string, prefix: string): Entry => {
      const base = entry(issuer, { prefix }) as Entry & { introspection: IntrospectionOptions }
      return {
        ...base,
        introspection: { ...base.introspection, budget: { calls: 2, perSeconds: 3600 } },
      }
    }
    const gate = createGate(optionsOf([withBudget(A(), 'a_'), withBudget(B(), 'b_')]))
    const flood = await Promise.allSettled(
      Array.from({ length: 20 }, () => check(gate, opaque('a_'))),
    )
    expect(
      flood.filter((result) => result.status === 'rejected' && result.reason.status === 503),
    ).toHaveLength(19)
    await expect(check(gate, opaque('b_'))).resolves.toMatchObject({ auth: { issuer: B() } })
  })
})

describe.each(APPS)('%s: an opaque token no rule routes', (_name, createApp) => {
  it('is answered 401 invalid_token and reaches no provider', async () => {
    const server = createApp(
      optionsOf([entry(A(), { prefix: 'a_' }), entry(B(), { prefix: 'b_' })]),
    )
    try {
      const routed = await request(server)
        .get('/api/v1/billing/subscriptions')
        .set('Authorization', `Bearer ${opaque('b_')}`)
      expect(routed.status).toBe(200)
      expect(routed.body).toMatchObject({ issuer: B() })
      const refused = await request(server)
        .get('/api/v1/billing/subscriptions')
        .set('Authorization', `Bearer ${opaque('x_')}`)
      expect(refused.status).toBe(401)
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"')
      expect(endpoint.calls).toEqual(['/b/introspect'])
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
