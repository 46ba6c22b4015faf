/**
 * Providers whose introspection answers carry no `aud` (RFC 7662 §2.2 makes it optional). The gate
 * never takes a missing `aud` for its own: by default such an answer is refused (reason
 * `audience`); `audiencelessClients` names the clients, registered for this API alone, whose
 * tokens stand for this API when the answer names no audience. An answer that has an `aud` is
 * judged by it as always.
 */
import { randomBytes } from 'node:crypto'

import request from 'supertest'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createGate, type GateOptions, type IntrospectionOptions } from '../../src/index.js'
import { APPS } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

let endpoint: IntrospectionEndpointStub
let facts: Record<string, unknown> = {}

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
})
afterAll(() => endpoint.close())
beforeEach(() => {
  endpoint.answer = () => ({
    body: JSON.stringify({
      active: true,
      iss: endpoint.url,
      scope: 'billing:read',
      exp: Math.floor(Date.now() / 1000) + 120,
      ...facts,
    }),
  })
})

const optionsOf = (introspection: Partial<IntrospectionOptions> = {}): GateOptions => ({
  issuers: [
    {
      issuer: endpoint.url,
      jwksUri: `${endpoint.url}/jwks`,
      introspection: {
        endpoint: `${endpoint.url}/introspect`,
        clientId: 'billing-api',
        clientSecret: 'billing-secret',
        ...introspection,
      },
    },
  ],
  audience: 'billing',
})
const check = (gate: ReturnType<typeof createGate>) =>
  gate.check({ headers: { authorization: `Bearer ${randomBytes(24).toString('base64url')}` } })

describe('an answer without aud', () => {
  it('is refused (401 audience) when no audiencelessClients are configured', async () => {
    facts = { client_id: 'billing-web' }
    await expect(check(createGate(optionsOf()))).rejects.toMatchObject({
      status: 401,
      reason: 'audience',
    })
  })

  it('is admitted when its client_id is one of audiencelessClients', async () => {
    facts = { client_id: 'billing-web' }
    const gate = createGate(optionsOf({ audiencelessClients: ['billing-web', 'billing-cli'] }))
    await expect(check(gate)).resolves.toMatchObject({
      auth: { clientId: 'billing-web', scopes: ['billing:read'] },
    })
  })

  it('is refused (401 audience) when its client is another one, naming the clients expected', async () => {
    facts = { client_id: 'reports-web' }
    const gate = createGate(optionsOf({ audiencelessClients: ['billing-web'] }))
    await expect(check(gate)).rejects.toMatchObject({
      status: 401,
      reason: 'audience',
      detail: { clientId: 'reports-web', expected: ['billing-web'] },
    })
  })

  it('is refused (401 audience) when it names no client either', async () => {
    facts = {}
    const gate = createGate(optionsOf({ audiencelessClients: ['billing-web'] }))
    await expect(check(gate)).rejects.toMatchObject({ status: 401, reason: 'audience' })
  })
})

describe('an answer with an aud', () => {
  it('is judged by its aud, whatever its client: another API’s token of a listed client is refused', async () => {
    facts = { client_id: 'billing-web', aud: 'reports' }
    const gate = createGate(optionsOf({ audiencelessClients: ['billing-web'] }))
    await expect(check(gate)).rejects.toMatchObject({ status: 401, reason: 'audience' })
  })

  it('is admitted for this API from a client not listed', async () => {
    facts = { client_id: 'partner', aud: 'billing' }
    const gate = createGate(optionsOf({ audiencelessClients: ['billing-web'] }))
    await expect(check(gate)).resolves.toMatchObject({ auth: { clientId: 'partner' } })
  })
})

describe('the option', () => {
  it.each([[[]], [['']], ['billing-web'], [[7]]])(
    'refuses audiencelessClients %j at construction, saying what it must be',
    (value) => {
      expect(() =>
        createGate(optionsOf({ audiencelessClients: value as unknown as string[] })),
      ).toThrow(
        'createGate(options): "issuers[0].introspection.audiencelessClients" must be a non-empty list of client ids (the clients whose tokens are meant for this API alone)',
      )
    },
  )
})

describe.each(APPS)('%s: a provider that sends no aud', (_name, createApp) => {
  it("admits a listed client's token and refuses another client's with 401", async () => {
    const server = createApp(optionsOf({ audiencelessClients: ['billing-web'] }))
    try {
      const path = '/api/v1/billing/subscriptions'
      const bearer = () => `Bearer ${randomBytes(24).toString('base64url')}`
      facts = { client_id: 'billing-web' }
      const admitted = await request(server).get(path).set('Authorization', bearer())
      expect(admitted.status).toBe(200)
      expect(admitted.body).toMatchObject({ clientId: 'billing-web' })
      facts = { client_id: 'reports-web' }
      const refused = await request(server).get(path).set('Authorization', bearer())
      expect(refused.status).toBe(401)
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"')
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
