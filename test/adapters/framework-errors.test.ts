/**
 * `errorHandling: 'framework'` with the application's own error handler in its most common shape,
 * which sets only the status and a JSON body (`res.status(err.status ?? 500).json({...})` and
 * each framework's equivalent): the answer still carries what the gate's refusal needs
 * (`WWW-Authenticate` on 400/401/403, RFC 6750 §3; `Retry-After` and the RateLimit fields on 429),
 * since the adapters set them on the response before handing the error on. The headers are those
 * the gate sends itself in its default mode, on Express 4/5, Koa 2/3, Fastify 4/5, Hono and
 * NestJS on both platforms. (The Fetch adapter has no response before the application builds one:
 * its error carries `headers`, docs/frameworks/fetch.md.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  Module,
} from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import express5 from 'express'
import express4 from 'express4'
import fastify5 from 'fastify'
import fastify4 from 'fastify4'
import { Hono } from 'hono'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import { RequireScopes, TollgateModule } from '../../adapters/nestjs/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { fetchListener } from '../helpers/fetch-server.js'

const PATH = '/items'
const SCOPE = 'items:read'
/** What the application's handler answers: only the status and this body, never a header. */
const APP_BODY = { handledBy: 'app' }

interface Failure {
  status?: number
  statusCode?: number
}

type App = (options: GateOptions) => Server | Promise<Server>

function expressApp(express: typeof express5): App {
  return (options) => {
    const app = express()
    const auth = expressAdapter.tollgate(options)
    app.use(auth)
    app.get(PATH, auth.requireScopes(SCOPE), (_req, res) => {
      res.json({ ok: true })
    })
    app.use((error: Failure, _req: express5.Request, res: express5.Response, _next: unknown) => {
      res.status(error.status ?? 500).json(APP_BODY)
    })
    return createServer(app)
  }
}

function koaApp(Koa: typeof Koa3): App {
  return (options) => {
    const app = new Koa()
    app.use(async (ctx, next) => {
      try {
        await next()
      } catch (error) {
        ctx.status = (error as Failure).status ?? 500
        ctx.body = APP_BODY
      }
    })
    const auth = koaAdapter.tollgate(options)
    app.use(auth)
    const guard = auth.requireScopes(SCOPE)
    app.use((ctx, next) =>
      guard(ctx, async () => {
        ctx.body = { ok: true }
      }).then(() => next()),
    )
    return createServer(app.callback())
  }
}

function fastifyApp(Fastify: typeof fastify5): App {
  return async (options) => {
    const app = Fastify()
    app.setErrorHandler((error: Failure, _request, reply) => {
      reply.code(error.statusCode ?? 500).send(APP_BODY)
    })
    const auth = fastifyAdapter.tollgate(options)
    await app.register(auth)
    app.get(PATH, { preHandler: auth.requireScopes(SCOPE) }, async () => ({ ok: true }))
    await app.ready()
    return app.server
  }
}

const honoApp: App = (options) => {
  const app = new Hono()
  app.onError((error, c) => c.json(APP_BODY, ((error as Failure).status ?? 500) as 500))
  const auth = honoAdapter.tollgate(options)
  app.use(auth)
  app.get(PATH, auth.requireScopes(SCOPE), (c) => c.json({ ok: true }))
  return createServer(fetchListener(app.fetch))
}

@Controller()
class ItemsController {
  @Get('items')
  @RequireScopes(SCOPE)
  items() {
    return { ok: true }
  }
}

/** An application's exception filter that sets only the status and a body. */
@Catch()
class StatusOnlyFilter implements ExceptionFilter {
  catch(error: Failure, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<{
      status(code: number): { json?(body: unknown): void; send(body: unknown): void }
    }>()
    const answer = response.status(error.status ?? 500)
    if (answer.json !== undefined) answer.json(APP_BODY)
    else answer.send(APP_BODY)
  }
}

