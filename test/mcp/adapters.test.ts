/**
 * `mcpGate` on every adapter (Express, Koa, Hono, Fetch, Fastify, NestJS on both platforms): per-tool
 * scopes answered with the gate's own 403 and challenge, header/body disagreement answered as MCP
 * answers it (400, JSON-RPC -32020), every method of the endpoint guarded, the body handed on,
 * windows per (tenant, tool) reported as the tenant's are; then what only Fastify and NestJS can
 * get wrong (a body no parser read, Fastify's text parser, a GET stream without a body).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

import {
  All,
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  HttpCode,
  Module,
  Req,
  Res,
} from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import express from 'express'
import fastify5, { type FastifyReply, type FastifyRequest } from 'fastify'
import fastify4 from 'fastify4'
import { Hono } from 'hono'
import Koa from 'koa'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { mcpGate as expressMcp, tollgate as expressTollgate } from '../../adapters/express/index.js'
import { mcpGate as fastifyMcp, tollgate as fastifyTollgate } from '../../adapters/fastify/index.js'
import { mcpGate as fetchMcp, tollgate as fetchTollgate } from '../../adapters/fetch/index.js'
import {
  mcpGate as honoMcp,
  tollgate as honoTollgate,
  type McpEnv,
} from '../../adapters/hono/index.js'
import {
  mcpGate as koaMcp,
  tollgate as koaTollgate,
  type McpState,
} from '../../adapters/koa/index.js'
import {
  type Admission,
  Auth,
  Mcp,
  type McpAuthorized,
  McpGate,
  TollgateModule,
} from '../../adapters/nestjs/index.js'
import { isTollgateError, TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import type { McpPolicyOptions } from '../../src/mcp/policy.js'
import type { SharedStore } from '../../src/shared-store.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { fetchListener } from '../helpers/fetch-server.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

let issuer: TestIssuer
let base: GateOptions
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'mcp' })
  base = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'mcp',
    resourceMetadata: { resource: 'https://mcp.example.com/mcp' },
  }
})
afterAll(async () => {
  await issuer.close()
})

const POLICY: McpPolicyOptions = {
  default: { scopes: ['mcp:use'] },
  tools: {
    search: { scopes: ['mcp:use', 'mcp:search'] },
    render: { scopes: ['mcp:use'], rateLimit: [{ points: 2, durationSeconds: 60 }] },
  },
}
const call = (name: string, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {} },
})
const modern = (name: string) => ({
  'MCP-Protocol-Version': '2026-07-28',
  'Mcp-Method': 'tools/call',
  'Mcp-Name': name,
})

// Every app answers an authorized request with what the handler was told, and hands a refusal of
// `errorHandling: 'framework'` to its own error handling, which answers it with renderMcpError and
// says so (`X-Handled-By`, and the typed error's code and reason).

/** What each app's handler answers: the operation authorized, the body it can hand on, the subject. */
function answered(mcp: McpAuthorized | undefined, body: unknown, auth: Admission | undefined) {
  const { method, name, operations } = mcp ?? {}
  return { mcp: { method, name, operations }, body: body ?? null, subject: auth?.subject }
}

/** The application's own answer to an error the adapter handed on. */
function appError(error: unknown): {
  status: number
  headers: Record<string, string>
  body: string
} {
  if (!isTollgateError(error)) {
    // The framework's own (a JSON parser's 400), with its status.
    const { status, statusCode } = error as { status?: number; statusCode?: number }
    const body = JSON.stringify({ unexpected: String(error) })
    return { status: status ?? statusCode ?? 500, headers: {}, body }
  }
  const { status, headers, body } = renderMcpError(error)
  const reason = (error as { reason?: string }).reason ?? ''
  return {
    status,
    headers: { ...headers, 'X-Handled-By': 'app', 'X-Error': `${error.code} ${reason}` },
    body,
  }
}

type Build = (options: GateOptions, policy: McpPolicyOptions) => Server

function expressApp(parse: boolean): Build {
  return (options, policy) => {
    const auth = expressTollgate(options)
    const app = express()
    const handlers: express.RequestHandler[] = parse ? [express.json()] : []
    app.all('/mcp', ...handlers, expressMcp(auth, policy), (req, res) => {
      res.json(answered(req.mcp, req.body, req.auth))
    })
    app.use(
      (error: unknown, _req: express.Request, res: express.Response, _n: express.NextFunction) => {
        const { status, headers, body } = appError(error)
        res.status(status).set(headers).send(body)
      },
    )
    return app.listen(0)
  }
}

