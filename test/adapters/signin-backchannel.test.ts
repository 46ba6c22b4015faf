/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0) through both adapters: the real
 * provider POSTs a logout token to a listening application when the user signs out there, and the
 * session ends; forged, replayed or misdirected logout tokens are refused with 400.
 */

import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createMemorySessionStore,
  createRedisSessionStore,
  type SessionStore,
  type SignInEvent,
} from '../../src/signin/index.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import { freePort, type RedisServer, startRedisServer } from '../helpers/redis.js'
import {
  expressSignInApp,
  SIGNIN_APPS,
  SIGNIN_CLIENT,
  signInOptions,
  signInWith,
  startSignInProvider,
} from '../helpers/signin.js'

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

/** Each adapter with the memory store (the default) and with the Redis store. */
const CASES = SIGNIN_APPS.flatMap(([name, createApp]) => [
  [`${name}, memory store,`, createApp, 'memory'] as const,
  [`${name}, Redis store,`, createApp, 'redis'] as const,
])

describe.each(CASES)('%s back-channel logout', (_name, createApp, storeKind) => {
  let provider: RunningProvider
  let server: Server
  let origin: string
  let redis: RedisServer | undefined
  const events: SignInEvent[] = []
  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await startSignInProvider({ origin, backchannel: true })
    let store: SessionStore | undefined
    if (storeKind === 'redis') {
      redis = await startRedisServer()
      store = createRedisSessionStore({ redis: await redis.client() })
    }
    server = createApp(
      signInOptions(provider, {
        baseUrl: origin,
        onEvent: (event) => events.push(event),
        ...(store === undefined ? {} : { store }),
      }),
    )
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await provider.close()
    await redis?.stop()
  })

  const logoutToken = (
    claims: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
  ) => {
    const now = Math.floor(Date.now() / 1000)
    return provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat: now,
        exp: now + 120,
        jti: randomUUID(),
        events: { [LOGOUT_EVENT]: {} },
        ...claims,
      },
      { typ: 'logout+jwt', ...header },
    )
  }
  const post = (token: string) =>
    request(origin).post('/auth/backchannel-logout').type('form').send({ logout_token: token })
  const signedIn = async (cookie: string) =>
    (await request(origin).get('/public').set('Cookie', cookie)).body.signedIn as boolean

  it('ends the session when the user signs out at the provider (the provider’s own logout token)', async () => {
    const { cookie } = await signInWith(origin, provider, 'carol', origin)
    expect(await signedIn(cookie)).toBe(true)
    events.length = 0
    await provider.endProviderSession('carol')
    expect(await signedIn(cookie)).toBe(false)
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'session_ended', reason: 'back_channel_logout' }),
    )
  })

  it('ends every session of the subject for a logout token without sid', async () => {
    const first = await signInWith(origin, provider, 'dave', origin)
    const second = await signInWith(origin, provider, 'dave', origin)
    const other = await signInWith(origin, provider, 'erin', origin)
    const res = await post(await logoutToken({ sub: 'dave' }))
    expect(res.status).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(await signedIn(first.cookie)).toBe(false)
    expect(await signedIn(second.cookie)).toBe(false)
    expect(await signedIn(other.cookie)).toBe(true)
  })

  it('refuses a replayed logout token (same jti)', async () => {
    const token = await logoutToken({ sub: 'nobody' })
    expect((await post(token)).status).toBe(200)
    const replay = await post(token)
    expect(replay.status).toBe(400)
    expect(replay.body).toEqual({
      error: 'invalid_request',
      error_description: 'invalid logout token',
    })
  })

  it.each([
    ['a nonce (an ID token passing for a logout token)', { sub: 'frank', nonce: 'n' }, {}],
    ['no events claim', { sub: 'frank', events: undefined }, {}],
    ['another audience', { sub: 'frank', aud: 'another-client' }, {}],
    ['neither sid nor sub', {}, {}],
    ['an iat far in the past', { sub: 'frank', iat: Math.floor(Date.now() / 1000) - 3600 }, {}],
    ['another issuer', { sub: 'frank', iss: 'http://127.0.0.1:1/realms/evil' }, {}],
    ['an access token type', { sub: 'frank' }, { typ: 'at+jwt' }],
  ])('refuses a logout token with %s, keeping the session', async (_case, claims, header) => {
    const { cookie } = await signInWith(origin, provider, 'frank', origin)
    const res = await post(await logoutToken(claims, header))
    expect(res.status).toBe(400)
    expect(await signedIn(cookie)).toBe(true)
  })

  it('refuses a logout token whose signature does not verify, keeping the session, and says why on the event', async () => {
    const { cookie } = await signInWith(origin, provider, 'grace', origin)
    const token = await logoutToken({ sub: 'grace' })
    const [header, payload] = token.split('.')
    events.length = 0
    const res = await post(`${header}.${payload}.${'A'.repeat(342)}`)
    expect(res.status).toBe(400)
    expect(await signedIn(cookie)).toBe(true)
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'signin_refused',
        code: 'ERR_LOGOUT_TOKEN_INVALID',
        reason: 'logout_token_signature',
      }),
    )
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'session_ended' }))
  })

  it('refuses a logout token without exp by default (earlier drafts), keeping the session, with reason logout_token_missing_exp', async () => {
    const { cookie } = await signInWith(origin, provider, 'hank', origin)
    events.length = 0
    const res = await post(await logoutToken({ sub: 'hank', exp: undefined }))
    expect(res.status).toBe(400)
    expect(await signedIn(cookie)).toBe(true)
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'logout_token_missing_exp' }),
    )
  })

  it('refuses a request without exactly one logout_token', async () => {
    const res = await request(origin).post('/auth/backchannel-logout').type('form').send('a=b')
    expect(res.status).toBe(400)
  })

  it('answers 405 with Allow: POST to any other method', async () => {
    const res = await request(origin).get('/auth/backchannel-logout')
    expect(res.status).toBe(405)
    expect(res.headers['allow']).toBe('POST')
  })
})

