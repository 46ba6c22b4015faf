/**
 * Sign-in fixtures: the provider with a sign-in client, the options of `createSignIn()`, Express,
 * Koa, Fastify, Hono and Fetch apps with `signIn()` and a few routes, and `signInWith()`, which
 * walks the whole flow (login route → the provider's authorization endpoint → callback) as a
 * browser would.
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'
import { createServer } from 'node:http'

import express5 from 'express'
import express4 from 'express4'
import fastify5 from 'fastify'
import fastify4 from 'fastify4'
import { Hono } from 'hono'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import request from 'supertest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import {
  createMemorySessionStore,
  type SessionStore,
  type SignInContext,
  type SignInKey,
  type SignInOptions,
} from '../../src/signin/index.js'
import { claimsOf } from './client-fixtures.js'
import { fetchListener } from './fetch-server.js'
import { type RunningProvider, startProvider } from './oidc-provider.js'

export const SIGNIN_CLIENT = 'office-web'
export const SIGNIN_SECRET = 'signin-secret-Vb2xP9kR-must-never-be-printed'
/** The application's origin in tests that drive it with supertest (nothing listens there). */
export const APP_ORIGIN = 'http://127.0.0.1:4999'
export const PRODUCTS = {
  gateway: { resource: 'urn:platform:gateway' },
  office: { resource: 'urn:platform:office' },
} as const

/** The sign-in client at the provider, for an application at `origin`. */
export function signInClient(origin = APP_ORIGIN, backchannel = false) {
  return {
    client_id: SIGNIN_CLIENT,
    client_secret: SIGNIN_SECRET,
    grant_types: ['authorization_code', 'refresh_token'],
    redirect_uris: [`${origin}/auth/callback`],
    post_logout_redirect_uris: [`${origin}/`],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: 'openid profile email offline_access billing:read office:records:read',
    ...(backchannel
      ? {
          backchannel_logout_uri: `${origin}/auth/backchannel-logout`,
          backchannel_logout_session_required: true,
        }
      : {}),
  }
}

export function startSignInProvider(
  options: { accessTokenSeconds?: number; origin?: string; backchannel?: boolean } = {},
): Promise<RunningProvider> {
  return startProvider({
    clients: [signInClient(options.origin, options.backchannel)],
    ...(options.accessTokenSeconds === undefined
      ? {}
      : { accessTokenSeconds: options.accessTokenSeconds }),
    backchannelLogout: options.backchannel ?? false,
  })
}

/** A ring of two keys, newest first. */
export function testKeys(): SignInKey[] {
  return [
    { id: 'k2', secret: randomBytes(32) },
    { id: 'k1', secret: randomBytes(32).toString('base64') },
  ]
}

export function signInOptions(
  provider: RunningProvider,
  overrides: Partial<SignInOptions> = {},
): SignInOptions {
  const keys = testKeys()
  return {
    issuer: provider.issuer(),
    discovery: true,
    clientId: SIGNIN_CLIENT,
    clientSecret: SIGNIN_SECRET,
    baseUrl: APP_ORIGIN,
    keys: () => keys,
    products: PRODUCTS,
    ...overrides,
  }
}

/** What the test routes answer about a token: its claims, never the token itself. */
function describeToken(token: string) {
  const claims = claimsOf(token)
  // `acr` and `auth_time` when the token has them (step-up); JSON leaves out the absent ones.
  return {
    aud: claims['aud'],
    sub: claims['sub'],
    jti: claims['jti'],
    scope: claims['scope'],
    acr: claims['acr'],
    auth_time: claims['auth_time'],
  }
}

export type SignInAppFactory = (options: SignInOptions) => Server

/** Express with `signIn()`: `/me` (guarded), `/public`, `/token/:product`. */
const expressApp =
  (express: typeof express5): SignInAppFactory =>
  (options) => {
    const app = express()
    const auth = expressAdapter.signIn(options)
    app.use(auth)
    app.get('/public', (req, res) => {
      res.json({ signedIn: req.signin?.user !== undefined })
    })
    app.get('/me', auth.requireSignIn(), (req, res) => {
      res.json({ subject: req.signin?.user?.subject, claims: req.signin?.user?.claims })
    })
    app.get('/token/:product', async (req, res, next) => {
      try {
        const token = await (req.signin as SignInContext).accessToken(req.params['product'])
        res.json(describeToken(token))
      } catch (error) {
        next(error)
      }
    })
    // Express's own error rendering: a SignInError carries its status.
    app.use(
      (
        error: { status?: number; code?: string },
        _req: express5.Request,
        res: express5.Response,
        _next: express5.NextFunction,
      ) => {
        res.status(error.status ?? 500).json({ code: error.code ?? 'internal' })
      },
    )
    return createServer(app)
  }