const fetchApp: Build = (options, policy) => {
  const mcp = fetchMcp(fetchTollgate(options), policy)
  const handler = mcp(async (request, user, operation) => {
    // The original request is still readable by the transport.
    const text = request.method === 'POST' ? await request.text() : ''
    return Response.json({ ...answered(operation, operation.body, user), text })
  })
  const app = (request: Request) =>
    handler(request).catch((error: unknown) => {
      const { status, headers, body } = appError(error)
      return new Response(body, { status, headers })
    })
  return createServer(fetchListener(app)).listen(0)
}

const koaApp: Build = (options, policy) => {
  const auth = koaTollgate(options)
  const app = new Koa<McpState>()
  app.use(async (ctx, next) => {
    try {
      await next()
    } catch (error) {
      const { status, headers, body } = appError(error)
      ctx.status = status
      ctx.set(headers)
      ctx.body = body
    }
  })
  app.use(koaMcp(auth, policy))
  app.use((ctx) => {
    ctx.body = answered(ctx.state.mcp, (ctx.request as { body?: unknown }).body, ctx.state.auth)
  })
  return app.listen(0)
}

const honoApp: Build = (options, policy) => {
  const auth = honoTollgate(options)
  const app = new Hono<McpEnv>()
  app.onError((error) => {
    const { status, headers, body } = appError(error)
    return new Response(body, { status, headers })
  })
  app.all('/mcp', honoMcp(auth, policy), async (c) => {
    const operation = c.get('mcp')
    // The original request is still readable by the transport.
    const text = c.req.method === 'POST' ? await c.req.text() : ''
    return c.json({ ...answered(operation, operation.body, c.get('auth')), text })
  })
  return createServer(fetchListener((request) => app.fetch(request))).listen(0)
}

/** Requests wait for the application to start: the builders are synchronous, Fastify and Nest not. */
function waitingFor(
  started: () => PromiseLike<unknown>,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
) {
  return (req: IncomingMessage, res: ServerResponse) => {
    started().then(
      () => handler(req, res),
      (error: unknown) => {
        res.statusCode = 500
        res.end(`the application did not start: ${String(error)}`)
      },
    )
  }
}

type FastifyFactory = typeof fastify5

/**
 * `plugin`: the gate registered for the app, which decides in `onRequest` (else `mcpGate` runs it
 * in `preHandler`). `unparsed`: no parser reads any body (a catch-all that leaves it unread).
 */
function fastifyApp(
  Fastify: FastifyFactory,
  { plugin, unparsed }: { plugin: boolean; unparsed: boolean },
): Build {
  return (options, policy) => {
    let ready: PromiseLike<unknown> = Promise.resolve()
    const app = Fastify({
      serverFactory: (handler) => createServer(waitingFor(() => ready, handler)),
    })
    if (unparsed) {
      app.removeAllContentTypeParsers()
      app.addContentTypeParser('*', (_request, _payload, done) => done(null))
    }
    app.setErrorHandler((error, _request, reply) => {
      const { status, headers, body } = appError(error)
      return reply.code(status).headers(headers).send(body)
    })
    const auth = fastifyTollgate(options)
    if (plugin) app.register(auth)
    app.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      preHandler: fastifyMcp(auth, policy),
      handler: async (request: FastifyRequest) => answered(request.mcp, request.body, request.auth),
    })
    ready = app.ready()
    return app.server
  }
}

@Controller()
class McpController {
  @All('mcp')
  @HttpCode(200)
  @McpGate()
  handle(
    @Mcp() mcp: McpAuthorized | undefined,
    @Auth() auth: Admission | undefined,
    @Req() req: { body?: unknown },
  ) {
    return answered(mcp, req.body, auth)
  }
}

/** The application's own filter for `errorHandling: 'framework'`, on either platform. */
@Catch(TollgateError)
class AppFilter implements ExceptionFilter<TollgateError> {
  catch(error: TollgateError, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<ServerResponse | { raw: ServerResponse }>()
    const raw = 'raw' in response ? response.raw : response
    const { status, headers, body } = appError(error)
    raw.writeHead(status, headers).end(body)
  }
}

