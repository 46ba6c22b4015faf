/**
 * What the gate reads from a provider is bounded, as JWKS bodies are: an introspection answer,
 * the discovery document and the keys of signed answers larger than `maxBodyBytes`, or a body
 * that never ends, are refused 503 (`too_large`), and reading stops at the cap: an answer cannot
 * make the gate read, copy and cache megabytes per token, nor hold a request for its timeout.
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

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
})
afterAll(() => endpoint.close())
beforeEach(() => {
  endpoint.calls.length = 0
  endpoint.documents = {}
  endpoint.streamed.bytes = 0
  endpoint.streamed.closed = 0
})

const activeAnswer = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    active: true,
    iss: endpoint.url,
    aud: 'billing',
    client_id: 'shop',
    scope: 'billing:read',
    exp: Math.floor(Date.now() / 1000) + 120,
    ...extra,
  })
const optionsOf = (
  introspection: Partial<IntrospectionOptions> = {},
  events: GateEvent[] = [],
  discovery = false,
): GateOptions => ({
  issuers: [
    {
      issuer: endpoint.url,
      ...(discovery ? { discovery: true } : { jwksUri: `${endpoint.url}/jwks` }),
      introspection: {
        ...(discovery ? {} : { endpoint: `${endpoint.url}/introspect` }),
        clientId: 'billing-api',
        clientSecret: 'billing-secret',
        ...introspection,
      },
    },
  ],
  audience: 'billing',
  onEvent: (event) => events.push(event),
})
const check = (gate: ReturnType<typeof createGate>) =>
  gate.check({ headers: { authorization: `Bearer ${randomBytes(24).toString('base64url')}` } })
const failure = (events: GateEvent[]) => events.find((e) => e.type === 'introspection_failed')

describe('introspection answers', () => {
  it('refuses an active answer over maxBodyBytes with 503 too_large, and holds no verdict of it', async () => {
    const events: GateEvent[] = []
    endpoint.answer = () => ({ body: activeAnswer({ padding: 'x'.repeat(70_000) }) })
    const gate = createGate(optionsOf({}, events))
    await expect(check(gate)).rejects.toMatchObject({
      status: 503,
      code: 'ERR_INTROSPECTION_UNAVAILABLE',
      headers: { 'Retry-After': '5' },
    })
    expect(failure(events)).toMatchObject({ reason: 'too_large' })
  })

  it('admits the same answer under a maxBodyBytes that holds it', async () => {
    endpoint.answer = () => ({ body: activeAnswer({ padding: 'x'.repeat(70_000) }) })
    const gate = createGate(optionsOf({ maxBodyBytes: 131_072 }))
    await expect(check(gate)).resolves.toMatchObject({ auth: { clientId: 'shop' } })
  })

  it('stops reading a body that never ends at the cap, long before the call timeout', async () => {
    const events: GateEvent[] = []
    endpoint.answer = () => 'endless'
    const gate = createGate(optionsOf({ timeoutMs: 60_000 }, events))
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'too_large' })
    // The gate closed the stream: the server stops writing, a few socket buffers past the cap.
    while (endpoint.streamed.closed === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(endpoint.streamed.bytes).toBeLessThan(8 * 1024 * 1024)
  })

  it.each([1023, 16_777_217])('refuses maxBodyBytes %d at construction', (value) => {
    expect(() => createGate(optionsOf({ maxBodyBytes: value }))).toThrow(
      `createGate(options): "issuers[0].introspection.maxBodyBytes" must be a whole number from 1024 to 16777216 (got number ${value})`,
    )
  })
})

describe('discovered documents', () => {
  it('refuses a discovery document over maxBodyBytes (503 too_large) and sends no token', async () => {
    const events: GateEvent[] = []
    endpoint.documents['/.well-known/openid-configuration'] = {
      body: JSON.stringify({
        issuer: endpoint.url,
        introspection_endpoint: `${endpoint.url}/introspect`,
        padding: 'x'.repeat(70_000),
      }),
    }
    const gate = createGate(optionsOf({}, events, true))
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'too_large' })
    expect(endpoint.calls).toEqual([])
  })

  it('stops reading a discovery document that never ends, and sends no token', async () => {
    const events: GateEvent[] = []
    endpoint.documents['/.well-known/openid-configuration'] = 'endless'
    const gate = createGate(optionsOf({ timeoutMs: 60_000 }, events, true))
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'too_large' })
    expect(endpoint.calls).toEqual([])
  })
})

describe('the keys of signed answers', () => {
  it('refuses a key set over maxBodyBytes (503 too_large), and admits nothing', async () => {
    const events: GateEvent[] = []
    endpoint.documents['/big-jwks'] = {
      body: JSON.stringify({ keys: [], padding: 'x'.repeat(70_000) }),
    }
    const header = Buffer.from(
      JSON.stringify({ alg: 'ES256', kid: 'k', typ: 'token-introspection+jwt' }),
    )
    const payload = Buffer.from(
      JSON.stringify({
        iss: endpoint.url,
        aud: 'billing-api',
        iat: Math.floor(Date.now() / 1000),
        token_introspection: JSON.parse(activeAnswer()),
      }),
    )
    endpoint.answer = () => ({
      contentType: 'application/token-introspection+jwt',
      body: `${header.toString('base64url')}.${payload.toString('base64url')}.${'A'.repeat(86)}`,
    })
    const options = optionsOf({ jwtResponse: true }, events)
    const gate = createGate({
      ...options,
      issuers: options.issuers.map((issuer) => ({
        ...issuer,
        jwksUri: `${endpoint.url}/big-jwks`,
      })),
    })
    await expect(check(gate)).rejects.toMatchObject({ status: 503 })
    expect(failure(events)).toMatchObject({ reason: 'too_large' })
  })
})

describe.each(APPS)('%s: an answer larger than maxBodyBytes', (_name, createApp) => {
  it('is answered 503 with Retry-After, never 200 or 401', async () => {
    endpoint.answer = () => ({ body: activeAnswer({ padding: 'x'.repeat(70_000) }) })
    const server = createApp(optionsOf())
    try {
      const res = await request(server)
        .get('/api/v1/billing/subscriptions')
        .set('Authorization', `Bearer ${randomBytes(24).toString('base64url')}`)
      expect(res.status).toBe(503)
      expect(res.headers['retry-after']).toBe('5')
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
