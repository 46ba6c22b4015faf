import type { Server } from 'node:http'

import { createServer } from 'node:http'
import express from 'express'
import Koa from 'koa'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tollgate } from '../../adapters/express/index.js'
import { tollgate as koaTollgate } from '../../adapters/koa/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'

const ROUTE = '/api/v1/billing/subscriptions'
const RESOURCE = 'https://api.example.test/api/v1/billing'
const METADATA_PATH = '/.well-known/oauth-protected-resource/api/v1/billing'
const METADATA_URL = `https://api.example.test${METADATA_PATH}`
/** Every adapter, tollgate/nestjs on both of Nest's platforms included. */
const ALL_APPS = [...APPS, ...NEST_APPS]

let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    resourceMetadata: {
      resource: RESOURCE,
      scopesSupported: ['billing:read'],
      extra: { resource_name: 'Billing API' },
    },
  }
})
afterAll(async () => {
  await issuer.close()
})

describe.each(ALL_APPS)('%s adapter with resource metadata', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp(options)
  })
  afterAll(() => {
    app.close()
  })

  it('serves the RFC 9728 document at the path-suffixed well-known URL, without credentials', async () => {
    const res = await request(app).get(METADATA_PATH)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['cache-control']).toBe('public, max-age=3600')
    expect(res.body).toEqual({
      resource: RESOURCE,
      authorization_servers: [issuer.issuer('acme')],
      scopes_supported: ['billing:read'],
      bearer_methods_supported: ['header'],
      resource_name: 'Billing API',
    })
  })

  it('answers HEAD of the document without a body', async () => {
    const res = await request(app).head(METADATA_PATH)
    expect(res.status).toBe(200)
    expect(res.text).toBeUndefined()
  })

  it('serves the document whatever its query string', async () => {
    expect((await request(app).get(`${METADATA_PATH}?x=1`)).status).toBe(200)
  })

  it('does not serve the document for other methods or neighbouring paths', async () => {
    expect((await request(app).post(METADATA_PATH)).status).toBe(401)
    expect((await request(app).get(`${METADATA_PATH}/more`)).status).toBe(401)
    expect((await request(app).get(`${METADATA_PATH}x`)).status).toBe(401)
  })

  it('points every 401 challenge to the document (RFC 9728 §5.1), naming scopes_supported', async () => {
    // A route whose scopes the gate does not know names the metadata's scopes_supported (MCP
    // 2025-11-25: the scope a client should ask for).
    const missing = await request(app).get(ROUTE)
    expect(missing.headers['www-authenticate']).toBe(
      `Bearer realm="api", scope="billing:read", resource_metadata="${METADATA_URL}"`,
    )
    const expired = await issuer.mint({ exp: 1 })
    const refused = await request(app).get(ROUTE).set('Authorization', `Bearer ${expired}`)
    expect(refused.headers['www-authenticate']).toBe(
      `Bearer realm="api", error="invalid_token", error_description="token expired", scope="billing:read", resource_metadata="${METADATA_URL}"`,
    )
  })

  it('adds the DPoP members when DPoP is on, and lists no bearer method when it is required', async () => {
    const dpopApp = createApp({
      ...options,
      dpop: { mode: 'required', publicBaseUrl: 'https://api.example.test', algorithms: ['ES256'] },
    })
    const res = await request(dpopApp).get(METADATA_PATH)
    expect(res.body).toMatchObject({
      // RFC 9728 §2: the empty array says no bearer method is supported; the gate refuses them.
      bearer_methods_supported: [],
      dpop_signing_alg_values_supported: ['ES256'],
      dpop_bound_access_tokens_required: true,
    })
    expect((await request(dpopApp).get(ROUTE)).headers['www-authenticate']).toBe(
      `DPoP realm="api", scope="billing:read", algs="ES256", resource_metadata="${METADATA_URL}"`,
    )
    dpopApp.close()
  })
})

