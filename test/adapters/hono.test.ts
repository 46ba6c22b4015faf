/**
 * Hono-adapter details the cross-framework harness does not reach: a form body still readable by
 * the route, mounting on a sub-path, the admission typed on `c.get('auth')`. The apps answer
 * through `app.request()`, Hono's own way of serving a `Request`.
 */
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

import { tollgate } from '../../adapters/hono/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
})
afterAll(async () => {
  await issuer.close()
})

describe('tollgate/hono', () => {
  it('leaves a form body readable by the route after the gate', async () => {
    const auth = tollgate(options)
    const app = new Hono()
    app.use(auth)
    app.post('/orders', async (c) => c.json({ form: await c.req.parseBody() }))
    const res = await app.request('/orders', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await issuer.mint()}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'item=42&quantity=2',
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ form: { item: '42', quantity: '2' } })
    await auth.gate.close()
  })

  it('guards only the paths it is mounted on', async () => {
    const auth = tollgate(options)
    const app = new Hono()
    app.use('/api/*', auth)
    app.get('/api/me', (c) => c.json({ subject: c.get('auth')?.subject ?? null }))
    app.get('/health', (c) => c.text('ok'))
    expect((await app.request('/health')).status).toBe(200)
    expect((await app.request('/api/me')).status).toBe(401)
    const token = await issuer.mint({ sub: 'carol' })
    const me = await app.request('/api/me', { headers: { authorization: `Bearer ${token}` } })
    expect(await me.json()).toEqual({ subject: 'carol' })
    await auth.gate.close()
  })

  it('runs a guard only after the gate admitted the request', async () => {
    const auth = tollgate(options)
    const app = new Hono()
    app.use(auth)
    app.get('/invoices', auth.requireScopes('billing:read', 'billing:write'), (c) => c.text('ok'))
    const token = await issuer.mint({ scope: 'billing:read' })
    const res = await app.request('/invoices', { headers: { authorization: `Bearer ${token}` } })
    expect(res.status).toBe(403)
    expect(res.headers.get('www-authenticate')).toContain('scope="billing:read billing:write"')
    await auth.gate.close()
  })

  it('serves the RFC 9728 document from auth.resourceMetadata when the gate guards one route only', async () => {
    const resource = 'https://api.example.test/mcp'
    const auth = tollgate({ ...options, resourceMetadata: { resource } })
    const app = new Hono()
    app.use(auth.resourceMetadata)
    app.post('/mcp', auth, (c) => c.text('ok'))
    app.get('/health', (c) => c.text('ok'))
    const res = await app.request('/.well-known/oauth-protected-resource/mcp')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await res.json()).toMatchObject({ resource })
    expect((await app.request('/health')).status).toBe(200)
    expect((await app.request('/mcp', { method: 'POST' })).headers.get('www-authenticate')).toBe(
      `Bearer realm="api", resource_metadata="https://api.example.test/.well-known/oauth-protected-resource/mcp"`,
    )
    await auth.gate.close()
  })

  it('admits a token without listing every request field (the hit reads what it needs)', async () => {
    const auth = tollgate(options)
    const app = new Hono()
    app.use(auth)
    app.get('/me', (c) => c.json({ sub: c.get('auth')?.subject }))
    const token = await issuer.mint({ sub: 'u-1' })
    const send = async () => {
      const request = new Request('http://localhost/me', {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      })
      // On Node, @hono/node-server builds a full Headers only when it is listed: a hit must not.
      const forEach = vi.spyOn(request.headers, 'forEach')
      const res = await app.request(request)
      return { res, listed: forEach.mock.calls.length }
    }
    await send() // the miss, which fetches the keys
    const { res, listed } = await send()
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ sub: 'u-1' })
    expect(listed).toBe(0)
  })
})
