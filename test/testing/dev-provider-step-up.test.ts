/**
 * Step-up sign-in (RFC 9470) with `tollgate/signin` against the development provider (oidc-provider
 * with `acrValues`): the login route's `acrValues` / `maxAge` reach the provider as `acr_values` /
 * `max_age`, its tokens carry `acr` and `auth_time`, the callback checks the new ID token's `acr`,
 * and `req.signin.stepUpPath()` builds the route. Without a page (`authorize()`); the browser
 * test runs the whole loop with an API.
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/events.js'
import { stepUpPath } from '../../src/signin/step-up.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { freePort } from '../helpers/redis.js'
import { cookieHeader, cookiesOf, expressSignInApp } from '../helpers/signin.js'
import { ORDERS, USERS, WEB } from './dev-provider-fixtures.js'

const PASSWORD = 'urn:example:pwd'
const MFA = 'urn:example:mfa'

describe('step-up sign-in with the development provider', () => {
  let provider: DevProvider
  let server: Server
  let origin: string
  const events: SignInEvent[] = []
  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
      clients: [{ ...WEB, redirectUris: [`${origin}/auth/callback`], scopes: ['orders:read'] }],
      acrValues: [PASSWORD, MFA],
    })
    server = expressSignInApp({
      issuer: provider.issuer,
      discovery: true,
      clientId: WEB.clientId,
      clientSecret: WEB.clientSecret,
      baseUrl: origin,
      keys: [{ id: 'k1', secret: randomBytes(32) }],
      scope: 'openid profile orders:read',
      products: { orders: { resource: ORDERS } },
      onEvent: (event) => events.push(event),
    })
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  })
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await provider?.close()
  })

  /** The login route with `query` → the provider (no page) → the callback's answer. */
  async function signIn(query: string) {
    const login = await request(origin).get(`/auth/login?${query}`)
    expect(login.status).toBe(302)
    const authorization = new URL(login.headers['location'] as string)
    const back = await provider.authorize(authorization.href, { user: 'alice' })
    const callback = await request(origin)
      .get(`${back.pathname}${back.search}`)
      .set('Cookie', cookieHeader(cookiesOf(login)))
    const session = cookiesOf(callback)
    session.delete([...session.keys()].find((name) => name.endsWith('.tx')) ?? '')
    return { authorization, callback, cookie: cookieHeader(session) }
  }

  it('a plain sign-in asks for no acr and gets the weakest; tokens carry acr and auth_time', async () => {
    const { authorization, callback, cookie } = await signIn('returnTo=%2Fme')
    expect(authorization.searchParams.has('acr_values')).toBe(false)
    expect(authorization.searchParams.has('max_age')).toBe(false)
    expect(callback.status).toBe(302)
    const token = (await request(origin).get('/token/orders').set('Cookie', cookie)).body
    expect(token).toMatchObject({ aud: 'orders', sub: 'alice', acr: PASSWORD })
    expect(Math.abs((token.auth_time as number) - Date.now() / 1000)).toBeLessThan(60)
  })

  it('acrValues and maxAge reach the provider; the new tokens carry the acr asked for', async () => {
    const { authorization, callback, cookie } = await signIn(
      `returnTo=%2Fpay&acrValues=${encodeURIComponent(`${MFA} urn:example:hwk`)}&maxAge=0`,
    )
    expect(authorization.searchParams.get('acr_values')).toBe(`${MFA} urn:example:hwk`)
    expect(authorization.searchParams.get('max_age')).toBe('0')
    expect(callback.status).toBe(302)
    expect(callback.headers['location']).toBe('/pay')
    const token = (await request(origin).get('/token/orders').set('Cookie', cookie)).body
    expect(token).toMatchObject({ acr: MFA })
  })

  it('the callback refuses an ID token whose acr is not one asked for (the provider cannot do it)', async () => {
    events.length = 0
    const { callback } = await signIn('returnTo=%2Fpay&acrValues=urn%3Aexample%3Ahwk')
    expect(callback.status).toBe(400)
    expect(events).toContainEqual(
      expect.objectContaining({ code: 'ERR_SIGNIN_REFUSED', reason: 'acr' }),
    )
    expect(cookiesOf(callback).has('__Host-tollgate.sid')).toBe(false)
  })

  it.each(['acrValues=', 'acrValues=a%22b', 'maxAge=-1', 'maxAge=1.5', 'maxAge=ten'])(
    'the login route refuses %s: 400 before any redirect',
    async (query) => {
      events.length = 0
      const login = await request(origin).get(`/auth/login?returnTo=%2F&${query}`)
      expect(login.status).toBe(400)
      expect(login.headers['location']).toBeUndefined()
      expect(events).toContainEqual(
        expect.objectContaining({ code: 'ERR_SIGNIN_BAD_REQUEST', reason: 'step_up_request' }),
      )
    },
  )
})

describe('stepUpPath', () => {
  const loginPath = (returnTo?: string) =>
    `/auth/login?returnTo=${encodeURIComponent(returnTo ?? '/')}`

  it('adds acrValues and maxAge to the login path', () => {
    expect(stepUpPath(loginPath, { acrValues: [MFA, 'b'], maxAge: 0, returnTo: '/pay?x=1' })).toBe(
      `/auth/login?returnTo=%2Fpay%3Fx%3D1&acrValues=${encodeURIComponent(`${MFA} b`)}&maxAge=0`,
    )
    expect(stepUpPath(loginPath, { maxAge: 300 })).toBe('/auth/login?returnTo=%2F&maxAge=300')
  })

  it.each([{ acrValues: 'urn:a' }, { acrValues: ['a b'] }, { maxAge: -1 }, { maxAge: 1.5 }])(
    'refuses %j with a TypeError naming the option',
    (options) => {
      expect(() => stepUpPath(loginPath, options as never)).toThrow(
        /^stepUpPath\(\): "(acrValues|maxAge)" must be/,
      )
    },
  )
})

describe('the development provider with acrValues', () => {
  it('publishes acr_values_supported and refuses a malformed acr value at creation', async () => {
    const provider = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: {} },
      clients: [],
      acrValues: [PASSWORD, MFA],
    })
    try {
      const discovery = (await (
        await fetch(`${provider.issuer}/.well-known/openid-configuration`)
      ).json()) as Record<string, unknown>
      expect(discovery['acr_values_supported']).toEqual([PASSWORD, MFA])
    } finally {
      await provider.close()
    }
    await expect(
      createDevProvider({
        users: USERS,
        resources: { [ORDERS]: {} },
        clients: [],
        acrValues: ['a b'],
      }),
    ).rejects.toThrow(/acrValues\[0\]" must be an acr value/)
  })
})