describe('back-channel logout tokens without exp (logoutToken.requireExp: false)', () => {
  let provider: RunningProvider
  beforeAll(async () => {
    provider = await startSignInProvider({ backchannel: true })
  })
  afterAll(async () => {
    await provider.close()
  })

  /** A logout token as providers on earlier drafts send it: iat, jti, events, no exp. */
  const draftToken = (sub: string, iat = Math.floor(Date.now() / 1000)) =>
    provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat,
        jti: randomUUID(),
        sub,
        events: { [LOGOUT_EVENT]: {} },
      },
      { typ: 'logout+jwt' },
    )

  it('ends the session for a recent logout token without exp, once', async () => {
    const events: SignInEvent[] = []
    const app = expressSignInApp(
      signInOptions(provider, {
        logoutToken: { requireExp: false },
        onEvent: (event) => events.push(event),
      }),
    )
    const { cookie } = await signInWith(app, provider, 'ida')
    const token = await draftToken('ida')
    const post = () =>
      request(app).post('/auth/backchannel-logout').type('form').send({ logout_token: token })
    expect((await post()).status).toBe(200)
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: false,
    })
    expect((await post()).status).toBe(400)
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'logout_token_replayed' }),
    )
  })

  it('still refuses one without exp whose iat is outside the window', async () => {
    const events: SignInEvent[] = []
    const app = expressSignInApp(
      signInOptions(provider, {
        logoutToken: { requireExp: false },
        onEvent: (event) => events.push(event),
      }),
    )
    const { cookie } = await signInWith(app, provider, 'jan')
    const stale = await draftToken('jan', Math.floor(Date.now() / 1000) - 3600)
    const res = await request(app)
      .post('/auth/backchannel-logout')
      .type('form')
      .send({ logout_token: stale })
    expect(res.status).toBe(400)
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'logout_token_too_old' }),
    )
  })

  it('refuses a logoutToken.requireExp that is not a boolean, at construction', () => {
    expect(() =>
      expressSignInApp(signInOptions(provider, { logoutToken: { requireExp: 'no' } as never })),
    ).toThrow('"logoutToken.requireExp" must be a boolean')
  })
})