/** Koa with `signIn()`: the same routes. */
const koaApp =
  (Koa: typeof Koa3): SignInAppFactory =>
  (options) => {
    const app = new Koa<koaAdapter.SignInState>()
    app.silent = true
    const auth = koaAdapter.signIn(options)
    app.use(async (ctx, next) => {
      try {
        await next()
      } catch (error) {
        const { status, code } = error as { status?: number; code?: string }
        ctx.status = status ?? 500
        ctx.body = { code: code ?? 'internal' }
      }
    })
    app.use(auth)
    const guard = auth.requireSignIn()
    app.use(async (ctx, next) => {
      if (ctx.path === '/public') {
        ctx.body = { signedIn: ctx.state.signin?.user !== undefined }
        return
      }
      if (ctx.path === '/me') {
        return guard(ctx, async () => {
          ctx.body = {
            subject: ctx.state.signin?.user?.subject,
            claims: ctx.state.signin?.user?.claims,
          }
        })
      }
      const match = /^\/token\/([^/]+)$/.exec(ctx.path)
      if (match !== null) {
        const token = await (ctx.state.signin as SignInContext).accessToken(match[1])
        ctx.body = describeToken(token)
        return
      }
      await next()
    })
    return createServer(app.callback())
  }

/** An error as the test apps render it, whatever the framework: its status and `code`. */
function appError(error: unknown): { status: number; body: { code: string } } {
  const { status, code } = error as { status?: number; code?: string }
  return { status: status ?? 500, body: { code: code ?? 'internal' } }
}

/** Fastify with `signIn()` registered at the root: the same routes. */
const fastifyApp =
  (Fastify: typeof fastify5): SignInAppFactory =>
  (options) => {
    let ready: PromiseLike<unknown> = Promise.resolve()
    const app = Fastify({
      // Requests wait for the plugins to load: the factories here are synchronous.
      serverFactory: (handler) =>
        createServer((req, res) => void ready.then(() => handler(req, res))),
    })
    app.setErrorHandler((error, _request, reply) => {
      const { status, body } = appError(error)
      return reply.code(status).send(body)
    })
    const auth = fastifyAdapter.signIn(options)
    app.register(auth)
    app.get('/public', async (request) => ({ signedIn: request.signin?.user !== undefined }))
    app.get('/me', { preHandler: auth.requireSignIn() }, async (request) => ({
      subject: request.signin?.user?.subject,
      claims: request.signin?.user?.claims,
    }))
    app.get<{ Params: { product: string } }>('/token/:product', async (request) =>
      describeToken(await (request.signin as SignInContext).accessToken(request.params.product)),
    )
    ready = app.ready()
    return app.server
  }

/** Hono with `signIn()`, served as a Fetch host serves it: the same routes. */
const honoSignInApp: SignInAppFactory = (options) => {
  const auth = honoAdapter.signIn(options)
  const app = new Hono()
  app.onError((error, c) => {
    const { status, body } = appError(error)
    return c.json(body, status as 500)
  })
  app.use(auth)
  app.get('/public', (c) => c.json({ signedIn: c.var.signin?.user !== undefined }))
  app.get('/me', auth.requireSignIn(), (c) =>
    c.json({ subject: c.var.signin?.user?.subject, claims: c.var.signin?.user?.claims }),
  )
  app.get('/token/:product', async (c) =>
    c.json(
      describeToken(await (c.var.signin as SignInContext).accessToken(c.req.param('product'))),
    ),
  )
  return createServer(fetchListener(app.fetch))
}

/**
 * A plain Fetch handler: `handle()` in front of the app with `withHeaders()` on its answers (its
 * errors included), and `withSignIn({ requireUser: true })` on the guarded route.
 */
const fetchSignInApp: SignInAppFactory = (options) => {
  const auth = fetchAdapter.signIn(options)
  const json = (value: unknown, status = 200) =>
    new Response(JSON.stringify(value), {
      status,
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
    })
  const me = auth.withSignIn(
    (_request, signin) => json({ subject: signin.user?.subject, claims: signin.user?.claims }),
    { requireUser: true },
  )
  async function route(request: Request, signin: SignInContext): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (pathname === '/public') return json({ signedIn: signin.user !== undefined })
    const match = /^\/token\/([^/]+)$/.exec(pathname)
    if (match !== null) return json(describeToken(await signin.accessToken(match[1])))
    return new Response('Not Found', { status: 404 })
  }
  async function handler(request: Request): Promise<Response> {
    if (new URL(request.url).pathname === '/me') return me(request)
    const outcome = await auth.handle(request)
    if (outcome.response !== undefined) return outcome.response
    const response = await route(request, outcome.context).catch((error: unknown) => {
      const { status, body } = appError(error)
      return json(body, status)
    })
    return auth.withHeaders(response, outcome.headers)
  }
  return createServer(fetchListener(handler))
}

