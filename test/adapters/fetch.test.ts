/**
 * Fetch-adapter details the cross-framework harness does not reach: `withAuth` and its headers,
 * extra handler arguments, framework mode, the request body left unread. Real `Request` and
 * `Response` objects, as a Fetch host hands them over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tollgate } from '../../adapters/fetch/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

const URL_OF_ROUTE = 'http://api.example.test/api/v1/billing/subscriptions'
let issuer: TestIssuer
let options: GateOptions
let limited: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
  limited = {
    ...options,
    tenant: { claim: 'tenant' },
    rateLimit: { windows: [{ points: 5, durationSeconds: 60 }] },
  }
})
afterAll(async () => {
  await issuer.close()
})

const bearer = (token: string, init: RequestInit = {}) =>
  new Request(URL_OF_ROUTE, { ...init, headers: { authorization: `Bearer ${token}` } })

describe('tollgate/fetch', () => {
  it('sets the admission rate-limit fields on the wrapped handler response', async () => {
    const auth = tollgate(limited)
    const route = auth.withAuth((_request, user) => Response.json({ subject: user?.subject }))
    const res = await route(bearer(await issuer.mint({ sub: 'alice', tenant: 'acme' })))
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ subject: 'alice' })
    expect(res.headers.get('ratelimit')).toMatch(/;r=4;/)
    await auth.gate.close()
  })

  it('sets them on a response whose headers are immutable too (Response.redirect)', async () => {
    const auth = tollgate(limited)
    const route = auth.withAuth(() => Response.redirect('http://api.example.test/elsewhere', 303))
    const res = await route(bearer(await issuer.mint({ tenant: 'acme' })))
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('http://api.example.test/elsewhere')
    expect(res.headers.get('ratelimit')).toMatch(/;r=4;/)
    await auth.gate.close()
  })

  it('keeps the admission rate-limit fields on a guard refusal, as Express and Koa do', async () => {
    const auth = tollgate(limited)
    const token = await issuer.mint({ tenant: 'acme', scope: 'openid' })
    const result = await auth.handle(bearer(token), {
      guards: [auth.requireScopes('billing:read')],
    })
    expect(result.response?.status).toBe(403)
    expect(result.response?.headers.get('ratelimit')).toMatch(/;r=4;/)
    expect(result.response?.headers.get('www-authenticate')).toContain('scope="billing:read"')
    await auth.gate.close()
  })

  it('passes further handler arguments through (a Next.js route context)', async () => {
    const auth = tollgate(options)
    const route = auth.withAuth(
      async (_request, user, context: { params: Promise<{ id: string }> }) =>
        Response.json({ id: (await context.params).id, subject: user?.subject }),
    )
    const res = await route(bearer(await issuer.mint({ sub: 'bob' })), {
      params: Promise.resolve({ id: 'inv-7' }),
    })
    expect(await res.json()).toEqual({ id: 'inv-7', subject: 'bob' })
    await auth.gate.close()
  })

  it('never calls the handler for a refused request', async () => {
    const auth = tollgate(options)
    let calls = 0
    const route = auth.withAuth(
      () => {
        calls++
        return new Response('secret')
      },
      { scopes: ['billing:read'] },
    )
    const anonymous = await route(new Request(URL_OF_ROUTE))
    expect(anonymous.status).toBe(401)
    // The route's scopes reach the decision: the 401 names them (RFC 6750 §3).
    expect(anonymous.headers.get('www-authenticate')).toBe(
      'Bearer realm="api", scope="billing:read"',
    )
    const unscoped = await route(bearer(await issuer.mint({ scope: 'openid' })))
    expect(unscoped.status).toBe(403)
    expect(calls).toBe(0)
    await auth.gate.close()
  })

  it('rejects with the typed error instead of answering with errorHandling: framework', async () => {
    const auth = tollgate({ ...options, errorHandling: 'framework' })
    await expect(auth.handle(new Request(URL_OF_ROUTE))).rejects.toMatchObject({
      code: 'ERR_TOKEN_MISSING',
      status: 401,
    })
    const route = auth.withAuth(() => new Response('ok'), { scopes: ['billing:read'] })
    await expect(route(bearer(await issuer.mint({ scope: 'openid' })))).rejects.toMatchObject({
      code: 'ERR_INSUFFICIENT_SCOPE',
    })
    await auth.gate.close()
  })

  it('leaves the request body unread for the handler', async () => {
    const auth = tollgate(options)
    const route = auth.withAuth(async (request) => new Response(await request.text()))
    const token = await issuer.mint()
    const res = await route(bearer(token, { method: 'POST', body: '{"amount":42}' }))
    expect(await res.text()).toBe('{"amount":42}')
    await auth.gate.close()
  })

  it('refuses a token also sent in a body the application parsed before the gate', async () => {
    const auth = tollgate(options)
    const token = await issuer.mint()
    const result = await auth.handle(bearer(token, { method: 'POST' }), {
      body: { access_token: token },
    })
    expect(result.response?.status).toBe(400)
    expect(await result.response?.json()).toEqual({
      error: 'invalid_request',
      error_description: 'access token sent more than one way',
    })
    await auth.gate.close()
  })

  it('fails when the route is declared, not per request, on an invalid scope name', () => {
    const auth = tollgate(options)
    expect(() => auth.withAuth(() => new Response(), { scopes: ['billing read'] })).toThrow(
      TypeError,
    )
  })

  it('answers the RFC 9728 document from handle() and resourceMetadata(), without credentials', async () => {
    const resource = 'https://api.example.test/mcp'
    const auth = tollgate({ ...options, resourceMetadata: { resource } })
    const wellKnown = 'https://api.example.test/.well-known/oauth-protected-resource/mcp'
    const handled = await auth.handle(new Request(wellKnown))
    expect(handled.response?.status).toBe(200)
    expect(await handled.response?.json()).toMatchObject({ resource })
    expect(auth.resourceMetadata(new Request(wellKnown))?.status).toBe(200)
    expect(auth.resourceMetadata(new Request(URL_OF_ROUTE))).toBeUndefined()
    await auth.gate.close()
  })
})
