/**
 * Sign-in through `tollgate/koa`, `tollgate/fastify`, `tollgate/hono` and `tollgate/fetch` answers
 * exactly as through Express: status, the set of fields, the fields sign-in sets and the body, byte
 * for byte, for the flow and its refusals (the redirects included: no type and no body on any);
 * and what only the Fetch and Hono adapters have (a body the application read first, a handler's
 * immutable response).
 */
import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'

import { Hono } from 'hono'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as fastifyAdapter from '../../adapters/fastify/index.js'
import * as fetchAdapter from '../../adapters/fetch/index.js'
import * as honoAdapter from '../../adapters/hono/index.js'
import type { SignInEvent } from '../../src/signin/index.js'
import { fetchListener } from '../helpers/fetch-server.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import {
  ALL_SIGNIN_APPS,
  APP_ORIGIN,
  cookiesOf,
  SIGNIN_APPS,
  SIGNIN_CLIENT,
  signInOptions,
  signInWith,
  startSignIn,
  startSignInProvider,
  testKeys,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider({ backchannel: true })
})
afterAll(async () => {
  await provider.close()
})

const TX = '__Host-tollgate.sid.tx'
const SESSION = '__Host-tollgate.sid'
/** The fields sign-in sets or a refusal carries; the framework's own (Date, X-Powered-By) aside. */
const FIELDS = [
  'allow',
  'cache-control',
  'content-length',
  'content-type',
  'location',
  'set-cookie',
  'www-authenticate',
] as const
/** Fields the server or framework adds to every answer, whoever built it. */
const FRAMEWORK_FIELDS = new Set(['connection', 'date', 'keep-alive', 'x-powered-by'])
/** Values drawn at random per request: the state, nonce and PKCE challenge, the sealed cookies. */
const RANDOM_PARAMETERS = ['state', 'nonce', 'code_challenge']

/** An answer with its random parts masked, so that two adapters' answers can be compared. */
function answerOf(res: request.Response) {
  const fields: Record<string, unknown> = {}
  for (const name of FIELDS) {
    let value = res.headers[name] as string | string[] | undefined
    if (value === undefined) continue
    if (name === 'set-cookie') {
      value = (value as string[]).map((line) => line.replace(/^([^=]+)=[^;]+/, '$1=<sealed>'))
    }
    if (name === 'location' && typeof value === 'string' && value.startsWith('http')) {
      const url = new URL(value)
      for (const parameter of RANDOM_PARAMETERS) {
        if (url.searchParams.has(parameter)) url.searchParams.set(parameter, '<random>')
      }
      value = url.href
    }
    fields[name] = value
  }
  // The set of names too: a field outside FIELDS (a Content-Type on a redirect, Transfer-Encoding
  // instead of a length) makes two answers differ as surely as a different value.
  const names = Object.keys(res.headers)
    .filter((name) => !FRAMEWORK_FIELDS.has(name))
    .sort()
  return { status: res.status, names, fields, body: res.text }
}

/** Every request of the flow and its refusals, as a browser, a script or an attacker sends them. */
async function answersOf(app: Server): Promise<Array<[string, ReturnType<typeof answerOf>]>> {
  const answers: Array<[string, ReturnType<typeof answerOf>]> = []
  const record = (label: string, res: request.Response) => answers.push([label, answerOf(res)])
  const { login, cookies } = await startSignIn(app, '/records?page=2')
  record('login', login)
  const transaction = cookies.get(TX) as string
  record('login by HEAD', await request(app).head('/auth/login'))
  record('login by POST', await request(app).post('/auth/login'))
  record(
    'callback with an unknown state',
    await request(app)
      .get('/auth/callback?code=c&state=unknown')
      .set('Cookie', `${TX}=${transaction}`),
  )
  record(
    'callback with a tampered transaction cookie',
    await request(app)
      .get('/auth/callback?code=c&state=s')
      .set('Cookie', `${TX}=${transaction.slice(0, -4)}AAAA`),
  )
  record('callback without a transaction', await request(app).get('/auth/callback?code=c&state=s'))
  record('callback by POST', await request(app).post('/auth/callback'))
  record('logout by GET', await request(app).get('/auth/logout'))
  record(
    'cross-site logout',
    await request(app).post('/auth/logout').set('Origin', 'https://evil.example'),
  )
  record('logout without a session', await request(app).post('/auth/logout'))
  record('API request without a session', await request(app).get('/me'))
  record(
    'page request without a session',
    await request(app).get('/me?tab=1').set('Accept', 'text/html'),
  )
  record('back-channel logout by GET', await request(app).get('/auth/backchannel-logout'))
  record(
    'back-channel logout without a logout token',
    await request(app)
      .post('/auth/backchannel-logout')
      .type('form')
      .send('logout_token=a&logout_token=b'),
  )
  const { callback, cookie } = await signInWith(app, provider, 'dana')
  record('callback', callback)
  const logout = await request(app).post('/auth/logout').set('Cookie', cookie)
  // The end-session redirect carries the ID token (id_token_hint): not comparable across runs.
  answers.push([
    'logout',
    { ...answerOf(logout), fields: { ...answerOf(logout).fields, location: '<end-session>' } },
  ])
  record(
    'page request with the session that ended',
    await request(app).get('/me').set('Cookie', cookie).set('Accept', 'text/html'),
  )
  return answers
}