function nestApp(
  platform: 'express' | 'fastify',
  { globalGuard, bodyParser }: { globalGuard: boolean; bodyParser: boolean },
): Build {
  return (options, policy) => {
    @Module({
      imports: [TollgateModule.forRoot(options, { globalGuard, mcp: policy })],
      controllers: [McpController],
    })
    class McpModule {}
    let started: Promise<unknown>
    if (platform === 'express') {
      const instance = express()
      started = NestFactory.create(McpModule, new ExpressAdapter(instance), {
        logger: false,
        bodyParser,
      }).then((app) => app.useGlobalFilters(new AppFilter()).init())
      return createServer(waitingFor(() => started, instance)).listen(0)
    }
    const adapter = new FastifyAdapter({
      serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
        createServer(waitingFor(() => started, handler)),
    })
    started = NestFactory.create(McpModule, adapter, { logger: false, bodyParser })
      .then((app) => app.useGlobalFilters(new AppFilter()).init())
      .then(() => adapter.getInstance().ready())
    return (adapter.getHttpServer() as Server).listen(0)
  }
}

interface McpApp {
  readonly name: string
  readonly build: Build
  /** No parser reads the body before the gate: the gate reads it, bounded by `maxBodyBytes`. */
  readonly readsBody: boolean
}

const APPS: readonly McpApp[] = [
  { name: 'express (express.json before)', build: expressApp(true), readsBody: false },
  { name: 'express (body read by the gate)', build: expressApp(false), readsBody: true },
  { name: 'fetch', build: fetchApp, readsBody: true },
  { name: 'koa (body read by the gate)', build: koaApp, readsBody: true },
  { name: 'hono', build: honoApp, readsBody: true },
  {
    name: 'fastify 5 (plugin registered, JSON parsed by Fastify)',
    build: fastifyApp(fastify5, { plugin: true, unparsed: false }),
    readsBody: false,
  },
  {
    name: 'fastify 5 (route guarded on its own, body read by the gate)',
    build: fastifyApp(fastify5, { plugin: false, unparsed: true }),
    readsBody: true,
  },
  {
    name: 'fastify 4 (plugin registered, JSON parsed by Fastify)',
    build: fastifyApp(fastify4 as unknown as FastifyFactory, { plugin: true, unparsed: false }),
    readsBody: false,
  },
  {
    name: 'nestjs (express, global guard)',
    build: nestApp('express', { globalGuard: true, bodyParser: true }),
    readsBody: false,
  },
  {
    name: 'nestjs (express, @McpGate() alone, bodyParser: false)',
    build: nestApp('express', { globalGuard: false, bodyParser: false }),
    readsBody: true,
  },
  {
    name: 'nestjs (fastify, global guard)',
    build: nestApp('fastify', { globalGuard: true, bodyParser: true }),
    readsBody: false,
  },
  {
    name: 'nestjs (fastify, @McpGate() alone)',
    build: nestApp('fastify', { globalGuard: false, bodyParser: true }),
    readsBody: false,
  },
]

const token = (scope: string, tenant = 'acme') => issuer.mint({ scope, tenant, sub: 'alice' })

/** The apps by name, as `.each` tables whose first column titles the suite (`%s`). */
const byName = (apps: readonly McpApp[]) => apps.map((app) => [app.name, app] as const)

