/**
 * Introspected tokens through every adapter (Express 4/5, Koa 2/3, Fastify 4/5, Hono, Fetch and
 * NestJS on both platforms), against oidc-provider's real introspection endpoint: an opaque
 * token is admitted with its facts and its scopes guard routes; an unknown one is 401
 * `invalid_token`; a provider that cannot answer is 503 with `Retry-After`, never 401.
 */
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateOptions } from '../../src/gate/options.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'

const EVERY_APP = [...APPS, ...NEST_APPS]
const ROUTE = '/api/v1/billing/subscriptions'

let provider: RunningProvider
let options: GateOptions
const tokens: Record<'billing' | 'office', string> = { billing: '', office: '' }

async function tokenFor(resource: string, scope: string): Promise<string> {
  const response = await fetch(provider.tokenEndpoint(), {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('job:job-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }).toString(),
  })
  return ((await response.json()) as { access_token: string }).access_token
}

beforeAll(async () => {
  provider = await startProvider({
    introspection: true,
    opaqueResources: ['urn:platform:gateway', 'urn:platform:office'],
    clients: [
      {
        client_id: 'job',
        client_secret: 'job-secret',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      },
      {
        client_id: 'gateway-api',
        client_secret: 'gateway-secret',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
    ],
  })
  options = {
    issuers: keycloak({ authUrl: provider.url, realms: ['acme'] }).map((entry) => ({
      ...entry,
      introspection: { clientId: 'gateway-api', clientSecret: 'gateway-secret', timeoutMs: 500 },
    })),
    audience: 'gateway',
    onEvent: () => {},
  }
  tokens.billing = await tokenFor('urn:platform:gateway', 'billing:read')
  tokens.office = await tokenFor('urn:platform:office', 'office:records:read')
})
afterAll(() => provider.close())

describe.each(EVERY_APP)('%s adapter with introspected tokens', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp(options)
  })
  afterAll(() => {
    app.close()
  })

  it('admits an opaque token the provider vouches for, with its client and scopes', async () => {
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${tokens.billing}`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      authenticated: true,
      issuer: provider.issuer(),
      clientId: 'job',
      scopes: ['billing:read'],
    })
    const scoped = await request(app)
      .get('/scoped')
      .set('Authorization', `Bearer ${tokens.billing}`)
    expect(scoped.status).toBe(200)
  })

  it('refuses a token for another audience and an unknown string with 401 invalid_token', async () => {
    for (const token of [tokens.office, 'never-issued-by-the-provider']) {
      const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe(
        'Bearer realm="api", error="invalid_token", error_description="invalid token"',
      )
      expect(res.body).toEqual({ error: 'invalid_token', error_description: 'invalid token' })
    }
  })

  it('answers 503 with Retry-After when the provider fails, and 503 when it hangs', async () => {
    for (const answer of [{ status: 500, body: '' }, 'hang'] as const) {
      provider.interceptIntrospection(answer)
      try {
        const res = await request(app)
          .get(ROUTE)
          .set('Authorization', `Bearer fresh-${Math.random().toString(36).slice(2)}`)
        expect(res.status).toBe(503)
        expect(res.headers['retry-after']).toBe('5')
        expect(res.headers['www-authenticate']).toBeUndefined()
        expect(res.body).toMatchObject({ error: 'temporarily_unavailable' })
      } finally {
        provider.interceptIntrospection(undefined)
      }
    }
  })
})