export const expressSignInApp = expressApp(express5)
export const koaSignInApp = koaApp(Koa3)

export const SIGNIN_APPS: ReadonlyArray<[string, SignInAppFactory]> = [
  ['express', expressSignInApp],
  ['koa', koaSignInApp],
  ['fastify', fastifyApp(fastify5)],
  ['hono', honoSignInApp],
  ['fetch', fetchSignInApp],
]

/** Every framework version the adapters support, for the flow and its refusals. */
export const ALL_SIGNIN_APPS: ReadonlyArray<[string, SignInAppFactory]> = [
  ...SIGNIN_APPS,
  ['express 4', expressApp(express4 as unknown as typeof express5)],
  ['koa 2', koaApp(Koa2 as unknown as typeof Koa3)],
  ['fastify 4', fastifyApp(fastify4 as unknown as typeof fastify5)],
]

/** `name=value` pairs of a response's Set-Cookie lines, by name. */
export function cookiesOf(response: { headers: Record<string, unknown> }): Map<string, string> {
  const lines = (response.headers['set-cookie'] as string[] | undefined) ?? []
  const cookies = new Map<string, string>()
  for (const line of lines) {
    const [pair = ''] = line.split(';', 1)
    const equals = pair.indexOf('=')
    cookies.set(pair.slice(0, equals), pair.slice(equals + 1))
  }
  return cookies
}

export function cookieHeader(cookies: Map<string, string>): string {
  return [...cookies]
    .filter(([, value]) => value !== '')
    .map(([name, value]) => `${name}=${value}`)
    .join('; ')
}

/** The start of a sign-in: the login route's redirect and its transaction cookie. */
export async function startSignIn(app: Server | string, returnTo = '/me') {
  const login = await request(app).get(`/auth/login?returnTo=${encodeURIComponent(returnTo)}`)
  return { login, location: login.headers['location'] as string, cookies: cookiesOf(login) }
}

/** A whole sign-in, as a browser: returns the session cookie header and the callback's response. */
export async function signInWith(
  app: Server | string,
  provider: RunningProvider,
  user = 'user-1',
  origin = APP_ORIGIN,
) {
  const started = await startSignIn(app)
  const back = await provider.followAuthorization(started.location, `${origin}/auth/callback`, user)
  const callback = await request(app)
    .get(`${back.pathname}${back.search}`)
    .set('Cookie', cookieHeader(started.cookies))
  const session = cookiesOf(callback)
  session.delete([...session.keys()].find((name) => name.endsWith('.tx')) ?? '')
  return { callback, cookie: cookieHeader(session), back }
}

/** A memory store whose raw values a test can read and overwrite, as an attacker with store access. */
export function inspectableStore(clock?: { now(): number }) {
  const inner = createMemorySessionStore(clock === undefined ? {} : { clock })
  const raw = new Map<string, string>()
  const store: SessionStore = {
    ...inner,
    async create(key, value, ttlMs, indexes, indexTtlMs) {
      raw.set(key, value)
      await inner.create(key, value, ttlMs, indexes, indexTtlMs)
    },
    async replace(key, value, ttlMs, owner) {
      const written = await inner.replace(key, value, ttlMs, owner)
      if (written) raw.set(key, value)
      return written
    },
    async delete(key, indexes) {
      raw.delete(key)
      await inner.delete(key, indexes)
    },
  }
  return {
    store,
    raw,
    /** Replaces a stored value behind tollgate's back. */
    async overwrite(key: string, value: string) {
      raw.set(key, value)
      await inner.delete(key)
      await inner.create(key, value, 3_600_000, [])
    },
  }
}

/** A fetch that records every token the provider hands out, so a test can search for them. */
export function recordingFetch() {
  const tokens = new Set<string>()
  const fetchAndRecord: typeof fetch = async (input, init) => {
    const response = await fetch(input, init)
    if (response.headers.get('content-type')?.includes('application/json')) {
      const body = (await response.clone().json()) as Record<string, unknown>
      for (const name of ['access_token', 'refresh_token', 'id_token']) {
        if (typeof body[name] === 'string') tokens.add(body[name] as string)
      }
    }
    return response
  }
  return { fetch: fetchAndRecord, tokens }
}
