/**
 * Fastify-plugin details the cross-framework harness does not reach, on Fastify 5 and 4:
 * encapsulation (the gate guards the context it is registered in, not its siblings), refusals
 * sent through `reply` (so `onSend` hooks see them) and never followed by `done()`, the gate
 * deciding in `onRequest` (before body validation and the application's own hooks), two gates in
 * one app.
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

  it('refuses an anonymous request before Fastify validates its body: 401, no schema in the answer, no preValidation hook', async () => {
    const auth = tollgate(options)
    const app = Fastify()
    let preValidation = 0
    let handled = 0
    app.register(auth)
    app.addHook('preValidation', async () => {
      preValidation += 1
    })
    app.post(
      '/orders',
      {
        schema: {
          body: {
            type: 'object',
            required: ['secretInternalField'],
            properties: { secretInternalField: { type: 'string', minLength: 12 } },
          },
        },
      },
      async () => {
        handled += 1
        return 'created'
      },
    )
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    for (const body of ['{}', '{"secretInternalField":1}', 'not json']) {
      const res = await fetch(`${base}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api"')
      const text = await res.text()
      expect(JSON.parse(text)).toEqual({
        error: 'unauthorized',
        error_description: 'bearer token required',
      })
      expect(text).not.toContain('secretInternalField')
    }
    expect(preValidation).toBe(0)
    expect(handled).toBe(0)
    // Admitted, the request goes on to validation and the route as usual.
    const token = await issuer.mint()
    const invalid = await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(invalid.status).toBe(400)
    expect(preValidation).toBe(1)
    await app.close()
    await auth.gate.close()
  })

  it('runs no handler after a refusal, even while an async onSend hook holds the reply', async () => {
    const auth = tollgate(options)
    const app = Fastify()
    let handled = 0
    app.addHook('onSend', async (_request, _reply, payload) => {
      await new Promise((resolve) => setImmediate(resolve))
      return payload
    })
    app.register(auth)
    app.get('/open', async () => {
      handled += 1
      return 'handled'
    })
    app.get('/scoped', { preHandler: auth.requireScopes('billing:read') }, async () => {
      handled += 1
      return 'handled'
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    expect((await fetch(`${base}/open`)).status).toBe(401)
    const token = await issuer.mint({ scope: 'openid' })
    expect(
      (await fetch(`${base}/scoped`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(403)
    expect(handled).toBe(0)
    await app.close()
    await auth.gate.close()
  })

  it('sends a refusal from its hooks without calling done (called directly)', async () => {
    const auth = tollgate(options)
    const hooks = new Map<string, (request: unknown, reply: unknown, done: () => void) => void>()
    const instance = {
      hasRequestDecorator: () => false,
      decorateRequest: () => undefined,
      addHook: (name: string, hook: (request: unknown, reply: unknown, done: () => void) => void) =>
        hooks.set(name, hook),
    }
    ;(auth as unknown as (instance: unknown, options: unknown, done: () => void) => void)(
      instance,
      {},
      () => undefined,
    )
    const reply = () => {
      const sent: { status?: number; body?: unknown; headers?: Record<string, string> } = {}
      const stub = {
        sent,
        code(status: number) {
          sent.status = status
          return stub
        },
        headers(headers: Record<string, string>) {
          sent.headers = { ...sent.headers, ...headers }
          return stub
        },
        send(body: unknown) {
          sent.body = body
          return stub
        },
      }
      return stub
    }
    const request = (headers: Record<string, string>, extra: Record<string, unknown> = {}) => ({
      headers,
      method: 'GET',
      url: '/x',
      raw: { rawHeaders: [], socket: null },
      routeOptions: { config: {} },
      ...extra,
    })
    let done = 0
    const onRequest = hooks.get('onRequest') as (r: unknown, p: unknown, d: () => void) => void
    const anonymous = reply()
    onRequest(request({}), anonymous, () => {
      done += 1
    })
    expect(anonymous.sent.status).toBe(401)
    expect(done).toBe(0)
    // A refused guard likewise.
    const guard = auth.requireScopes('billing:read') as unknown as (
      r: unknown,
      p: unknown,
      d: () => void,
    ) => void
    const refused = reply()
    guard(request({}, { auth: undefined }), refused, () => {
      done += 1
    })
    expect(refused.sent.status).toBe(401)
    expect(done).toBe(0)
    // An admission calls done once.
    const admitted = reply()
    const token = await issuer.mint()
    await new Promise<void>((resolve) => {
      onRequest(request({ authorization: `Bearer ${token}` }), admitted, () => {
        done += 1
        resolve()
      })
    })
    expect(done).toBe(1)
    expect(admitted.sent.status).toBeUndefined()
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