describe.each(byName(APPS))('mcpGate on %s', (_name, { build }) => {
  let app: Server
  beforeAll(() => {
    app = build({ ...base, tenant: { claim: 'tenant' } }, POLICY)
  })
  afterAll(() => {
    app.close()
  })

  it('admits a tool the token has the scopes of, telling the handler which operation', async () => {
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use mcp:search')}`)
      .set(modern('search'))
      .send(call('search'))
    expect(res.status).toBe(200)
    expect(res.body.mcp).toMatchObject({ method: 'tools/call', name: 'search' })
    expect(res.body.body).toEqual(call('search'))
    expect(res.body.subject).toBe('alice')
  })

  it("answers 403 insufficient_scope naming exactly the tool's scopes", async () => {
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use')}`)
      .set(modern('search'))
      .send(call('search'))
    expect(res.status).toBe(403)
    expect(res.body.error).toBe('insufficient_scope')
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer realm="[^"]*", error="insufficient_scope"/,
    )
    expect(res.headers['www-authenticate']).toContain('scope="mcp:use mcp:search"')
    expect(res.headers['www-authenticate']).toContain('resource_metadata="')
  })

  it('answers 401 with the challenge before reading the body, without credentials', async () => {
    const res = await request(app).post('/mcp').set(modern('other')).send(call('search'))
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm=/)
  })

  it('refuses headers that disagree with the body with 400 and a JSON-RPC -32020 error, echoing no token', async () => {
    const bearer = await token('mcp:use mcp:search')
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${bearer}`)
      .set(modern('search'))
      .send(call('render', 5))
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 5,
      error: { code: -32020, message: expect.stringMatching(/^Header mismatch/) },
    })
    expect(res.text).not.toContain(bearer)
    expect(res.text).not.toMatch(/search|render/)
  })

  it('refuses a modern request without Mcp-Name (400, -32020)', async () => {
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use mcp:search')}`)
      .set({ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call' })
      .send(call('search'))
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe(-32020)
  })

  it('refuses a batch when one member is outside the scopes, admits it when all are within', async () => {
    const batch = [call('render', 1), call('search', 2)]
    const refused = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use', 'batch-a')}`)
      .send(batch)
    expect(refused.status).toBe(403)
    expect(refused.headers['www-authenticate']).toContain('scope="mcp:use mcp:search"')
    const admitted = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use mcp:search', 'batch-b')}`)
      .send(batch)
    expect(admitted.status).toBe(200)
    expect(admitted.body.mcp.operations).toHaveLength(2)
  })

  it('guards the GET stream and DELETE by the default rule', async () => {
    for (const method of ['get', 'delete'] as const) {
      expect((await request(app)[method]('/mcp')).status).toBe(401)
      const narrow = await request(app)
        [method]('/mcp')
        .set('Authorization', `Bearer ${await token('other')}`)
      expect(narrow.status).toBe(403)
      expect(narrow.headers['www-authenticate']).toContain('scope="mcp:use"')
      const ok = await request(app)
        [method]('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use')}`)
      expect(ok.status).toBe(200)
      expect(ok.body.mcp).toEqual({ operations: [] })
    }
  })

  it('refuses a body that is not JSON with 400 and -32700', async () => {
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use')}`)
      .set('Content-Type', 'application/json')
      .send('{"jsonrpc": "2.0", ')
    expect(res.status).toBe(400)
    // A JSON parser before the gate (express.json, Fastify's) answers a parse error itself.
    if (res.body.jsonrpc !== undefined) expect(res.body.error.code).toBe(-32700)
  })

  it("counts a tool's own windows per (tenant, tool), naming its policy in RateLimit-Policy", async () => {
    const send = async (tenant: string) =>
      request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use', tenant)}`)
        .send(call('render'))
    const first = await send('limited')
    expect(first.status).toBe(200)
    expect(first.headers['ratelimit-policy']).toBe('"tool.render";q=2;w=60')
    expect(first.headers['ratelimit']).toMatch(/^"tool.render";r=1;t=\d+$/)
    // Counted once per request, however many times the framework runs the gate's hooks or guards.
    expect((await send('limited')).status).toBe(200)
    const third = await send('limited')
    expect(third.status).toBe(429)
    expect(third.headers['ratelimit-policy']).toBe('"tool.render";q=2;w=60')
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // Another tenant has its own window for the tool; other tools are not counted in it.
    expect((await send('other-tenant')).status).toBe(200)
    const search = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use mcp:search', 'limited')}`)
      .send(call('search'))
    expect(search.status).toBe(200)
    expect(search.headers['ratelimit-policy']).toBeUndefined()
  })
})

/** Builds an app, runs `use` against it, closes it. */
async function withApp(
  build: Build,
  options: GateOptions,
  policy: McpPolicyOptions,
  use: (app: Server) => Promise<void>,
): Promise<void> {
  const app = build(options, policy)
  try {
    await use(app)
  } finally {
    app.close()
  }
}

/** A store every call of which fails, as a store that is down. */
const DOWN: SharedStore = {
  increment: () => Promise.reject(new Error('store down')),
  claimOnce: () => Promise.reject(new Error('store down')),
}

