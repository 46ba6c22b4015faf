/**
 * Real Express (4, 5), Koa (2, 3), Fastify (4, 5) and Hono apps and a plain Fetch handler, all
 * protected by tollgate, for supertest. Every app serves the same routes so one behaviour suite
 * can run against all of them. Hono and the Fetch handler run on Node's HTTP server through
 * `fetch-server.ts`, which joins repeated header fields as every Fetch host does.
 */
import type { Server } from 'node:http'
import { createServer } from 'node:http'
import { parse as parseForm } from 'node:querystring'

import express5 from 'express'
import express4 from 'express4'
import fastify5 from 'fastify'
import fastify4 from 'fastify4'
import { type Context, Hono } from 'hono'
import Koa3 from 'koa'
import Koa2 from 'koa2'

import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import type { Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { Admission } from '../../src/types.js'
import { fetchListener } from './fetch-server.js'

/** Where the apps mount the back-channel logout endpoint, when the options have `revocation.callbacks`. */
export const LOGOUT_PATH = '/backchannel-logout'
/** Where the apps mount Keycloak's push not-before endpoint (`{adminUrl}/k_push_not_before`). */
export const PUSH_PATH = '/keycloak/k_push_not_before'

/** A protected app's server, with the gate behind its middleware for operations tests. */
export type ProtectedServer = Server & { readonly gate: Gate }
export type AppFactory = (options: GateOptions) => ProtectedServer

/** The route guarded by two scopes at once. */
export const TWO_SCOPES_PATH = '/two-scopes'

/** What every protected route answers: enough of `auth` to assert on, never the token. */
export function describeAuth(auth: Admission | undefined) {
  if (auth === undefined) return { authenticated: false }
  return {
    authenticated: true,
    subject: auth.subject,
    issuer: auth.issuer,
    clientId: auth.clientId,
    tenant: auth.tenant,
    plan: auth.plan,
    scopes: auth.scopes,
  }
}

/** The route whose handler calls `auth.tokenFor(DELEGATION_TARGET)`: delegation for the user. */
export const DELEGATED_PATH = '/delegated'
/** The product the delegated route asks a token for: Keycloak's audience of the office. */
export const DELEGATION_TARGET = 'office'

/**
 * What the delegated route answers: the actor the gate read from the request's token, and the
 * claims of the token `auth.tokenFor()` obtained (never the token), or the code of its failure.
 */
export async function onBehalf(auth: Admission | undefined) {
  if (auth === undefined) return { authenticated: false }
  const actorAtGate = auth.actor?.subject ?? null
  try {
    const token = await auth.tokenFor(DELEGATION_TARGET)
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())
    return { actorAtGate, subject: claims.sub, audience: claims.aud, act: claims.act }
  } catch (error) {
    return { actorAtGate, refused: (error as { code?: unknown }).code ?? 'unknown' }
  }
}