function nestApp(platform: 'express' | 'fastify'): App {
  return async (options) => {
    @Module({ imports: [TollgateModule.forRoot(options)], controllers: [ItemsController] })
    class ItemsModule {}
    if (platform === 'express') {
      const app = await NestFactory.create(ItemsModule, new ExpressAdapter(express5()), {
        logger: false,
      })
      // The module's own filter answers the default mode's refusals; this one the framework mode's.
      if (options.errorHandling === 'framework') app.useGlobalFilters(new StatusOnlyFilter())
      await app.init()
      return app.getHttpServer() as Server
    }
    let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
    const adapter = new FastifyAdapter({
      serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
        handle = handler
        return createServer((req, res) => handle?.(req, res))
      },
    })
    const app = await NestFactory.create(ItemsModule, adapter, { logger: false })
    if (options.errorHandling === 'framework') app.useGlobalFilters(new StatusOnlyFilter())
    await app.init()
    await adapter.getInstance().ready()
    return adapter.getHttpServer() as Server
  }
}

const APPS: ReadonlyArray<readonly [string, App]> = [
  ['express 5', expressApp(express5)],
  ['express 4', expressApp(express4 as unknown as typeof express5)],
  ['koa 3', koaApp(Koa3)],
  ['koa 2', koaApp(Koa2 as unknown as typeof Koa3)],
  ['fastify 5', fastifyApp(fastify5)],
  ['fastify 4', fastifyApp(fastify4 as unknown as typeof fastify5)],
  ['hono', honoApp],
  ['nestjs (express)', nestApp('express')],
  ['nestjs (fastify)', nestApp('fastify')],
]

const FIELDS = ['www-authenticate', 'retry-after', 'ratelimit-policy', 'ratelimit'] as const

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

const optionsFor = (errorHandling: 'respond' | 'framework'): GateOptions => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
  errorHandling,
  tenant: { claim: 'tenant' },
  rateLimit: { windows: [{ points: 1, durationSeconds: 60 }] },
})

describe.each(APPS)(
  '%s with errorHandling: framework and a status-only error handler',
  (_name, createApp) => {
    let framework: Server
    let respond: Server
    let tenants = 0
    beforeAll(async () => {
      framework = await createApp(optionsFor('framework'))
      respond = await createApp(optionsFor('respond'))
    })
    afterAll(() => {
      framework.close()
      respond.close()
    })

    /** The same request to both apps: the application's body, with the gate's own headers. */
    async function compare(headersOf: () => Promise<Record<string, string>>, status: number) {
      const own = await request(respond)
        .get(PATH)
        .set(await headersOf())
      const handled = await request(framework)
        .get(PATH)
        .set(await headersOf())
      expect(own.status).toBe(status)
      expect(handled.status).toBe(status)
      expect(handled.body).toEqual(APP_BODY)
      for (const field of FIELDS) expect(handled.headers[field], field).toBe(own.headers[field])
      return handled
    }
    const bearer = (token: string) => ({ Authorization: `Bearer ${token}` })

    it('keeps the challenge on a 401 without a token and a 401 invalid_token', async () => {
      const missing = await compare(async () => ({}), 401)
      expect(missing.headers['www-authenticate']).toMatch(/^Bearer realm="api"/)
      const expired = await compare(async () => bearer(await issuer.mint({ exp: 1 })), 401)
      expect(expired.headers['www-authenticate']).toContain('error="invalid_token"')
    })

    it('keeps the challenge on a 400 invalid_request', async () => {
      const malformed = await compare(async () => ({ Authorization: 'Bearer' }), 400)
      expect(malformed.headers['www-authenticate']).toContain('error="invalid_request"')
    })

    it('keeps the challenge and the RateLimit fields on a 403 insufficient_scope', async () => {
      const scopeless = await compare(
        async () => bearer(await issuer.mint({ tenant: `t-${++tenants}`, scope: 'openid' })),
        403,
      )
      expect(scopeless.headers['www-authenticate']).toContain(`scope="${SCOPE}"`)
      expect(scopeless.headers['ratelimit']).toMatch(/^"default";r=0;t=\d+$/)
    })

    it('keeps Retry-After and the RateLimit fields on a 429', async () => {
      const tenant = `t-${++tenants}`
      const token = await issuer.mint({ tenant, scope: SCOPE })
      // Each app spends the tenant's one point, then refuses it.
      expect((await request(respond).get(PATH).set(bearer(token))).status).toBe(200)
      expect((await request(framework).get(PATH).set(bearer(token))).status).toBe(200)
      const limited = await compare(async () => bearer(token), 429)
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(limited.headers['ratelimit-policy']).toBe('"default";q=1;w=60')
    })
  },
)
