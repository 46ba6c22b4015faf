/**
 * `mcpGate` on Express and Fetch: per-tool scopes answered with the gate's own 403 and challenge,
 * header/body disagreement answered as MCP answers it (400, JSON-RPC -32020), every method of the
 * endpoint guarded, the body handed on, and windows per (tenant, tool).
 */
import { createServer, type Server } from 'node:http'

import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { mcpGate as expressMcp, tollgate as expressTollgate } from '../../adapters/express/index.js'
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
import { isTollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import type { McpPolicyOptions } from '../../src/mcp/policy.js'
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

function expressApp(
  options: GateOptions,
  parse: boolean,
  events?: GateEvent[],
  policy: McpPolicyOptions = POLICY,
): Server {
  const auth = expressTollgate(
    events === undefined ? options : { ...options, onEvent: (event) => void events.push(event) },
  )
  const app = express()
  const handlers: express.RequestHandler[] = parse ? [express.json()] : []
  app.all('/mcp', ...handlers, expressMcp(auth, policy), (req, res) => {
    res.json({ mcp: req.mcp, body: req.body ?? null, subject: req.auth?.subject })
  })
  return app.listen(0)
}

function fetchApp(options: GateOptions, policy: McpPolicyOptions = POLICY): Server {
  const auth = fetchTollgate(options)
  const mcp = fetchMcp(auth, policy)
  return createServer(
    fetchListener(
      mcp(async (request, user, operation) => {
        // The original request is still readable by the transport.
        const text = request.method === 'POST' ? await request.text() : ''
        return Response.json({
          mcp: { method: operation.method, name: operation.name, operations: operation.operations },
          body: operation.body ?? null,
          text,
          subject: user?.subject,
        })
      }),
    ),
  ).listen(0)
}

function koaApp(options: GateOptions, policy: McpPolicyOptions = POLICY): Server {
  const auth = koaTollgate(options)
  const app = new Koa<McpState>()
  app.use(koaMcp(auth, policy))
  app.use((ctx) => {
    ctx.body = {
      mcp: ctx.state.mcp,
      body: (ctx.request as { body?: unknown }).body ?? null,
      subject: ctx.state.auth?.subject,
    }
  })
  return app.listen(0)
}

function honoApp(options: GateOptions, policy: McpPolicyOptions = POLICY): Server {
  const auth = honoTollgate(options)
  const app = new Hono<McpEnv>()
  app.all('/mcp', honoMcp(auth, policy), async (c) => {
    const { method, name, operations, body } = c.get('mcp')
    // The original request is still readable by the transport.
    const text = c.req.method === 'POST' ? await c.req.text() : ''
    return c.json({
      mcp: { method, name, operations },
      body: body ?? null,
      text,
      subject: c.get('auth')?.subject,
    })
  })
  return createServer(fetchListener((request) => app.fetch(request))).listen(0)
}

const APPS: ReadonlyArray<[string, (options: GateOptions, events?: GateEvent[]) => Server]> = [
  ['express (express.json before)', (options, events) => expressApp(options, true, events)],
  ['express (body read by the gate)', (options, events) => expressApp(options, false, events)],
  ['fetch', (options) => fetchApp(options)],
  ['koa (body read by the gate)', (options) => koaApp(options)],
  ['hono', (options) => honoApp(options)],
]

describe.each(APPS)('mcpGate on %s', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp({ ...base, tenant: { claim: 'tenant' } })
  })
  afterAll(() => {
    app.close()
  })
  const token = (scope: string, tenant = 'acme') => issuer.mint({ scope, tenant, sub: 'alice' })

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
    }
  })

  it('refuses a body that is not JSON with 400 and -32700', async () => {
    const res = await request(app)
      .post('/mcp')
      .set('Authorization', `Bearer ${await token('mcp:use')}`)
      .set('Content-Type', 'application/json')
      .send('{"jsonrpc": "2.0", ')
    expect(res.status).toBe(400)
    // express.json answers a parse error itself before the gate reads the body.
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

describe('mcpGate next to the tenant limit', () => {
  it("joins the tool's RateLimit-Policy items to the tenant's", async () => {
    const app = expressApp(
      {
        ...base,
        tenant: { claim: 'tenant' },
        rateLimit: { windows: [{ points: 100, durationSeconds: 1 }] },
      },
      true,
    )
    try {
      const res = await request(app)
        .post('/mcp')
        .set('Authorization', `Bearer ${await issuer.mint({ scope: 'mcp:use', tenant: 'acme' })}`)
        .send(call('render'))
      expect(res.status).toBe(200)
      expect(res.headers['ratelimit-policy']).toBe('"default";q=100;w=1, "tool.render";q=2;w=60')
    } finally {
      app.close()
    }
  })

  it("reports a tool's 429 as a rejected event, as the gate's refusals", async () => {
    const events: GateEvent[] = []
    const app = expressApp({ ...base, tenant: { claim: 'tenant' } }, true, events)
    try {
      const bearer = await issuer.mint({ scope: 'mcp:use', tenant: 'acme' })
      for (let sent = 0; sent < 3; sent++) {
        await request(app)
          .post('/mcp')
          .set('Authorization', `Bearer ${bearer}`)
          .send(call('render'))
      }
      expect(events.filter((event) => event.type === 'rejected')).toEqual([
        expect.objectContaining({ code: 'ERR_RATE_LIMITED', status: 429 }),
      ])
    } finally {
      app.close()
    }
  })

  it('refuses a body larger than maxBodyBytes with 413 when the gate reads it', async () => {
    const auth = expressTollgate(base)
    const app = express()
    app.all('/mcp', expressMcp(auth, { maxBodyBytes: 1024 }), (_req, res) => {
      res.end()
    })
    const server = app.listen(0)
    try {
      const res = await request(server)
        .post('/mcp')
        .set('Authorization', `Bearer ${await issuer.mint({ scope: 'mcp:use' })}`)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ ...call('a'), pad: 'x'.repeat(2000) }))
      expect(res.status).toBe(413)
      expect(res.body.error.code).toBe(-32600)
    } finally {
      server.close()
    }
  })
})