describe.each(byName(APPS))('mcpGate next to the tenant limit on %s', (_name, { build }) => {
  it("joins the tool's RateLimit-Policy items to the tenant's", async () => {
    const options = {
      ...base,
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: 100, durationSeconds: 1 }] },
    }
    await withApp(build, options, POLICY, async (app) => {
      const res = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use')}`)
        .send(call('render'))
      expect(res.status).toBe(200)
      expect(res.headers['ratelimit-policy']).toBe('"default";q=100;w=1, "tool.render";q=2;w=60')
      // One decision of the gate, one count of the tool, whichever hooks or guards ran.
      expect(res.headers['ratelimit']).toMatch(/^"default";r=99;t=\d+, "tool.render";r=1;t=\d+$/)
    })
  })

  it("reports a tool's 429 as the tenant limit's: rate_limited naming the tool, and a rejected event", async () => {
    const events: GateEvent[] = []
    const options = {
      ...base,
      tenant: { claim: 'tenant' },
      onEvent: (event: GateEvent) => void events.push(event),
    }
    await withApp(build, options, POLICY, async (app) => {
      const bearer = await token('mcp:use')
      for (let sent = 0; sent < 3; sent++) {
        await request(app)
          .post('/mcp')
          .set('Authorization', `Bearer ${bearer}`)
          .send(call('render'))
      }
      expect(events.filter((event) => event.type === 'rate_limited')).toEqual([
        { type: 'rate_limited', tenant: 'acme', policy: 'tool.render', tool: 'render' },
      ])
      expect(events.filter((event) => event.type === 'rejected')).toEqual([
        expect.objectContaining({ code: 'ERR_RATE_LIMITED', status: 429, tenant: 'acme' }),
      ])
    })
  })

  it("reports a failing store of the tool's windows as the tenant limit's, naming the tool", async () => {
    const events: GateEvent[] = []
    const options = {
      ...base,
      tenant: { claim: 'tenant' },
      onEvent: (event: GateEvent) => void events.push(event),
    }
    const policy: McpPolicyOptions = {
      ...POLICY,
      rateLimit: { store: { shared: DOWN }, onStoreError: 'memory' },
    }
    await withApp(build, options, policy, async (app) => {
      const res = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use')}`)
        .send(call('render'))
      // The failure policy took over: counted in process memory.
      expect(res.status).toBe(200)
      expect(res.headers['ratelimit-policy']).toBe('"tool.render";q=2;w=60')
      expect(events.filter((event) => event.type === 'limiter_store_error')).toEqual([
        { type: 'limiter_store_error', error: expect.any(Error), tool: 'render' },
      ])
      expect(events.filter((event) => event.type === 'limiter_fallback')).toEqual([
        { type: 'limiter_fallback', engaged: true, policy: 'memory', tool: 'render' },
      ])
    })
  })

  it("passes a header mismatch to the application's error handling with errorHandling: 'framework'", async () => {
    const options: GateOptions = { ...base, errorHandling: 'framework' }
    await withApp(build, options, POLICY, async (app) => {
      const res = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use mcp:search')}`)
        .set(modern('search'))
        .send(call('render', 3))
      expect(res.status).toBe(400)
      expect(res.headers['x-handled-by']).toBe('app')
      expect(res.headers['x-error']).toBe('ERR_MCP_REQUEST mcp_header_mismatch')
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32020 } })
    })
  })
})

describe.each(byName(APPS.filter((app) => app.readsBody)))(
  'mcpGate reading the body itself on %s',
  (_name, { build }) => {
    it('refuses a body larger than maxBodyBytes with 413 when the gate reads it', async () => {
      await withApp(build, base, { ...POLICY, maxBodyBytes: 1024 }, async (app) => {
        const res = await request(app)
          .post('/mcp')
          .set('Authorization', `Bearer ${await token('mcp:use')}`)
          .set('Content-Type', 'application/json')
          .send(JSON.stringify({ ...call('a'), pad: 'x'.repeat(2000) }))
        expect(res.status).toBe(413)
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: expect.any(String) },
        })
      })
    })

    it('reads a body sent without a content type, and hands it on parsed', async () => {
      await withApp(build, base, POLICY, async (app) => {
        const res = await request(app)
          .post('/mcp')
          .set('Authorization', `Bearer ${await token('mcp:use mcp:search')}`)
          .set('Content-Type', 'application/octet-stream')
          .send(Buffer.from(JSON.stringify(call('search'))))
        expect(res.status).toBe(200)
        expect(res.body.mcp).toMatchObject({ method: 'tools/call', name: 'search' })
        expect(res.body.body).toEqual(call('search'))
      })
    })
  },
)