function expressApp(express: typeof express5): AppFactory {
  return (options) => {
    const app = express()
    // A body parser before the gate, as applications have: lets the gate see a token in the body.
    app.use(express.urlencoded({ extended: false }))
    const auth = expressAdapter.tollgate(options)
    // Provider callbacks come before the gate: the provider sends no bearer token.
    if (options.revocation?.callbacks !== undefined) {
      app.post(LOGOUT_PATH, auth.backchannelLogout())
      app.post(PUSH_PATH, auth.keycloakPushNotBefore())
    }
    app.use(auth)
    app.get('/api/v1/billing/subscriptions', (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/scoped', auth.requireScopes('billing:read'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get(DELEGATED_PATH, async (req, res) => {
      res.json(await onBehalf(req.auth))
    })
    app.get(TWO_SCOPES_PATH, auth.requireScopes('billing:read', 'billing:write'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    // Its own answer, so a test can tell it from an answer of the gate (the `skip` option).
    app.options('/api/v1/billing/subscriptions', (req, res) => {
      res.json({ preflight: true, ...describeAuth(req.auth) })
    })
    app.get('/any-scope', auth.requireAnyScope('billing:read', 'billing:admin'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/realm-role', auth.requireRealmRoles('admin'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/client-role', auth.requireClientRoles('office', 'editor'), (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.post('/api/v1/billing/subscriptions', (req, res) => {
      res.json(describeAuth(req.auth))
    })
    app.get('/throws', () => {
      throw new Error('handler failure')
    })
    // Express's own error handler would answer HTML; this one keeps the framework-mode body JSON.
    app.use(
      (
        error: { status?: number; headers?: Record<string, string>; code?: string },
        _req: express5.Request,
        res: express5.Response,
        _next: express5.NextFunction,
      ) => {
        res
          .status(error.status ?? 500)
          .set(error.headers ?? {})
          .json({ handledBy: 'app', code: error.code ?? 'unknown' })
      },
    )
    return Object.assign(createServer(app), { gate: auth.gate })
  }
}

function formBody(Koa: typeof Koa3) {
  const middleware: Koa3.Middleware = async (ctx, next) => {
    if (ctx.is('application/x-www-form-urlencoded')) {
      const chunks: Buffer[] = []
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
      ;(ctx.request as { body?: unknown }).body = Object.fromEntries(
        new URLSearchParams(Buffer.concat(chunks).toString()),
      )
    }
    await next()
  }
  void Koa
  return middleware
}

function koaApp(Koa: typeof Koa3): AppFactory {
  return (options) => {
    const app = new Koa()
    app.silent = true
    app.use(async (ctx, next) => {
      try {
        await next()
      } catch (caught) {
        const error = caught as { status?: number; headers?: Record<string, string>; code?: string }
        if (error.code === undefined || !String(error.code).startsWith('ERR_')) throw caught
        ctx.status = error.status ?? 500
        ctx.set(error.headers ?? {})
        ctx.body = { handledBy: 'app', code: error.code }
      }
    })
    app.use(formBody(Koa))
    const auth = koaAdapter.tollgate(options)
    if (options.revocation?.callbacks !== undefined) {
      const callbacks: Record<string, Koa3.Middleware> = {
        [LOGOUT_PATH]: auth.backchannelLogout(),
        [PUSH_PATH]: auth.keycloakPushNotBefore(),
      }
      app.use((ctx, next) => {
        const callback = ctx.method === 'POST' ? callbacks[ctx.path] : undefined
        return callback === undefined ? next() : callback(ctx, next)
      })
    }
    app.use(auth)
    const routes: Record<string, Koa3.Middleware<koaAdapter.TollgateState>[]> = {
      'GET /api/v1/billing/subscriptions': [],
      'POST /api/v1/billing/subscriptions': [],
      'GET /scoped': [auth.requireScopes('billing:read')],
      [`GET ${TWO_SCOPES_PATH}`]: [auth.requireScopes('billing:read', 'billing:write')],
      'GET /any-scope': [auth.requireAnyScope('billing:read', 'billing:admin')],
      'GET /realm-role': [auth.requireRealmRoles('admin')],
      'GET /client-role': [auth.requireClientRoles('office', 'editor')],
    }
    app.use(async (ctx: Koa3.ParameterizedContext<koaAdapter.TollgateState>, next) => {
      const guards = routes[`${ctx.method} ${ctx.path}`]
      if (ctx.path === '/throws') throw new Error('handler failure')
      if (ctx.path === DELEGATED_PATH) {
        ctx.body = await onBehalf(ctx.state.auth)
        return
      }
      if (ctx.method === 'OPTIONS' && ctx.path === '/api/v1/billing/subscriptions') {
        ctx.body = { preflight: true, ...describeAuth(ctx.state.auth) }
        return
      }
      if (guards === undefined) return next()
      let index = 0
      const run = async (): Promise<void> => {
        const guard = guards[index++]
        if (guard !== undefined) return guard(ctx, run)
        ctx.body = describeAuth(ctx.state.auth)
      }
      await run()
    })
    return Object.assign(createServer(app.callback()), { gate: auth.gate })
  }
}

const ROUTE_PATH = '/api/v1/billing/subscriptions'
const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8' }

/** The answer of the apps' own error handler (framework-mode refusals, handler failures). */
function appError(caught: unknown) {
  const error = caught as {
    status?: number
    statusCode?: number
    headers?: Record<string, string>
    code?: string
  }
  return {
    status: error.status ?? error.statusCode ?? 500,
    headers: { ...(error.headers ?? {}), ...JSON_TYPE },
    body: JSON.stringify({ handledBy: 'app', code: error.code ?? 'unknown' }),
  }
}

function isForm(contentType: string | null | undefined): boolean {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase() === 'application/x-www-form-urlencoded'
}

function fastifyApp(Fastify: typeof fastify5): AppFactory {
  return (options) => {
    let ready: PromiseLike<unknown> = Promise.resolve()
    const app = Fastify({
      // Requests wait for the plugins to load: the factories here are synchronous.
      serverFactory: (handler) =>
        createServer((req, res) => void ready.then(() => handler(req, res))),
      // Node's own answer to a request its parser refuses, as the other apps give (Fastify's
      // default adds a JSON body): the security suite compares those answers too.
      clientErrorHandler: (error, socket) => {
        const overflow = (error as { code?: string }).code === 'HPE_HEADER_OVERFLOW'
        const status = overflow ? '431 Request Header Fields Too Large' : '400 Bad Request'
        if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`)
      },
    })
    // A form parser, as applications have (@fastify/formbody): lets the gate see a token in the body.
    app.addContentTypeParser(FORM_TYPE, { parseAs: 'string' }, (_req, body, done) => {
      done(null, parseForm(body as string))
    })
    // Other bodies stay unread: the provider callbacks read the stream themselves.
    app.addContentTypeParser('*', (_req, _payload, done) => done(null))
    app.setErrorHandler((caught, _request, reply) => {
      const { status, headers, body } = appError(caught)
      return reply.code(status).headers(headers).send(body)
    })
    const auth = fastifyAdapter.tollgate(options)
    if (options.revocation?.callbacks !== undefined) {
      app.post(LOGOUT_PATH, auth.backchannelLogout())
      app.post(PUSH_PATH, auth.keycloakPushNotBefore())
    }
    app.register(auth)
    const answer = async (request: { auth: Admission | undefined }) => describeAuth(request.auth)
    app.get(ROUTE_PATH, answer)
    app.post(ROUTE_PATH, answer)
    app.options(ROUTE_PATH, async (request) => ({ preflight: true, ...describeAuth(request.auth) }))
    app.get('/scoped', { preHandler: auth.requireScopes('billing:read') }, answer)
    app.get(DELEGATED_PATH, async (request) => onBehalf(request.auth))
    app.get(
      TWO_SCOPES_PATH,
      { preHandler: auth.requireScopes('billing:read', 'billing:write') },
      answer,
    )
    app.get(
      '/any-scope',
      { preHandler: auth.requireAnyScope('billing:read', 'billing:admin') },
      answer,
    )
    app.get('/realm-role', { preHandler: auth.requireRealmRoles('admin') }, answer)
    app.get('/client-role', { preHandler: auth.requireClientRoles('office', 'editor') }, answer)
    app.get('/throws', async () => {
      throw new Error('handler failure')
    })
    ready = app.ready()
    return Object.assign(app.server, { gate: auth.gate })
  }
}

const FORM_TYPE = 'application/x-www-form-urlencoded'

const honoApp: AppFactory = (options) => {
  const auth = honoAdapter.tollgate(options)
  const app = new Hono()
  app.onError((caught, c) => {
    const { status, headers, body } = appError(caught)
    return c.body(body, status as 500, headers)
  })
  const json = (c: Context, value: unknown) => c.body(JSON.stringify(value), 200, JSON_TYPE)
  const answer = (c: Context) => json(c, describeAuth(c.get('auth')))
  if (options.revocation?.callbacks !== undefined) {
    app.post(LOGOUT_PATH, auth.backchannelLogout())
    app.post(PUSH_PATH, auth.keycloakPushNotBefore())
  }
  app.use(auth)
  app.get(ROUTE_PATH, answer)
  app.post(ROUTE_PATH, answer)
  app.options(ROUTE_PATH, (c) => json(c, { preflight: true, ...describeAuth(c.get('auth')) }))
  app.get('/scoped', auth.requireScopes('billing:read'), answer)
  app.get(DELEGATED_PATH, async (c) => json(c, await onBehalf(c.get('auth'))))
  app.get(TWO_SCOPES_PATH, auth.requireScopes('billing:read', 'billing:write'), answer)
  app.get('/any-scope', auth.requireAnyScope('billing:read', 'billing:admin'), answer)
  app.get('/realm-role', auth.requireRealmRoles('admin'), answer)
  app.get('/client-role', auth.requireClientRoles('office', 'editor'), answer)
  app.get('/throws', () => {
    throw new Error('handler failure')
  })
  return Object.assign(createServer(fetchListener(app.fetch)), { gate: auth.gate })
}

/**
 * A plain Fetch handler: `handle()` in front of every route, as the other apps' middleware, then
 * `withAuth()` on the guarded ones, which takes the gate's decision and runs the guards (a refusal
 * before the route is known names no route scope, as the other apps' middleware's; `withAuth()`
 * alone, which hands the route's scopes to the decision, is in `GUARD_APPS`).
 */
const fetchApp: AppFactory = (options) => {
  const auth = fetchAdapter.tollgate(options)
  const json = (value: unknown, headers: Readonly<Record<string, string>> = {}) =>
    new Response(JSON.stringify(value), { status: 200, headers: { ...headers, ...JSON_TYPE } })
  const callbacks: Record<string, (request: Request) => Promise<Response>> =
    options.revocation?.callbacks === undefined
      ? {}
      : { [LOGOUT_PATH]: auth.backchannelLogout(), [PUSH_PATH]: auth.keycloakPushNotBefore() }
  const describe = (_request: Request, user: Admission | undefined) => json(describeAuth(user))
  const guarded: Record<string, (request: Request) => Promise<Response>> = {
    '/scoped': auth.withAuth(describe, { scopes: ['billing:read'] }),
    [TWO_SCOPES_PATH]: auth.withAuth(describe, { scopes: ['billing:read', 'billing:write'] }),
    '/any-scope': auth.withAuth(describe, {
      guards: [auth.requireAnyScope('billing:read', 'billing:admin')],
    }),
    '/realm-role': auth.withAuth(describe, { guards: [auth.requireRealmRoles('admin')] }),
    '/client-role': auth.withAuth(describe, {
      guards: [auth.requireClientRoles('office', 'editor')],
    }),
  }
  async function route(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    const callback = request.method === 'POST' ? callbacks[pathname] : undefined
    if (callback !== undefined) return callback(request)
    // The application parses a form body before the gate, as the Express app's body parser does.
    const form = isForm(request.headers.get('content-type'))
    const body = form ? parseForm(await request.clone().text()) : undefined
    const result = await auth.handle(request, { body })
    if (result.response !== undefined) return result.response
    const guardedRoute = request.method === 'GET' ? guarded[pathname] : undefined
    if (guardedRoute !== undefined) return guardedRoute(request)
    if (pathname === '/throws') throw new Error('handler failure')
    if (pathname === DELEGATED_PATH) return json(await onBehalf(result.auth), result.headers)
    if (pathname !== ROUTE_PATH) return new Response('Not Found', { status: 404 })
    const preflight = request.method === 'OPTIONS' ? { preflight: true } : {}
    return json({ ...preflight, ...describeAuth(result.auth) }, result.headers)
  }
  const handler = (request: Request) =>
    route(request).catch((caught: unknown) => {
      const { status, headers, body } = appError(caught)
      return new Response(body, { status, headers })
    })
  return Object.assign(createServer(fetchListener(handler)), { gate: auth.gate })
}

/**
 * The apps served as a Fetch host serves them: `Headers` join repeated fields with ", ", so one
 * Authorization field holding ", " and credentials cannot be told from two fields (see
 * `src/fetch/request.ts`).
 */
export const FETCH_HOSTS: ReadonlySet<string> = new Set(['hono', 'fetch'])

/** Every framework major tollgate supports, by name. */
export const APPS: ReadonlyArray<readonly [string, AppFactory]> = [
  ['express 5', expressApp(express5)],
  ['express 4', expressApp(express4 as unknown as typeof express5)],
  ['koa 3', koaApp(Koa3)],
  ['koa 2', koaApp(Koa2 as unknown as typeof Koa3)],
  ['fastify 5', fastifyApp(fastify5)],
  ['fastify 4', fastifyApp(fastify4 as unknown as typeof fastify5)],
  ['hono', honoApp],
  ['fetch', fetchApp],
]

/**
 * Routes guarded by the guards of gate A, in every framework, for a guard that protects its route
 * on its own: alone (no middleware of the gate on the way), behind gate A's own middleware, and
 * behind gate B's middleware (and one route with gate A's middleware twice, `gatedAgain`, and no
 * guard). `two` has two guards: `requireScopes('billing:read')`, then
 * `requireAnyScope('billing:write', 'billing:admin')`.
 */
export const GUARD_PATHS = {
  soloScoped: '/solo/scoped',
  soloAnyScope: '/solo/any-scope',
  soloRealmRole: '/solo/realm-role',
  soloClientRole: '/solo/client-role',
  soloTwo: '/solo/two',
  gatedScoped: '/gated/scoped',
  gatedTwo: '/gated/two',
  /** No guard: gate A's middleware in front of the route and again on it. */
  gatedAgain: '/gated/again',
  behindB: '/behind-b/scoped',
  /** Step-up (RFC 9470): `requireAcr(...STEP_UP_ACR)`, alone and behind gate A. */
  soloAcr: '/solo/acr',
  gatedAcr: '/gated/acr',
  /** `requireRecentSignIn(STEP_UP_MAX_AGE)`, alone. */
  soloRecent: '/solo/recent',
  /** `requireScopes('billing:read')`, then `requireAcr(...STEP_UP_ACR)`, then `requireRecentSignIn(STEP_UP_MAX_AGE)`. */
  soloStepUp: '/solo/step-up',
} as const

/** The acr values of the step-up routes, most preferred first. */
export const STEP_UP_ACR = ['urn:example:mfa', 'urn:example:hwk'] as const
/** The `max_age` of the step-up routes, seconds. */
export const STEP_UP_MAX_AGE = 300

/** The second guard of the `two` routes, and the scope its refusal names. */
export const SECOND_GUARD_SCOPES = ['billing:write', 'billing:admin'] as const

/** A server with the routes of {@link GUARD_PATHS}, built from gate A's options and gate B's. */
export type GuardAppFactory = (a: GateOptions, b: GateOptions) => Server

/** The guards of one adapter instance, under the names every adapter gives them. */
interface GuardFactories<Guard> {
  requireScopes(...scopes: string[]): Guard
  requireAnyScope(...scopes: string[]): Guard
  requireRealmRoles(...roles: string[]): Guard
  requireClientRoles(clientId: string, ...roles: string[]): Guard
  requireAcr(...values: string[]): Guard
  requireRecentSignIn(maxAgeSeconds: number): Guard
}

/** Each guarded route's guards, built from gate A's factories, in the order they run. */
function routeGuards<Guard>(a: GuardFactories<Guard>) {
  const scoped = () => [a.requireScopes('billing:read')]
  const two = () => [a.requireScopes('billing:read'), a.requireAnyScope(...SECOND_GUARD_SCOPES)]
  return {
    [GUARD_PATHS.soloScoped]: scoped(),
    [GUARD_PATHS.soloAnyScope]: [a.requireAnyScope('billing:read', 'billing:admin')],
    [GUARD_PATHS.soloRealmRole]: [a.requireRealmRoles('admin')],
    [GUARD_PATHS.soloClientRole]: [a.requireClientRoles('office', 'editor')],
    [GUARD_PATHS.soloTwo]: two(),
    [GUARD_PATHS.gatedScoped]: scoped(),
    [GUARD_PATHS.gatedTwo]: two(),
    [GUARD_PATHS.behindB]: scoped(),
    [GUARD_PATHS.soloAcr]: [a.requireAcr(...STEP_UP_ACR)],
    [GUARD_PATHS.gatedAcr]: [a.requireAcr(...STEP_UP_ACR)],
    [GUARD_PATHS.soloRecent]: [a.requireRecentSignIn(STEP_UP_MAX_AGE)],
    [GUARD_PATHS.soloStepUp]: [
      a.requireScopes('billing:read'),
      a.requireAcr(...STEP_UP_ACR),
      a.requireRecentSignIn(STEP_UP_MAX_AGE),
    ],
  }
}

function expressGuardApp(express: typeof express5): GuardAppFactory {
  return (aOptions, bOptions) => {
    const app = express()
    const a = expressAdapter.tollgate(aOptions)
    app.use('/gated', a)
    app.use('/behind-b', expressAdapter.tollgate(bOptions))
    const answer = (req: express5.Request, res: express5.Response) => {
      res.json(describeAuth(req.auth))
    }
    for (const [path, guards] of Object.entries(routeGuards(a))) app.get(path, ...guards, answer)
    app.get(GUARD_PATHS.gatedAgain, a, answer)
    app.use(
      (
        error: { status?: number; headers?: Record<string, string>; code?: string },
        _req: express5.Request,
        res: express5.Response,
        _next: express5.NextFunction,
      ) => {
        res
          .status(error.status ?? 500)
          .set(error.headers ?? {})
          .json({ handledBy: 'app', code: error.code ?? 'unknown' })
      },
    )
    return createServer(app)
  }
}

function koaGuardApp(Koa: typeof Koa3): GuardAppFactory {
  return (aOptions, bOptions) => {
    const app = new Koa()
    app.silent = true
    app.use(async (ctx, next) => {
      try {
        await next()
      } catch (caught) {
        const { status, headers, body } = appError(caught)
        ctx.status = status
        ctx.set(headers)
        ctx.body = body
      }
    })
    const a = koaAdapter.tollgate(aOptions)
    const b = koaAdapter.tollgate(bOptions)
    // Each route's chain: the gate's middleware where its prefix has one, then the route's guards.
    const routes = new Map<string, Koa3.Middleware<koaAdapter.TollgateState>[]>()
    for (const [path, guards] of Object.entries(routeGuards(a))) {
      const gate = path.startsWith('/gated/') ? [a] : path.startsWith('/behind-b/') ? [b] : []
      routes.set(path, [...gate, ...guards])
    }
    routes.set(GUARD_PATHS.gatedAgain, [a, a])
    app.use(async (ctx: Koa3.ParameterizedContext<koaAdapter.TollgateState>, next) => {
      const chain = ctx.method === 'GET' ? routes.get(ctx.path) : undefined
      if (chain === undefined) return next()
      let index = 0
      const run = async (): Promise<void> => {
        const step = chain[index++]
        if (step !== undefined) return step(ctx, run)
        ctx.body = describeAuth(ctx.state.auth)
      }
      await run()
    })
    return createServer(app.callback())
  }
}

function fastifyGuardApp(Fastify: typeof fastify5): GuardAppFactory {
  return (aOptions, bOptions) => {
    let ready: PromiseLike<unknown> = Promise.resolve()
    const app = Fastify({
      serverFactory: (handler) =>
        createServer((req, res) => void ready.then(() => handler(req, res))),
    })
    app.setErrorHandler((caught, _request, reply) => {
      const { status, headers, body } = appError(caught)
      return reply.code(status).headers(headers).send(body)
    })
    const a = fastifyAdapter.tollgate(aOptions)
    const b = fastifyAdapter.tollgate(bOptions)
    const answer = async (request: { auth: Admission | undefined }) => describeAuth(request.auth)
    const guarded = Object.entries(routeGuards(a))
    const routesUnder = (prefix: string) => guarded.filter(([path]) => path.startsWith(prefix))
    for (const [path, guards] of routesUnder('/solo/'))
      app.get(path, { preHandler: guards }, answer)
    // A gate's plugin guards the context it is registered in: one child context per gate.
    for (const [gate, prefix] of [
      [a, '/gated/'],
      [b, '/behind-b/'],
    ] as const) {
      app.register(async (child) => {
        await child.register(gate)
        for (const [path, guards] of routesUnder(prefix)) {
          child.get(path, { preHandler: guards }, answer)
        }
        // Registered again in a context of its own, under the one it guards already.
        if (gate === a) {
          await child.register(async (grandchild) => {
            await grandchild.register(a)
            grandchild.get(GUARD_PATHS.gatedAgain, answer)
          })
        }
      })
    }
    ready = app.ready()
    return app.server
  }
}

const honoGuardApp: GuardAppFactory = (aOptions, bOptions) => {
  const a = honoAdapter.tollgate(aOptions)
  const app = new Hono()
  app.onError((caught, c) => {
    const { status, headers, body } = appError(caught)
    return c.body(body, status as 500, headers)
  })
  app.use('/gated/*', a)
  app.use('/behind-b/*', honoAdapter.tollgate(bOptions))
  const answer = (c: Context) => c.body(JSON.stringify(describeAuth(c.get('auth'))), 200, JSON_TYPE)
  for (const [path, [first, ...rest]] of Object.entries(routeGuards(a))) {
    // As applications write it: the guards before the handler, in the route.
    if (first === undefined) throw new Error(`no guard on ${path}`)
    app.get(path, first, ...rest, answer)
  }
  app.get(GUARD_PATHS.gatedAgain, a, answer)
  return createServer(fetchListener(app.fetch))
}

/**
 * The Fetch handler: every guarded route is `withAuth()` with its guards; `/gated/*` passes gate A's
 * `handle()` first and `/behind-b/*` gate B's, as an application whose router runs a gate in front
 * of its routes; `/behind-b/*` routes are gate B's `withAuth()` with gate A's guards.
 */
const fetchGuardApp: GuardAppFactory = (aOptions, bOptions) => {
  const a = fetchAdapter.tollgate(aOptions)
  const b = fetchAdapter.tollgate(bOptions)
  const describe = (_request: Request, user: Admission | undefined) =>
    new Response(JSON.stringify(describeAuth(user)), { status: 200, headers: JSON_TYPE })
  const routes = new Map<string, (request: Request) => Promise<Response>>()
  for (const [path, guards] of Object.entries(routeGuards(a))) {
    const route = path.startsWith('/behind-b/') ? b : a
    routes.set(path, route.withAuth(describe, { guards }))
  }
  routes.set(GUARD_PATHS.gatedAgain, a.withAuth(describe))
  async function handler(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url)
    const front = pathname.startsWith('/gated/') ? a : pathname.startsWith('/behind-b/') ? b : null
    if (front !== null) {
      const result = await front.handle(request)
      if (result.response !== undefined) return result.response
    }
    const route = request.method === 'GET' ? routes.get(pathname) : undefined
    return route === undefined ? new Response('Not Found', { status: 404 }) : route(request)
  }
  const listener = (request: Request) =>
    handler(request).catch((caught: unknown) => {
      const { status, headers, body } = appError(caught)
      return new Response(body, { status, headers })
    })
  return createServer(fetchListener(listener))
}

/** Every framework major, serving {@link GUARD_PATHS}. */
export const GUARD_APPS: ReadonlyArray<readonly [string, GuardAppFactory]> = [
  ['express 5', expressGuardApp(express5)],
  ['express 4', expressGuardApp(express4 as unknown as typeof express5)],
  ['koa 3', koaGuardApp(Koa3)],
  ['koa 2', koaGuardApp(Koa2 as unknown as typeof Koa3)],
  ['fastify 5', fastifyGuardApp(fastify5)],
  ['fastify 4', fastifyGuardApp(fastify4 as unknown as typeof fastify5)],
  ['hono', honoGuardApp],
  ['fetch', fetchGuardApp],
]