describe('back-channel logout by sid, and while the store fails', () => {
  let provider: RunningProvider
  beforeAll(async () => {
    // Back-channel logout on at the provider, so that its ID tokens carry `sid`; nothing listens
    // at the application's origin, so that ending a provider session ends nothing here.
    provider = await startSignInProvider({ backchannel: true })
  })
  afterAll(async () => {
    await provider.close()
  })

  /** A memory store whose `indexed` or `lock` throws while the flag is set (a Redis timeout). */
  function failingStore() {
    const inner = createMemorySessionStore()
    const failing = { indexed: false, lock: false }
    const store: SessionStore = {
      ...inner,
      async indexed(name) {
        if (failing.indexed) throw new Error('session store timed out')
        return inner.indexed(name)
      },
      async lock(key, owner, ttlMs) {
        if (failing.lock) throw new Error('session store timed out')
        return inner.lock(key, owner, ttlMs)
      },
    }
    return { store, failing }
  }

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

  it('answers 503 and accepts the retry of the same token, which ends the session', async () => {
    const { store, failing } = failingStore()
    const app = expressSignInApp(signInOptions(provider, { store }))
    const { cookie } = await signInWith(app, provider, 'gina')
    const token = await logoutToken('gina')
    const post = () =>
      request(app).post('/auth/backchannel-logout').type('form').send({ logout_token: token })
    failing.indexed = true
    expect((await post()).status).toBe(503)
    failing.indexed = false
    // The provider retries the very same token: not a replay, since nothing ended the first time.
    expect((await post()).status).toBe(200)
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: false,
    })
    // Once it has ended the sessions, the token is spent.
    expect((await post()).status).toBe(400)
  })

  it('ends only the session of the logout token sid, not the other sessions of that user', async () => {
    // The sids the provider put in the ID tokens, one per provider session.
    const sids: string[] = []
    const recordSids: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (response.headers.get('content-type')?.includes('application/json')) {
        const body = (await response.clone().json()) as { id_token?: unknown }
        if (typeof body.id_token === 'string') {
          const payload = JSON.parse(
            Buffer.from(body.id_token.split('.')[1] as string, 'base64url').toString(),
          ) as { sid?: string }
          if (payload.sid !== undefined) sids.push(payload.sid)
        }
      }
      return response
    }
    const app = expressSignInApp(signInOptions(provider, { fetch: recordSids }))
    const first = await signInWith(app, provider, 'ivan')
    // A second provider session for the same user: another sid.
    await provider.endProviderSession('ivan')
    const second = await signInWith(app, provider, 'ivan')
    expect(sids).toHaveLength(2)
    expect(sids[0]).not.toBe(sids[1])
    const now = Math.floor(Date.now() / 1000)
    const token = await provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat: now,
        exp: now + 120,
        jti: randomUUID(),
        sub: 'ivan',
        sid: sids[0],
        events: { [LOGOUT_EVENT]: {} },
      },
      { typ: 'logout+jwt' },
    )
    const res = await request(app)
      .post('/auth/backchannel-logout')
      .type('form')
      .send({ logout_token: token })
    expect(res.status).toBe(200)
    const signedIn = async (cookie: string) =>
      (await request(app).get('/public').set('Cookie', cookie)).body.signedIn as boolean
    expect(await signedIn(first.cookie)).toBe(false)
    expect(await signedIn(second.cookie)).toBe(true)
  })

  it('reports a store failure while claiming the jti as store_unavailable (503)', async () => {
    const { store, failing } = failingStore()
    const events: SignInEvent[] = []
    const app = expressSignInApp(
      signInOptions(provider, { store, onEvent: (event) => events.push(event) }),
    )
    const { cookie } = await signInWith(app, provider, 'hank')
    const token = await logoutToken('hank')
    failing.lock = true
    const res = await request(app)
      .post('/auth/backchannel-logout')
      .type('form')
      .send({ logout_token: token })
    failing.lock = false
    expect(res.status).toBe(503)
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'store_unavailable' }),
    )
    expect(events).not.toContainEqual(expect.objectContaining({ reason: 'keys_unavailable' }))
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
  })
})
