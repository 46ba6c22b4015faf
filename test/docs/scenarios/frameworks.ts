/** The framework guides (docs/frameworks/, but NestJS and sign-in) and docs/product-backends.md. */
import { expect } from 'vitest'

import { answer, bearer, type Scenario, type ScenarioTable } from '../scenario.js'

const BILLING = '/api/v1/billing/subscriptions'

/** The office product's Koa backend (docs/frameworks/koa.md, docs/product-backends.md). */
const officeKoa: Scenario = {
  promises: 'an office token 200 with its subject; a gateway token and no token 401',
  async run({ start, world: { kit } }) {
    const office = await start()
    const token = await kit.mint({ aud: 'office', sub: 'bob' })
    expect(await answer(await office.fetch('/', bearer(token)))).toEqual({
      status: 200,
      body: { user: 'bob' },
    })
    const gatewayToken = await kit.mint({ aud: 'gateway', sub: 'bob' })
    expect((await office.fetch('/', bearer(gatewayToken))).status).toBe(401)
    expect((await office.fetch('/')).status).toBe(401)
  },
}

export const FRAMEWORKS: ScenarioTable = {
  'docs/frameworks/express.md': {
    'Express (`tollgate/express`)': {
      promises:
        'billing:read of tenant acme 200 with RateLimit fields; no tenant claim and no token 401; no scope 403',
      async run({ start, world: { kit } }) {
        const gateway = await start()
        const token = await kit.mint({ sub: 'alice', scope: 'billing:read', tenant: 'acme' })
        const admitted = await gateway.fetch(BILLING, bearer(token))
        expect(admitted.headers.get('ratelimit')).toMatch(/r=19/)
        expect(await answer(admitted)).toEqual({
          status: 200,
          body: { tenant: 'acme', user: 'alice' },
        })
        const noTenant = await kit.mint({ scope: 'billing:read' })
        expect((await gateway.fetch(BILLING, bearer(noTenant))).status).toBe(401)
        expect((await gateway.fetch(BILLING)).status).toBe(401)
        const unscoped = await kit.mint({ scope: 'openid', tenant: 'acme' })
        expect((await gateway.fetch(BILLING, bearer(unscoped))).status).toBe(403)
      },
    },
  },

  'docs/frameworks/koa.md': { 'Koa (`tollgate/koa`)': officeKoa },

  'docs/frameworks/fastify.md': {
    'Fastify (`tollgate/fastify`)': {
      promises: 'billing:read 200; no token 401 with the bare challenge; no scope 403',
      async run({ start, world: { kit } }) {
        const gateway = await start()
        const token = await kit.mint({ sub: 'alice', scope: 'billing:read' })
        expect(await answer(await gateway.fetch(BILLING, bearer(token)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        const anonymous = await gateway.fetch(BILLING)
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api"')
        const unscoped = await kit.mint({ scope: 'openid' })
        expect((await gateway.fetch(BILLING, bearer(unscoped))).status).toBe(403)
      },
    },
  },

  'docs/frameworks/hono.md': {
    'Hono (`tollgate/hono`)': {
      promises:
        'served as its default export: billing:read 200; no token 401 under /api/*; no scope 403; a path outside /api/* is not gated (404)',
      async run({ start, world: { kit } }) {
        const gateway = await start({ host: 'fetch-app.ts' })
        const token = await kit.mint({ sub: 'alice', scope: 'billing:read' })
        expect(await answer(await gateway.fetch(BILLING, bearer(token)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        expect((await gateway.fetch(BILLING)).status).toBe(401)
        const unscoped = await kit.mint({ scope: 'openid' })
        expect((await gateway.fetch(BILLING, bearer(unscoped))).status).toBe(403)
        expect((await gateway.fetch('/health')).status).toBe(404)
      },
    },
  },

  'docs/frameworks/fetch.md': {
    'Fetch handlers (`tollgate/fetch`): Next.js route handlers and other `Request` → `Response` code':
      {
        promises:
          'as a Next.js route handler: GET /api/invoices/42 with billing:read 200 naming the invoice; no token 401; no scope 403',
        async run({ start, world: { kit } }) {
          const app = await start({ host: 'next-route.ts' })
          const token = await kit.mint({ sub: 'alice', scope: 'billing:read' })
          expect(await answer(await app.fetch('/api/invoices/42', bearer(token)))).toEqual({
            status: 200,
            body: { invoice: '42', user: 'alice' },
          })
          expect((await app.fetch('/api/invoices/42')).status).toBe(401)
          const unscoped = await kit.mint({ scope: 'openid' })
          expect((await app.fetch('/api/invoices/42', bearer(unscoped))).status).toBe(403)
        },
      },
  },

  'docs/product-backends.md': {
    'A product backend (Koa)': officeKoa,
    'Protected Resource Metadata (RFC 9728) and MCP servers': {
      promises:
        'POST, GET and DELETE /mcp without a token 401 naming the metadata and scope="mcp:tools"; the metadata 200 without a token; the GET stream and DELETE 200/204 with a token; a token for the resource with mcp:tools 200; no scope 403; delete_records with mcp:tools 403 scope="mcp:admin", with both 200; a token for another resource 401',
      async run({ start, world: { kit } }) {
        const mcp = await start()
        const resource = 'https://mcp.example.com/mcp'
        const LIST = { jsonrpc: '2.0', id: 7, method: 'tools/list' }
        const call = (token?: string, body: unknown = LIST) =>
          mcp.fetch('/mcp', {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
            },
            body: JSON.stringify(body),
          })
        const challenge =
          'Bearer realm="api", scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
        const anonymous = await call()
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get('www-authenticate')).toBe(challenge)
        // Streamable HTTP's other methods on the endpoint: the SSE stream and the session's end.
        for (const method of ['GET', 'DELETE']) {
          const refused = await mcp.fetch('/mcp', { method })
          expect(refused.status, method).toBe(401)
          expect(refused.headers.get('www-authenticate'), method).toBe(challenge)
        }
        const metadata = await mcp.fetch('/.well-known/oauth-protected-resource/mcp')
        expect(metadata.headers.get('cache-control')).toBe('public, max-age=3600')
        expect(await answer(metadata)).toEqual({
          status: 200,
          body: {
            resource,
            authorization_servers: ['https://sso.example.com/realms/acme'],
            scopes_supported: ['mcp:tools'],
            bearer_methods_supported: ['header'],
          },
        })
        const token = await kit.mint({ aud: resource, scope: 'mcp:tools' }, { realm: 'sso' })
        expect(await answer(await call(token))).toEqual({
          status: 200,
          body: { jsonrpc: '2.0', id: 7, result: {} },
        })
        const authorization = { authorization: `Bearer ${token}` }
        const stream = await mcp.fetch('/mcp', { headers: authorization })
        expect(stream.status).toBe(200)
        expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/)
        expect((await mcp.fetch('/mcp', { method: 'DELETE', headers: authorization })).status).toBe(
          204,
        )
        const unscoped = await kit.mint({ aud: resource, scope: 'openid' }, { realm: 'sso' })
        expect((await call(unscoped)).status).toBe(403)
        const remove = {
          jsonrpc: '2.0',
          id: 8,
          method: 'tools/call',
          params: { name: 'delete_records' },
        }
        const toolsOnly = await call(token, remove)
        expect(toolsOnly.headers.get('www-authenticate')).toBe(
          'Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="mcp:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"',
        )
        expect(toolsOnly.status).toBe(403)
        const both = await kit.mint(
          { aud: resource, scope: 'mcp:tools mcp:admin' },
          { realm: 'sso' },
        )
        expect(await answer(await call(both, remove))).toEqual({
          status: 200,
          body: { jsonrpc: '2.0', id: 8, result: {} },
        })
        const other = await kit.mint({ aud: 'https://other.example.com/mcp' }, { realm: 'sso' })
        expect((await call(other)).status).toBe(401)
      },
    },
  },
}