/** The adapters compared with Express (the first of the harness's apps). */
const NEW_APPS = ALL_SIGNIN_APPS.filter(([name]) => /^(koa|fastify|hono|fetch)/.test(name))

describe('sign-in through Koa, Fastify, Hono and Fetch', () => {
  it('answers the sign-in routes and their refusals byte for byte as Express does', async () => {
    const keys = testKeys()
    const options = () => signInOptions(provider, { keys: () => keys })
    const compared = [ALL_SIGNIN_APPS[0] as (typeof ALL_SIGNIN_APPS)[number], ...NEW_APPS]
    const all = await Promise.all(
      compared.map(async ([name, createApp]) => {
        const app = createApp(options())
        try {
          return [name, await answersOf(app)] as const
        } finally {
          app.close()
        }
      }),
    )
    const [first, ...others] = all
    const express = first?.[1] ?? []
    expect(first?.[0]).toBe('express')
    // Sanity: the cases are what their labels say.
    const byLabel = new Map(express)
    expect(byLabel.get('login')?.status).toBe(302)
    expect(byLabel.get('callback')?.status).toBe(302)
    expect(byLabel.get('callback with an unknown state')?.status).toBe(400)
    expect(byLabel.get('page request with the session that ended')?.fields['set-cookie']).toEqual([
      `${SESSION}=; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT`,
    ])
    expect(others.map(([name]) => name)).toEqual(NEW_APPS.map(([name]) => name))
    for (const [name, answers] of others) {
      expect(answers.map(([label]) => label)).toEqual(express.map(([label]) => label))
      for (const [index, [label, answer]] of answers.entries()) {
        expect({ name, label, ...answer }).toEqual({ name, ...express[index]?.[1], label })
      }
    }
  })
})

describe.each(SIGNIN_APPS)('%s sign-in', (_name, createApp) => {
  it('clears the cookie of a session that ended on the application’s own error answer too', async () => {
    const app = createApp(signInOptions(provider))
    const { cookie } = await signInWith(app, provider, 'ivan')
    await request(app).post('/auth/logout').set('Cookie', cookie)
    // accessToken() rejects (no session): the app renders the error itself.
    const res = await request(app).get('/token/office').set('Cookie', cookie)
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ code: 'ERR_SIGNIN_REQUIRED' })
    expect(res.headers['set-cookie']).toEqual([
      `${SESSION}=; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT`,
    ])
  })
})

describe.each([
  ['tollgate/fastify', fastifyAdapter.signIn],
  ['tollgate/hono', honoAdapter.signIn],
  ['tollgate/fetch', fetchAdapter.signIn],
] as const)('%s signIn()', (_name, create) => {
  it('refuses invalid options when it is created, naming the option', () => {
    expect(() => create({ ...signInOptions(provider), baseUrl: 'not a url' })).toThrow(/baseUrl/)
  })
})

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