describe('windows per (tenant, tool) on a shared Redis', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('hold one exact count for the fleet: a gateway of each adapter admit 4 of 12 calls together', async () => {
    const shared: McpPolicyOptions = {
      ...POLICY,
      tools: { render: { rateLimit: [{ points: 4, durationSeconds: 60 }] } },
      // A deadline no loaded machine misses: a call answered late would be counted in memory.
      rateLimit: { store: { redis: await redis.client() }, storeTimeoutMs: 5000 },
    }
    const options = { ...base, tenant: { claim: 'tenant' } }
    const fleet = APPS.map(({ build }) => build(options, shared))
    try {
      // Every gateway started (NestJS and Fastify start after the server is built).
      for (const app of fleet) expect((await request(app).get('/mcp')).status).toBe(401)
      const bearer = await token('mcp:use', 'wayne')
      const statuses = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          request(fleet[index % fleet.length] as Server)
            .post('/mcp')
            .set('Authorization', `Bearer ${bearer}`)
            .send(call('render'))
            .then((res) => res.status),
        ),
      )
      expect(statuses.filter((status) => status === 200)).toHaveLength(4)
      expect(statuses.filter((status) => status === 429)).toHaveLength(8)
      const client = await redis.client()
      expect(await client.keys('tollgate:mcp:{*')).toEqual(['tollgate:mcp:{wayne}:tool.render:60'])
    } finally {
      for (const app of fleet) app.close()
    }
  })
})

// What a transport does with the answer (the MCP SDK's `handleRequest(req, res, body)`): it writes
// to Node's response itself, an event stream for the GET, JSON for a POST.
function transport(
  raw: ServerResponse,
  method: string,
  payload: ReturnType<typeof answered>,
): void {
  if (method === 'GET') {
    raw.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' })
    raw.end(`event: ping\ndata: ${JSON.stringify(payload.mcp)}\n\n`)
    return
  }
  raw.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(payload))
}

/** Fastify with its default parsers (JSON, text), the gate registered, the reply hijacked. */
function fastifyTransportApp(Fastify: FastifyFactory): Build {
  return (options, policy) => {
    let ready: PromiseLike<unknown> = Promise.resolve()
    const app = Fastify({
      serverFactory: (handler) => createServer(waitingFor(() => ready, handler)),
    })
    const auth = fastifyTollgate(options)
    app.register(auth)
    app.route({
      method: ['POST', 'GET', 'DELETE'],
      url: '/mcp',
      preHandler: fastifyMcp(auth, policy),
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        reply.hijack()
        transport(reply.raw, request.method, answered(request.mcp, request.body, request.auth))
      },
    })
    ready = app.ready()
    return app.server
  }
}

@Controller()
class McpTransportController {
  @All('mcp')
  @McpGate()
  handle(
    @Mcp() mcp: McpAuthorized | undefined,
    @Auth() auth: Admission | undefined,
    @Req() req: { body?: unknown; method: string },
    @Res() res: ServerResponse | { raw: ServerResponse },
  ) {
    transport('raw' in res ? res.raw : res, req.method, answered(mcp, req.body, auth))
  }
}

function nestTransportApp(platform: 'express' | 'fastify'): Build {
  return (options, policy) => {
    @Module({
      imports: [TollgateModule.forRoot(options, { mcp: policy })],
      controllers: [McpTransportController],
    })
    class McpModule {}
    let started: Promise<unknown>
    if (platform === 'express') {
      const instance = express()
      started = NestFactory.create(McpModule, new ExpressAdapter(instance), {
        logger: false,
      }).then((app) => app.init())
      return createServer(waitingFor(() => started, instance)).listen(0)
    }
    const adapter = new FastifyAdapter({
      serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
        createServer(waitingFor(() => started, handler)),
    })
    started = NestFactory.create(McpModule, adapter, { logger: false })
      .then((app) => app.init())
      .then(() => adapter.getInstance().ready())
    return (adapter.getHttpServer() as Server).listen(0)
  }
}

const TRANSPORT_APPS: ReadonlyArray<readonly [string, Build]> = [
  ['fastify 5', fastifyTransportApp(fastify5)],
  ['fastify 4', fastifyTransportApp(fastify4 as unknown as FastifyFactory)],
  ['nestjs (fastify)', nestTransportApp('fastify')],
  ['nestjs (express)', nestTransportApp('express')],
]

