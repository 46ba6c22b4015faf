/**
 * Sign-in through both adapters against the real provider: the flow, and every way a callback,
 * a cookie or a stored session can be forged, replayed or swapped, refused the same way by each.
 */
import express from 'express'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signIn as expressSignIn } from '../../adapters/express/index.js'
import type { SignInEvent } from '../../src/signin/index.js'
import { createKeyRing } from '../../src/signin/key-ring.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  ALL_SIGNIN_APPS,
  APP_ORIGIN,
  cookieHeader,
  cookiesOf,
  SIGNIN_APPS,
  signInClient,
  signInOptions,
  signInWith,
  startSignIn,
  startSignInProvider,
  testKeys,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider()
})
afterAll(async () => {
  await provider.close()
})

describe.each(ALL_SIGNIN_APPS)('%s sign-in', (_name, createApp) => {
  it('signs a user in through the provider and returns them to the page they asked for', async () => {
    const app = createApp(signInOptions(provider))
    const { callback, cookie } = await signInWith(app, provider, 'alice')
    expect(callback.status).toBe(302)
    expect(callback.headers['location']).toBe('/me')
    const me = await request(app).get('/me').set('Cookie', cookie)
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ subject: 'alice', claims: { email: 'alice@example.com' } })
  })

  it('redirects to the authorization endpoint with PKCE S256, state, nonce and the spec scopes', async () => {
    const { login, location, cookies } = await startSignIn(createApp(signInOptions(provider)))
    expect(login.status).toBe(302)
    const target = new URL(location)
    expect(`${target.origin}${target.pathname}`).toBe(
      `${provider.issuer()}/protocol/openid-connect/auth`,
    )
    const query = target.searchParams
    expect(query.get('response_type')).toBe('code')
    expect(query.get('client_id')).toBe('office-web')
    expect(query.get('redirect_uri')).toBe(`${APP_ORIGIN}/auth/callback`)
    expect(query.get('scope')).toBe('email openid profile')
    expect(query.get('code_challenge_method')).toBe('S256')
    expect(query.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(query.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/)
    expect(query.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/)
    expect(query.getAll('resource')).toEqual(['urn:platform:gateway', 'urn:platform:office'])
    const transaction = (login.headers['set-cookie'] as unknown as string[])[0] ?? ''
    expect(transaction).toMatch(/^__Host-tollgate\.sid\.tx=/)
    expect(transaction).toContain('; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=600')
    // The transaction is sealed: the browser never sees the verifier, the nonce or the state.
    const sealed = [...cookies.values()][0] ?? ''
    expect(sealed).not.toContain(query.get('state'))
  })

  it('sets an HttpOnly, Secure, SameSite=Lax __Host- session cookie that carries no token', async () => {
    const { callback } = await signInWith(createApp(signInOptions(provider)), provider)
    const line = (callback.headers['set-cookie'] as unknown as string[]).find((cookie) =>
      cookie.startsWith('__Host-tollgate.sid='),
    )
    expect(line).toMatch(
      /^__Host-tollgate\.sid=[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=28800$/,
    )
  })

  it('gives a handler the user’s token for each product, each with its audience', async () => {
    const app = createApp(signInOptions(provider))
    const { cookie } = await signInWith(app, provider, 'bob')
    const office = await request(app).get('/token/office').set('Cookie', cookie)
    const gateway = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(office.body).toMatchObject({ aud: 'office', sub: 'bob' })
    expect(gateway.body).toMatchObject({ aud: 'gateway', sub: 'bob' })
  })

  it('completes sign-ins started in two tabs, in either order', async () => {
    const app = createApp(signInOptions(provider))
    const first = await startSignIn(app, '/first')
    // The second tab's login arrives with the first tab's transaction cookie, as a browser sends it.
    const second = await request(app)
      .get('/auth/login?returnTo=%2Fsecond')
      .set('Cookie', `__Host-tollgate.sid.tx=${[...first.cookies.values()][0]}`)
    const both = cookiesOf(second).get('__Host-tollgate.sid.tx') as string
    const backSecond = await provider.followAuthorization(
      second.headers['location'] as string,
      `${APP_ORIGIN}/auth/callback`,
    )
    const backFirst = await provider.followAuthorization(
      first.location,
      `${APP_ORIGIN}/auth/callback`,
    )
    const doneSecond = await request(app)
      .get(`${backSecond.pathname}${backSecond.search}`)
      .set('Cookie', `__Host-tollgate.sid.tx=${both}`)
    expect(doneSecond.status).toBe(302)
    expect(doneSecond.headers['location']).toBe('/second')
    const remaining = cookiesOf(doneSecond).get('__Host-tollgate.sid.tx') as string
    expect(remaining).not.toBe('')
    const doneFirst = await request(app)
      .get(`${backFirst.pathname}${backFirst.search}`)
      .set('Cookie', `__Host-tollgate.sid.tx=${remaining}`)
    expect(doneFirst.status).toBe(302)
    expect(doneFirst.headers['location']).toBe('/first')
    expect(cookiesOf(doneFirst).get('__Host-tollgate.sid.tx')).toBe('')
  })

  it('redirects a page request without a session to the login route, keeping the path', async () => {
    const res = await request(createApp(signInOptions(provider)))
      .get('/me?tab=2')
      .set('Accept', 'text/html')
    expect(res.status).toBe(302)
    expect(res.headers['location']).toBe('/auth/login?returnTo=%2Fme%3Ftab%3D2')
  })

  it('answers 401 login_required to an API request without a session', async () => {
    const res = await request(createApp(signInOptions(provider))).get('/me')
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ error: 'login_required', error_description: 'sign-in required' })
  })

  it('signs out: ends the session, clears the cookie and redirects to the provider’s end-session endpoint', async () => {
    const app = createApp(signInOptions(provider))
    const { cookie } = await signInWith(app, provider)
    const out = await request(app).post('/auth/logout').set('Cookie', cookie)
    expect(out.status).toBe(303)
    const target = new URL(out.headers['location'] as string)
    expect(`${target.origin}${target.pathname}`).toBe(
      `${provider.issuer()}/protocol/openid-connect/logout`,
    )
    expect(target.searchParams.get('post_logout_redirect_uri')).toBe(`${APP_ORIGIN}/`)
    expect(target.searchParams.get('id_token_hint')).toMatch(/^ey/)
    expect(cookiesOf(out).get('__Host-tollgate.sid')).toBe('')
    const after = await request(app).get('/me').set('Cookie', cookie)
    expect(after.status).toBe(401)
  })

  it.each([
    [
      'an Origin of another site',
      { Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' },
    ],
    ['an Origin of null', { Origin: 'null' }],
    ['an Origin of a sibling subdomain', { Origin: 'http://other.127.0.0.1:4999' }],
    ['Sec-Fetch-Site: cross-site without Origin', { 'Sec-Fetch-Site': 'cross-site' }],
  ])('refuses a cross-site logout form POST (%s), keeping the session', async (_case, headers) => {
    const app = createApp(signInOptions(provider))
    const { cookie } = await signInWith(app, provider)
    const out = await request(app)
      .post('/auth/logout')
      .set('Cookie', cookie)
      .set(headers)
      .type('form')
      .send('')
    expect(out.status).toBe(400)
    expect(out.headers['set-cookie']).toBeUndefined()
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
  })

  it('signs out on a same-origin logout form POST (Origin: baseUrl, Sec-Fetch-Site: same-origin)', async () => {
    const app = createApp(signInOptions(provider))
    const { cookie } = await signInWith(app, provider)
    const out = await request(app)
      .post('/auth/logout')
      .set('Cookie', cookie)
      .set({ Origin: APP_ORIGIN, 'Sec-Fetch-Site': 'same-origin' })
      .type('form')
      .send('')
    expect(out.status).toBe(303)
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: false,
    })
  })

  /** A sign-in in a browser that already holds `cookie` (its own session, or one planted in it). */
  async function signInHolding(app: ReturnType<typeof createApp>, cookie: string, user: string) {
    const started = await startSignIn(app)
    const back = await provider.followAuthorization(
      started.location,
      `${APP_ORIGIN}/auth/callback`,
      user,
    )
    const res = await request(app)
      .get(`${back.pathname}${back.search}`)
      .set('Cookie', `${cookieHeader(started.cookies)}; ${cookie}`)
    expect(res.status).toBe(302)
    return cookiesOf(res).get('__Host-tollgate.sid') as string
  }
  const signedIn = async (app: ReturnType<typeof createApp>, cookie: string) =>
    (await request(app).get('/public').set('Cookie', cookie)).body.signedIn as boolean

  it('ends the browser’s previous session at a new sign-in (session fixation)', async () => {
    const app = createApp(signInOptions(provider))
    const { cookie: first } = await signInWith(app, provider, 'alice')
    const second = await signInHolding(app, first, 'alice')
    expect(`__Host-tollgate.sid=${second}`).not.toBe(first)
    expect(await signedIn(app, first)).toBe(false)
    expect(await signedIn(app, `__Host-tollgate.sid=${second}`)).toBe(true)
  })

  it('does not keep a session cookie an attacker planted before the victim signs in', async () => {
    const app = createApp(signInOptions(provider))
    // The attacker's own session, its cookie planted in the victim's browser.
    const { cookie: planted } = await signInWith(app, provider, 'mallory')
    const attacker = (await request(app).get('/me').set('Cookie', planted)).body.subject as string
    const victim = await signInHolding(app, planted, 'victor')
    expect(victim).toBeTruthy()
    expect(`__Host-tollgate.sid=${victim}`).not.toBe(planted)
    // The planted session ended: nothing the attacker holds follows the victim's session.
    expect(await signedIn(app, planted)).toBe(false)
    const me = await request(app).get('/me').set('Cookie', `__Host-tollgate.sid=${victim}`)
    expect(me.status).toBe(200)
    expect(me.body.subject).not.toBe(attacker)
  })

  it('answers a logout by GET with 405 and Allow: POST', async () => {
    const res = await request(createApp(signInOptions(provider))).get('/auth/logout')
    expect(res.status).toBe(405)
    expect(res.headers['allow']).toBe('POST')
  })

  describe('refusals', () => {
    const TRANSACTION_AAD = 'tollgate/signin v1\0transaction'
    const keys = testKeys()
    const ring = createKeyRing(keys)
    const events: SignInEvent[] = []
    const options = () =>
      signInOptions(provider, { keys: () => keys, onEvent: (event) => events.push(event) })
    const refusals = () =>
      events.flatMap((event) =>
        event.type === 'signin_refused' ? [[event.code, event.reason]] : [],
      )

    /** Starts a sign-in and returns the callback URL the provider sends back, with the login's cookies. */
    async function throughProvider(app: ReturnType<typeof createApp>, returnTo = '/me') {
      const started = await startSignIn(app, returnTo)
      const back = await provider.followAuthorization(
        started.location,
        `${APP_ORIGIN}/auth/callback`,
      )
      const transaction = [...started.cookies.values()][0] as string
      return { ...started, back, transaction }
    }
    const callback = (app: ReturnType<typeof createApp>, back: URL, cookie: string) =>
      request(app).get(`${back.pathname}${back.search}`).set('Cookie', cookie)
    const TX = '__Host-tollgate.sid.tx'
    /** Changes one character in the middle: always other bytes, never just padding bits. */
    const flip = (text: string) => {
      const at = Math.floor(text.length / 2)
      return `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`
    }

    it('refuses a callback whose state matches no sign-in this browser started, before the code exchange', async () => {
      events.length = 0
      const app = createApp(options())
      // Two sign-ins under way (tabs): a state matching neither must not fall back to one of them.
      const first = await throughProvider(app)
      const second = await request(app)
        .get('/auth/login?returnTo=%2Fme')
        .set('Cookie', `${TX}=${first.transaction}`)
      const both = cookiesOf(second).get(TX) as string
      provider.resetGrants()
      first.back.searchParams.set('state', 'forged-state-value-000000000')
      const res = await callback(app, first.back, `${TX}=${both}`)
      expect(res.status).toBe(400)
      expect(res.body.error).toBe('invalid_request')
      expect(cookiesOf(res).get('__Host-tollgate.sid')).toBeUndefined()
      // tollgate's own lookup refused ('state_unknown'), not openid-client's check ('state').
      expect(refusals()).toEqual([['ERR_SIGNIN_CALLBACK_INVALID', 'state_unknown']])
      expect(provider.grants).toEqual([])
    })

    it('refuses a callback carrying state twice at openid-client’s check, after tollgate found the sign-in', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      back.searchParams.append('state', 'forged-state-value-000000000')
      const res = await callback(app, back, `${TX}=${transaction}`)
      expect(res.status).toBe(400)
      expect(cookiesOf(res).get('__Host-tollgate.sid')).toBeUndefined()
      expect(refusals()).toEqual([['ERR_SIGNIN_CALLBACK_INVALID', 'state']])
    })

    it('refuses a callback arriving in a browser that never started a sign-in (login CSRF)', async () => {
      events.length = 0
      const app = createApp(options())
      const { back } = await throughProvider(app)
      const res = await callback(app, back, '')
      expect(res.status).toBe(400)
      expect(refusals()).toEqual([['ERR_SIGNIN_CALLBACK_INVALID', 'transaction_missing']])
    })

    it('refuses a code sent to the browser of another sign-in (another transaction cookie)', async () => {
      const app = createApp(options())
      const victim = await throughProvider(app)
      const attacker = await startSignIn(app)
      const res = await callback(app, victim.back, `${TX}=${[...attacker.cookies.values()][0]}`)
      expect(res.status).toBe(400)
    })

    it('refuses a callback whose iss names another issuer (RFC 9207 mix-up)', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      expect(back.searchParams.get('iss')).toBe(provider.issuer())
      back.searchParams.set('iss', 'http://127.0.0.1:1/realms/evil')
      const res = await callback(app, back, `${TX}=${transaction}`)
      expect(res.status).toBe(400)
      expect(refusals()).toEqual([['ERR_SIGNIN_CALLBACK_INVALID', 'issuer']])
    })

    it('refuses an ID token whose nonce is not the one this sign-in sent', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      const [opened] = JSON.parse(ring.decrypt(transaction, TRANSACTION_AAD) as string)
      const forged = ring.encrypt(
        JSON.stringify([{ ...opened, n: 'another-nonce' }]),
        TRANSACTION_AAD,
      )
      const res = await callback(app, back, `${TX}=${forged}`)
      expect(res.status).toBe(400)
      expect(refusals()).toEqual([['ERR_SIGNIN_CALLBACK_INVALID', 'nonce']])
    })

    it('refuses a code exchanged with another PKCE verifier (the provider says invalid_grant)', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      const [opened] = JSON.parse(ring.decrypt(transaction, TRANSACTION_AAD) as string)
      const verifier = 'x'.repeat(43)
      const forged = ring.encrypt(JSON.stringify([{ ...opened, v: verifier }]), TRANSACTION_AAD)
      const res = await callback(app, back, `${TX}=${forged}`)
      expect(res.status).toBe(400)
      expect(res.body.error).toBe('access_denied')
      expect(refusals()).toEqual([['ERR_SIGNIN_REFUSED', 'code_refused']])
    })

    it('refuses a replayed code', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      const first = await callback(app, back, `${TX}=${transaction}`)
      expect(first.status).toBe(302)
      const replay = await callback(app, back, `${TX}=${transaction}`)
      expect(replay.status).toBe(400)
      expect(refusals()).toEqual([['ERR_SIGNIN_REFUSED', 'code_refused']])
    })

    it('refuses a transaction cookie that was altered, setting no session cookie', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      const altered = flip(transaction)
      const res = await callback(app, back, `${TX}=${altered}`)
      expect(res.status).toBe(400)
      expect(cookiesOf(res).get('__Host-tollgate.sid')).toBeUndefined()
      expect(cookiesOf(res).get(TX)).toBe('')
      expect(refusals()).toEqual([['ERR_SIGNIN_CALLBACK_INVALID', 'transaction_missing']])
    })

    it.each([
      ['invalid_client (a wrong client secret)', undefined, 'a-wrong-client-secret'],
      [
        'unauthorized_client',
        {
          status: 400,
          contentType: 'application/json',
          body: JSON.stringify({ error: 'unauthorized_client' }),
        },
        undefined,
      ],
      ['a bare 403', { status: 403 }, undefined],
      ['a bare 401', { status: 401 }, undefined],
    ] as const)(
      'answers a code exchange refused for the client (%s) with 500 and ERR_CLIENT_REFUSED, not as an outage',
      async (_case, answer, clientSecret) => {
        events.length = 0
        const app = createApp(
          signInOptions(provider, {
            keys: () => keys,
            onEvent: (event) => events.push(event),
            ...(clientSecret === undefined ? {} : { clientSecret }),
          }),
        )
        const { back, transaction } = await throughProvider(app)
        provider.interceptTokenEndpoint(answer)
        try {
          const res = await callback(app, back, `${TX}=${transaction}`)
          expect(res.status).toBe(500)
          expect(res.body).toEqual({
            error: 'server_error',
            error_description: 'sign-in is not configured correctly',
          })
          expect(res.headers['retry-after']).toBeUndefined()
          expect(cookiesOf(res).get('__Host-tollgate.sid')).toBeUndefined()
          expect(refusals()).toEqual([['ERR_CLIENT_REFUSED', 'client_refused']])
          // The client id "office-web" has a "-", which client_secret_basic percent-encodes.
          const refused = events.find((event) => event.type === 'signin_refused')
          expect(String((refused?.error as Error | undefined)?.message)).toContain(
            "clientAuth: 'client_secret_post' avoids it",
          )
        } finally {
          provider.interceptTokenEndpoint(undefined)
        }
      },
    )

    it('carries the error the provider sent to the redirect URI (invalid_target) on the refusal event', async () => {
      events.length = 0
      const app = createApp(
        signInOptions(provider, {
          keys: () => keys,
          onEvent: (event) => events.push(event),
          products: { unknown: { resource: 'urn:platform:unknown' } },
        }),
      )
      const { back, transaction } = await throughProvider(app)
      expect(back.searchParams.get('error')).toBe('invalid_target')
      const res = await callback(app, back, `${TX}=${transaction}`)
      expect(res.status).toBe(400)
      expect(cookiesOf(res).get('__Host-tollgate.sid')).toBeUndefined()
      const refused = events.find((event) => event.type === 'signin_refused')
      expect(refused).toMatchObject({
        code: 'ERR_SIGNIN_REFUSED',
        reason: 'provider_error',
        provider: {
          error: 'invalid_target',
          description: back.searchParams.get('error_description'),
        },
      })
    })

    it('carries the provider’s error and description on the refusal event, bounded, without control characters', async () => {
      events.length = 0
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app)
      const sent = new URL(back.href)
      sent.search = ''
      sent.searchParams.set('error', 'invalid_target')
      sent.searchParams.set('error_description', `no such resource\r\n\u001b[31m${'x'.repeat(400)}`)
      sent.searchParams.set('state', back.searchParams.get('state') as string)
      sent.searchParams.set('iss', back.searchParams.get('iss') as string)
      const res = await callback(app, sent, `${TX}=${transaction}`)
      expect(res.status).toBe(400)
      expect(res.body).toEqual({
        error: 'access_denied',
        error_description: 'the identity provider did not complete the sign-in',
      })
      const refused = events.find((event) => event.type === 'signin_refused')
      expect(refused).toMatchObject({
        code: 'ERR_SIGNIN_REFUSED',
        reason: 'provider_error',
        provider: {
          error: 'invalid_target',
          description: `no such resource[31m${'x'.repeat(400)}`.slice(0, 256),
        },
      })
    })

    it.each([
      '//evil.example/path',
      '/\\evil.example',
      '/\\/evil.example',
      'https://evil.example/',
      'http:evil.example',
      '/%2F%2Fevil.example',
      '/%5C%5Cevil.example',
      '/%09/evil.example',
      '/.//evil.example/x',
      '/%2e//evil.example',
      '/a/..//evil.example',
      '/%2e%2e//evil.example',
      '/./%5Cevil.example',
      '/a/..%2F%2Fevil.example',
      '/.%2F%2Fevil.example',
      '/%2e%2F%2Fevil.example',
      '/a/%2e%2e%2F%2Fevil.example',
      'javascript:alert(1)',
      '',
    ])('sends the user to / instead of the returnTo %j', async (returnTo) => {
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app, returnTo)
      const res = await callback(app, back, `${TX}=${transaction}`)
      expect(res.status).toBe(302)
      expect(res.headers['location']).toBe('/')
    })

    it('keeps a same-origin returnTo with its query', async () => {
      const app = createApp(options())
      const { back, transaction } = await throughProvider(app, '/records?filter=open#top')
      const res = await callback(app, back, `${TX}=${transaction}`)
      expect(res.headers['location']).toBe('/records?filter=open#top')
    })

    it.each([
      [
        'its session id altered',
        (id: string, mac: string) => `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}.${mac}`,
      ],
      [
        'its MAC altered',
        (id: string, mac: string) => `${id}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      ],
      ['no MAC', (id: string) => id],
      ['a MAC from a key outside the ring', (id: string) => createKeyRing(testKeys()).sign(id)],
    ])('treats a session cookie with %s as no session, ending nothing', async (_case, tamper) => {
      const app = createApp(options())
      const { cookie } = await signInWith(app, provider)
      const [, value = ''] = cookie.split('=')
      const [id = '', mac = ''] = value.split('.')
      const forged = `__Host-tollgate.sid=${tamper(id, mac)}`
      const res = await request(app).get('/public').set('Cookie', forged)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ signedIn: false })
      // Left as it is: a cookie signed under a key this instance does not hold yet (a rolling
      // deploy) must not be cleared; a forged one is refused all the same.
      expect(res.headers['set-cookie']).toBeUndefined()
      expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
        signedIn: true,
      })
      const me = await request(app).get('/me').set('Cookie', forged).set('Accept', 'text/html')
      expect(me.status).toBe(302)
    })
  })
})

describe('sign-in at a provider that checks each resource against the requested scopes', () => {
  let strict: RunningProvider
  beforeAll(async () => {
    strict = await startProvider({
      clients: [signInClient()],
      resourceScopesRequired: { 'urn:platform:office': 'office:records:read' },
    })
  })
  afterAll(async () => {
    await strict.close()
  })

  it.each(SIGNIN_APPS)(
    '%s: asks for each product’s scope with its resource, and completes the sign-in',
    async (_name, createApp) => {
      const app = createApp(
        signInOptions(strict, {
          products: {
            office: { resource: 'urn:platform:office', scope: 'office:records:read' },
            gateway: { resource: 'urn:platform:gateway' },
          },
        }),
      )
      const { location } = await startSignIn(app)
      expect(new URL(location).searchParams.get('scope')).toBe(
        'email office:records:read openid profile',
      )
      const { callback, cookie } = await signInWith(app, strict, 'carol')
      expect(callback.status).toBe(302)
      expect(callback.headers['location']).toBe('/me')
      const office = await request(app).get('/token/office').set('Cookie', cookie)
      expect(office.body).toMatchObject({ aud: 'office', sub: 'carol' })
    },
  )
})

describe('Express sign-in when the response was already started', () => {
  it('hands the error to next(err), not to an unhandled rejection', async () => {
    const errors: unknown[] = []
    const app = express()
    // An earlier middleware has already sent the headers.
    app.use((_req, res, next) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.write('started')
      next()
    })
    app.use(expressSignIn(signInOptions(provider)))
    app.use(
      (
        error: unknown,
        _req: express.Request,
        res: express.Response,
        _next: express.NextFunction,
      ) => {
        errors.push(error)
        res.end()
      },
    )
    const res = await request(app).get('/auth/login?returnTo=/records')
    expect(res.status).toBe(200)
    expect(errors).toHaveLength(1)
    expect((errors[0] as { code?: string }).code).toBe('ERR_HTTP_HEADERS_SENT')
  })
})