describe('all adapters with resource metadata', () => {
  it('give identical answers for the document and for challenges', async () => {
    const servers = ALL_APPS.map(([, createApp]) => createApp(options))
    const token = await issuer.mint({ scope: 'openid' })
    const cases: Array<[string, Record<string, string>]> = [
      [METADATA_PATH, {}],
      [ROUTE, {}],
      [ROUTE, { Authorization: 'Bearer a.b.c' }],
      ['/scoped', { Authorization: `Bearer ${token}` }],
    ]
    for (const [path, headers] of cases) {
      const answers = []
      for (const server of servers) {
        const res = await request(server).get(path).set(headers)
        answers.push({
          status: res.status,
          challenge: res.headers['www-authenticate'],
          contentType: res.headers['content-type'],
          cacheControl: res.headers['cache-control'],
          contentLength: res.headers['content-length'],
          body: res.text,
        })
      }
      for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
    }
    for (const server of servers) server.close()
  })
})

describe('an MCP server on Express protected by tollgate', () => {
  const MCP_RESOURCE = 'https://mcp.example.test/mcp'
  let mcpIssuer: TestIssuer
  let app: ReturnType<typeof express>

  beforeAll(async () => {
    mcpIssuer = await createTestIssuer({
      realms: ['mcp'],
      audience: 'unused',
      clients: [
        {
          clientId: 'mcp-client',
          clientSecret: 'mcp-secret',
          audience: MCP_RESOURCE,
          scope: 'mcp:tools',
        },
      ],
    })
    // What the README shows: the audience is the MCP resource itself (RFC 8707), the metadata is
    // public, and the MCP endpoint needs a token for it with the tools scope.
    const auth = tollgate({
      issuers: keycloak({ authUrl: mcpIssuer.url, realms: ['mcp'] }),
      audience: MCP_RESOURCE,
      resourceMetadata: { resource: MCP_RESOURCE, scopesSupported: ['mcp:tools'] },
    })
    app = express()
    app.use(auth.resourceMetadata)
    app.post('/mcp', auth, auth.requireScopes('mcp:tools'), express.json(), (req, res) => {
      res.json({ jsonrpc: '2.0', id: req.body.id, result: { tools: [] } })
    })
  })
  afterAll(async () => {
    await mcpIssuer.close()
  })

  it('answers the request sequence of an MCP client: 401, metadata, token, 200', async () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
    const first = await request(app).post('/mcp').send(call)
    expect(first.status).toBe(401)
    const challenge = first.headers['www-authenticate'] as string
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1] as string
    expect(metadataUrl).toBe('https://mcp.example.test/.well-known/oauth-protected-resource/mcp')

    const metadata = await request(app).get(new URL(metadataUrl).pathname)
    expect(metadata.status).toBe(200)
    expect(metadata.body.resource).toBe(MCP_RESOURCE)
    const authorizationServer = metadata.body.authorization_servers[0] as string
    expect(authorizationServer).toBe(mcpIssuer.issuer('mcp'))

    const discovery = (await (
      await fetch(`${authorizationServer}/.well-known/openid-configuration`)
    ).json()) as { token_endpoint: string }
    const tokenResponse = await fetch(discovery.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'mcp-client',
        client_secret: 'mcp-secret',
        scope: 'mcp:tools',
        resource: MCP_RESOURCE,
      }),
    })
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string }

    const second = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .send(call)
    expect(second.status).toBe(200)
    expect(second.body).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } })
  })

  it('refuses a token whose audience is another resource', async () => {
    const token = await mcpIssuer.mint({
      aud: 'https://other.example.test/mcp',
      scope: 'mcp:tools',
    })
    const res = await request(app).post('/mcp').set('Authorization', `Bearer ${token}`).send({})
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain('resource_metadata=')
  })
})

describe('the resourceMetadata middleware alone', () => {
  it('serves the document on Koa and passes every other request on', async () => {
    const auth = koaTollgate(options)
    const app = new Koa()
    app.use(auth.resourceMetadata)
    app.use((ctx) => {
      ctx.body = 'next'
    })
    const server = createServer(app.callback())
    const served = await request(server).get(METADATA_PATH)
    expect(served.status).toBe(200)
    expect(served.body.resource).toBe(RESOURCE)
    expect((await request(server).get(ROUTE)).text).toBe('next')
    server.close()
  })

  it('passes every request on when no metadata is configured', async () => {
    const { resourceMetadata: _unused, ...withoutMetadata } = options
    const auth = tollgate(withoutMetadata)
    const app = express()
    app.use(auth.resourceMetadata)
    app.use((_req, res) => {
      res.send('next')
    })
    expect((await request(app).get(METADATA_PATH)).text).toBe('next')
    expect(auth.gate.resourceMetadataUrl).toBeUndefined()
  })
})