describe('windows per (tenant, tool) on a shared Redis', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('hold one exact count for the fleet: an Express and a Fetch gateway admit 4 of 12 calls together', async () => {
    const shared = async (): Promise<McpPolicyOptions> => ({
      ...POLICY,
      tools: { render: { rateLimit: [{ points: 4, durationSeconds: 60 }] } },
      rateLimit: { store: { redis: await redis.client() } },
    })
    const options = { ...base, tenant: { claim: 'tenant' } }
    const one = expressApp(options, true, undefined, await shared())
    const two = fetchApp(options, await shared())
    try {
      const bearer = await issuer.mint({ scope: 'mcp:use', tenant: 'wayne' })
      const statuses = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          request(index % 2 === 0 ? one : two)
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
      one.close()
      two.close()
    }
  })
})

describe("mcpGate with errorHandling: 'framework'", () => {
  it('passes a header mismatch to next(err) as a typed error the application renders with renderMcpError', async () => {
    const auth = expressTollgate({ ...base, errorHandling: 'framework' })
    const app = express()
    const seen: unknown[] = []
    app.all('/mcp', express.json(), expressMcp(auth, POLICY), (_req, res) => {
      res.end()
    })
    app.use(
      (
        error: unknown,
        _req: express.Request,
        res: express.Response,
        _next: express.NextFunction,
      ) => {
        seen.push(error)
        const { status, headers, body } = renderMcpError(error)
        res.status(status).set(headers).send(body)
      },
    )
    const server = app.listen(0)
    try {
      const res = await request(server)
        .post('/mcp')
        .set('Authorization', `Bearer ${await issuer.mint({ scope: 'mcp:use mcp:search' })}`)
        .set(modern('search'))
        .send(call('render', 3))
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32020 } })
      expect(seen).toEqual([
        expect.objectContaining({
          code: 'ERR_MCP_REQUEST',
          reason: 'mcp_header_mismatch',
          jsonRpcCode: -32020,
          status: 400,
        }),
      ])
      expect(isTollgateError(seen[0])).toBe(true)
    } finally {
      server.close()
    }
  })
})
