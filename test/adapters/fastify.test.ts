/**
 * Fastify-plugin details the cross-framework harness does not reach, on Fastify 5 and 4:
 * encapsulation (the gate guards the context it is registered in, not its siblings), refusals
 * sent through `reply` (so `onSend` hooks see them), two gates in one app.
 */
import fastify5 from 'fastify'
import fastify4 from 'fastify4'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tollgate } from '../../adapters/fastify/index.js'
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

const FASTIFY = [
  ['fastify 5', fastify5],
  ['fastify 4', fastify4 as unknown as typeof fastify5],
] as const

describe.each(FASTIFY)('tollgate/fastify on %s', (_name, Fastify) => {
  it('guards the context it is registered in and its children, not sibling contexts', async () => {
    const auth = tollgate(options)
    const app = Fastify()
    app.register(async (api) => {
      await api.register(auth)
      api.get('/api/me', async (request) => ({ subject: request.auth?.subject ?? null }))
      api.register(async (child) => {
        child.get('/api/child', async () => 'child')
      })
    })
    app.register(async (open) => {
      open.get('/health', async () => 'ok')
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    expect((await fetch(`${base}/health`)).status).toBe(200)
    expect((await fetch(`${base}/api/me`)).status).toBe(401)
    expect((await fetch(`${base}/api/child`)).status).toBe(401)
    const token = await issuer.mint({ sub: 'dave' })
    const me = await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}` } })
    expect(await me.json()).toEqual({ subject: 'dave' })
    await app.close()
    await auth.gate.close()
  })

  it("sends refusals through Fastify's reply, so onSend hooks see them", async () => {
    const auth = tollgate(options)
    const app = Fastify()
    const seen: Array<{ status: number; payload: unknown }> = []
    app.addHook('onSend', async (_request, reply, payload) => {
      seen.push({ status: reply.statusCode, payload })
      return payload
    })
    app.register(auth)
    app.get('/scoped', { preHandler: auth.requireScopes('billing:read') }, async () => 'ok')
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    await fetch(`${base}/scoped`)
    const token = await issuer.mint({ scope: 'openid' })
    await fetch(`${base}/scoped`, { headers: { authorization: `Bearer ${token}` } })
    expect(seen).toEqual([
      {
        status: 401,
        payload: JSON.stringify({
          error: 'unauthorized',
          error_description: 'bearer token required',
        }),
      },
      {
        status: 403,
        payload: JSON.stringify({
          error: 'insufficient_scope',
          error_description: 'insufficient scope',
        }),
      },
    ])
    await app.close()
    await auth.gate.close()
  })

  it('accepts two gates in sibling contexts of one app', async () => {
    const billing = tollgate(options)
    const office = tollgate({ ...options, realm: 'office' })
    const app = Fastify()
    app.register(async (scope) => {
      await scope.register(billing)
      scope.get('/billing', async () => 'billing')
    })
    app.register(async (scope) => {
      await scope.register(office)
      scope.get('/office', async () => 'office')
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    expect((await fetch(`${base}/billing`)).headers.get('www-authenticate')).toBe(
      'Bearer realm="api"',
    )
    expect((await fetch(`${base}/office`)).headers.get('www-authenticate')).toBe(
      'Bearer realm="office"',
    )
    await app.close()
    await billing.gate.close()
    await office.gate.close()
  })
})