describe('sign-in when the application read the body first', () => {
  const events: SignInEvent[] = []
  const options = () => signInOptions(provider, { onEvent: (event) => events.push(event) })
  const logoutToken = (sub: string) => {
    const now = Math.floor(Date.now() / 1000)
    return provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat: now,
        exp: now + 120,
        jti: randomUUID(),
        sub,
        events: { [LOGOUT_EVENT]: {} },
      },
      { typ: 'logout+jwt' },
    )
  }
  const signedIn = async (app: Server, cookie: string) =>
    (await request(app).get('/public').set('Cookie', cookie)).body.signedIn as boolean

  /** A Fetch app that reads every POST body before sign-in and hands it over. */
  function fetchReadingBodies(): Server {
    const auth = fetchAdapter.signIn(options())
    return createServer(
      fetchListener(async (request) => {
        const body = request.method === 'POST' ? await request.text() : undefined
        const outcome = await auth.handle(request, { body })
        if (outcome.response !== undefined) return outcome.response
        return auth.withHeaders(
          Response.json({ signedIn: outcome.context.user !== undefined }),
          outcome.headers,
        )
      }),
    )
  }

  /** A Hono app whose first middleware parses every POST body (`c.req.parseBody()`). */
  function honoParsingBodies(): Server {
    const app = new Hono()
    app.use(async (c, next) => {
      if (c.req.method === 'POST') await c.req.parseBody()
      await next()
    })
    app.use(honoAdapter.signIn(options()))
    app.get('/public', (c) => c.json({ signedIn: c.var.signin?.user !== undefined }))
    return createServer(fetchListener(app.fetch))
  }

  it.each([
    ['fetch, handle(request, { body })', fetchReadingBodies],
    ['hono, after c.req.parseBody()', honoParsingBodies],
  ])('%s: ends the sessions a back-channel logout token names', async (_name, createApp) => {
    const app = createApp()
    const { cookie } = await signInWith(app, provider, 'frank')
    expect(await signedIn(app, cookie)).toBe(true)
    const res = await request(app)
      .post('/auth/backchannel-logout')
      .type('form')
      .send({ logout_token: await logoutToken('frank') })
    expect(res.status).toBe(200)
    expect(await signedIn(app, cookie)).toBe(false)
  })

  it.each([
    ['fetch, handle(request, { body })', fetchReadingBodies],
    ['hono, after c.req.parseBody()', honoParsingBodies],
  ])('%s: still refuses two logout_tokens in one request', async (_name, createApp) => {
    events.length = 0
    const token = await logoutToken('grace')
    const res = await request(createApp())
      .post('/auth/backchannel-logout')
      .type('form')
      .send(`logout_token=${token}&logout_token=${token}`)
    expect(res.status).toBe(400)
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'logout_token' }),
    )
  })
})

describe('tollgate/fetch withSignIn()', () => {
  it('adds the Set-Cookie clearing an ended session to a handler’s immutable Response.redirect()', async () => {
    const auth = fetchAdapter.signIn(signInOptions(provider))
    const app = createServer(
      fetchListener(auth.withSignIn(() => Response.redirect(`${APP_ORIGIN}/welcome`, 302))),
    )
    const { cookie } = await signInWith(app, provider, 'heidi')
    await request(app).post('/auth/logout').set('Cookie', cookie)
    const res = await request(app).get('/').set('Cookie', cookie)
    expect(res.status).toBe(302)
    expect(res.headers['location']).toBe(`${APP_ORIGIN}/welcome`)
    expect(cookiesOf(res).get(SESSION)).toBe('')
  })

  it('answers requireUser: true without calling the handler when nobody is signed in', async () => {
    const auth = fetchAdapter.signIn(signInOptions(provider))
    let calls = 0
    const app = createServer(
      fetchListener(
        auth.withSignIn(
          () => {
            calls++
            return new Response('secret')
          },
          { requireUser: true },
        ),
      ),
    )
    const page = await request(app).get('/reports?year=2026').set('Accept', 'text/html')
    expect(page.status).toBe(302)
    expect(page.headers['location']).toBe('/auth/login?returnTo=%2Freports%3Fyear%3D2026')
    const api = await request(app).get('/reports')
    expect(api.status).toBe(401)
    expect(api.body).toMatchObject({ error: 'login_required' })
    expect(calls).toBe(0)
  })
})
