/**
 * What the adapters' entry points export. `tollgate/express` and `tollgate/koa` give the core's
 * public names too, with one exception: the core's guard functions (`requireScopes` …), which are
 * not middleware. Exported under the names of the middleware's own guards, they were mounted as
 * route middleware, as 0.1 and every peer library teach, and answered 500 with nothing at start-up.
 */
import express from 'express'
import Koa from 'koa'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import * as nestAdapter from '../../adapters/nestjs/index.js'
import * as core from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'

const GUARD_NAMES = ['requireScopes', 'requireAnyScope', 'requireRealmRoles', 'requireClientRoles']
const CORE_GUARDS: unknown[] = GUARD_NAMES.map((name) => (core as Record<string, unknown>)[name])
/** Each entry point, with the values it adds to the core's. */
const ADAPTERS: Array<[string, Record<string, unknown>, string[]]> = [
  ['tollgate/express', expressAdapter, ['signIn', 'tollgate']],
  ['tollgate/koa', koaAdapter, ['signIn', 'tollgate']],
  ['tollgate/fastify', fastifyAdapter, ['signIn', 'tollgate']],
  ['tollgate/hono', honoAdapter, ['signIn', 'tollgate']],
  ['tollgate/fetch', fetchAdapter, ['signIn', 'tollgate']],
  [
    'tollgate/nestjs',
    nestAdapter,
    [
      'Auth',
      'Public',
      'RequireAnyScope',
      'RequireClientRoles',
      'RequireRealmRoles',
      'RequireScopes',
      'TOLLGATE_GATE',
      'TollgateExceptionFilter',
      'TollgateGuard',
      'TollgateModule',
      'TollgateRefusal',
    ],
  ],
]

describe.each(ADAPTERS)('%s exports', (_name, adapter, ownNames) => {
  it('no guard function of the core, under any name', () => {
    for (const name of GUARD_NAMES) expect(name in adapter, name).toBe(false)
    const guards = Object.entries(adapter).filter(([, value]) => CORE_GUARDS.includes(value))
    expect(guards.map(([name]) => name)).toEqual([])
  })

  it('no name like a guard at all: route guards hang on the middleware', () => {
    // Except tollgate/nestjs's decorators (`@RequireScopes(...)`), listed as its own names: a
    // decorator reads as one and cannot be mounted as middleware.
    const guardLike = (name: string) => /^require/i.test(name) && !ownNames.includes(name)
    expect(Object.keys(adapter).filter(guardLike)).toEqual([])
  })

  it("every other value of the core, with the core's meaning", () => {
    for (const [name, value] of Object.entries(core)) {
      if (GUARD_NAMES.includes(name)) continue
      expect(adapter[name], name).toBe(value)
    }
  })

  it('nothing but the core and its own entry points', () => {
    const own = Object.keys(adapter).filter((name) => !(name in core))
    expect(own.sort()).toEqual(ownNames)
  })
})

describe('a guard mounted the 0.1 way', () => {
  let issuer: TestIssuer
  beforeAll(async () => {
    issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  })
  afterAll(async () => {
    await issuer.close()
  })
  const options = () => ({
    issuers: core.keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  })

  it('fails when the Express app is built, not with a 500 at the first request', () => {
    const { requireScopes } = expressAdapter as Record<string, unknown>
    const app = express()
    app.use(expressAdapter.tollgate(options()))
    expect(() =>
      app.get('/x', (requireScopes as (scope: string) => express.RequestHandler)('a'), (_q, r) => {
        r.end()
      }),
    ).toThrow(TypeError)
  })

  it('fails when the Koa app is built, not with a 500 at the first request', () => {
    const { requireScopes } = koaAdapter as Record<string, unknown>
    const app = new Koa()
    app.use(koaAdapter.tollgate(options()))
    expect(() => app.use((requireScopes as (scope: string) => Koa.Middleware)('a'))).toThrow(
      TypeError,
    )
  })

  it("answers 403 in both frameworks through the middleware's own guard", async () => {
    const token = await issuer.mint({ scope: 'billing:read' })
    const expressAuth = expressAdapter.tollgate(options())
    const expressApp = express()
    expressApp.get('/x', expressAuth, expressAuth.requireScopes('billing:write'), (_req, res) => {
      res.end('ok')
    })
    const koaAuth = koaAdapter.tollgate(options())
    const koaApp = new Koa()
    koaApp.use(koaAuth)
    koaApp.use(koaAuth.requireScopes('billing:write'))
    koaApp.use((ctx) => {
      ctx.body = 'ok'
    })
    for (const server of [expressApp, koaApp.callback()]) {
      const res = await request(server).get('/x').set('Authorization', `Bearer ${token}`)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"')
    }
  })
})
