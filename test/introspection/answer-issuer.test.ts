/**
 * The answer's `iss` (RFC 7662 §2.2: optional; when present it names the issuer of the token),
 * end to end through every adapter: an active answer naming another issuer is refused 401, as the
 * provider vouches only for its own tokens; the same answer naming the issuer asked, or none, is
 * admitted.
 */
import { randomBytes } from 'node:crypto'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateOptions } from '../../src/index.js'
import { APPS } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

let endpoint: IntrospectionEndpointStub
let iss: string | undefined

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
  endpoint.answer = () => ({
    body: JSON.stringify({
      active: true,
      ...(iss === undefined ? {} : { iss }),
      aud: 'billing',
      client_id: 'shop',
      exp: Math.floor(Date.now() / 1000) + 120,
    }),
  })
})
afterAll(() => endpoint.close())

const options = (): GateOptions => ({
  issuers: [
    {
      issuer: endpoint.url,
      jwksUri: `${endpoint.url}/jwks`,
      introspection: {
        endpoint: `${endpoint.url}/introspect`,
        clientId: 'billing-api',
        clientSecret: 'billing-secret',
      },
    },
  ],
  audience: 'billing',
})

describe.each(APPS)('%s: the iss of an introspection answer', (_name, createApp) => {
  it('refuses 401 an active answer naming another issuer, and admits one naming this issuer or none', async () => {
    const server = createApp(options())
    try {
      const get = async () =>
        request(server)
          .get('/api/v1/billing/subscriptions')
          .set('Authorization', `Bearer ${randomBytes(24).toString('base64url')}`)
      iss = 'https://elsewhere.example'
      const refused = await get()
      expect(refused.status).toBe(401)
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"')
      iss = endpoint.url
      expect((await get()).status).toBe(200)
      iss = undefined
      const admitted = await get()
      expect(admitted.status).toBe(200)
      expect(admitted.body).toMatchObject({ issuer: endpoint.url })
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