describe.each(TRANSPORT_APPS)(
  "mcpGate before a transport that writes to Node's response, on %s",
  (_name, build) => {
    let app: Server
    beforeAll(() => {
      app = build(
        {
          ...base,
          tenant: { claim: 'tenant' },
          rateLimit: { windows: [{ points: 100, durationSeconds: 60 }] },
        },
        POLICY,
      )
    })
    afterAll(() => {
      app.close()
    })

    it('serves the GET stream, sent without a body and with a JSON content type, under the default rule with the rate-limit fields', async () => {
      const res = await request(app)
        .get('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use', 'stream')}`)
        .set('Accept', 'text/event-stream')
        .set('Content-Type', 'application/json')
      expect(res.status).toBe(200)
      expect(res.headers['content-type']).toBe('text/event-stream')
      expect(res.text).toBe('event: ping\ndata: {"operations":[]}\n\n')
      expect(res.headers['ratelimit-policy']).toBe('"default";q=100;w=60')
      expect(res.headers['ratelimit']).toMatch(/^"default";r=99;t=\d+$/)
    })

    it("keeps the tenant's and the tool's rate-limit fields on the transport's answer", async () => {
      const res = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${await token('mcp:use', 'transport')}`)
        .send(call('render'))
      expect(res.status).toBe(200)
      expect(res.body.mcp).toMatchObject({ method: 'tools/call', name: 'render' })
      expect(res.headers['ratelimit-policy']).toBe('"default";q=100;w=60, "tool.render";q=2;w=60')
    })

    it('reads a JSON-RPC body sent as text/plain (Fastify parses it as text; Express leaves it unread)', async () => {
      const bearer = await token('mcp:use mcp:search', 'text')
      const sent = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${bearer}`)
        .set('Content-Type', 'text/plain')
        .send(JSON.stringify(call('search')))
      expect(sent.status).toBe(200)
      expect(sent.body.mcp).toMatchObject({ method: 'tools/call', name: 'search' })
      // Handed on parsed, as a JSON parser would have.
      expect(sent.body.body).toEqual(call('search'))
      const mismatch = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${bearer}`)
        .set('Content-Type', 'text/plain')
        .set(modern('search'))
        .send(JSON.stringify(call('render', 9)))
      expect(mismatch.status).toBe(400)
      expect(JSON.parse(mismatch.text)).toMatchObject({ id: 9, error: { code: -32020 } })
    })
  },
)

describe('mcpGate on Fastify, a body of a type no parser takes', () => {
  it('is refused by Fastify (415) once the gate admitted the request, and 401 first without credentials', async () => {
    await withApp(fastifyTransportApp(fastify5), base, POLICY, async (app) => {
      const send = (bearer?: string) => {
        const sent = request(app).post('/mcp').set('Content-Type', 'application/x-unknown')
        return (bearer === undefined ? sent : sent.set('Authorization', `Bearer ${bearer}`)).send(
          JSON.stringify(call('search')),
        )
      }
      expect((await send()).status).toBe(401)
      expect((await send(await token('mcp:use mcp:search'))).status).toBe(415)
    })
  })
})

describe('TollgateModule.forRoot() with moduleOptions.mcp', () => {
  it('throws a TypeError naming the option at start-up', () => {
    expect(() => TollgateModule.forRoot(base, { mcp: 'tools' as never })).toThrow(
      /^TollgateModule\.forRoot\(options, moduleOptions\): "moduleOptions\.mcp" must be an object/,
    )
    expect(() =>
      TollgateModule.forRoot(base, { mcp: { tools: { search: { scopes: ['a b'] } } } }),
    ).toThrow(
      /^TollgateModule\.forRoot\(options, moduleOptions\): moduleOptions\.mcp\.tools\.search\.scopes must be scope names/,
    )
    expect(() =>
      TollgateModule.forRoot(base, {
        mcp: { tools: { 'a tool': { rateLimit: [{ points: 1, durationSeconds: 1 }] } } },
      }),
    ).toThrow(
      /^TollgateModule\.forRoot\(options, moduleOptions\): moduleOptions\.mcp\.tools\.a tool\.policy must be set/,
    )
  })
})
