/**
 * The development provider behind `tollgate/signin` (Express adapter, a listening application):
 * a user signs in without a page (`authorize()`), gets access tokens per product, signs out
 * through the provider's end-session page with the default post-logout redirect URIs, and a
 * back-channel logout sent from the test ends the session.
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { normalizeDevProviderOptions } from '../../src/testing/dev-options.js'
import type { DevProvider } from '../../src/testing/index.js'
import { freePort } from '../helpers/redis.js'
import { cookieHeader, cookiesOf, expressSignInApp, startSignIn } from '../helpers/signin.js'
import { BILLING, ORDERS, startDevProvider, WEB } from './dev-provider-fixtures.js'

describe('createDevProvider with tollgate/signin', () => {
  let provider: DevProvider
  let server: Server
  let origin: string
  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await startDevProvider({
      // No postLogoutRedirectUris: the default, the redirect URIs' origin with `/`, is
      // sign-in's default post-logout redirect URI.
      web: {
        redirectUris: [`${origin}/auth/callback`],
        backchannelLogoutUri: `${origin}/auth/backchannel-logout`,
      },
    })
    server = expressSignInApp({
      issuer: provider.issuer,
      discovery: true,
      clientId: WEB.clientId,
      clientSecret: WEB.clientSecret,
      baseUrl: origin,
      keys: [{ id: 'k1', secret: randomBytes(32) }],
      scope: 'openid profile email orders:read billing:read',
      products: { orders: { resource: ORDERS }, billing: { resource: BILLING } },
    })
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  })
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await provider?.close()
  })

  /** Login route → the provider (user chosen, no page) → callback; the session cookie header. */
  async function signIn(user: string): Promise<string> {
    const started = await startSignIn(origin)
    const back = await provider.authorize(started.location, { user })
    expect(back.pathname).toBe('/auth/callback')
    const callback = await request(origin)
      .get(`${back.pathname}${back.search}`)
      .set('Cookie', cookieHeader(started.cookies))
    expect(callback.status).toBe(302)
    const session = cookiesOf(callback)
    session.delete([...session.keys()].find((name) => name.endsWith('.tx')) ?? '')
    return cookieHeader(session)
  }
  const signedIn = async (cookie: string) =>
    (await request(origin).get('/public').set('Cookie', cookie)).body.signedIn as boolean

  it('signs a user in: profile claims from the ID token, an access token per product', async () => {
    const cookie = await signIn('alice')
    const me = await request(origin).get('/me').set('Cookie', cookie)
    expect(me.body).toMatchObject({
      subject: 'alice',
      claims: { name: 'Alice Example', email: 'alice@example.com' },
    })
    const orders = await request(origin).get('/token/orders').set('Cookie', cookie)
    expect(orders.body).toMatchObject({ aud: 'orders', sub: 'alice', scope: 'orders:read' })
    const billing = await request(origin).get('/token/billing').set('Cookie', cookie)
    expect(billing.body).toMatchObject({ aud: 'billing', sub: 'alice', scope: 'billing:read' })
  })

  it('ends every session of the user when sendBackchannelLogout() names their sub', async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    expect(await signedIn(alice)).toBe(true)
    expect(await provider.sendBackchannelLogout({ clientId: WEB.clientId, sub: 'alice' })).toBe(200)
    expect(await signedIn(alice)).toBe(false)
    expect(await signedIn(bob)).toBe(true)
  })

  it('signs out by default: the provider asks to confirm, then sends the browser back to {baseUrl}/', async () => {
    const cookie = await signIn('alice')
    const logout = await request(origin)
      .post('/auth/logout')
      .set('Cookie', cookie)
      .set('Origin', origin)
    expect(logout.status).toBe(303)
    const endSession = new URL(logout.headers['location'] as string)
    expect(endSession.href.startsWith(provider.endSessionEndpoint)).toBe(true)
    expect(endSession.searchParams.get('post_logout_redirect_uri')).toBe(`${origin}/`)

    // The provider's confirmation form, not `post_logout_redirect_uri not registered`.
    const jar = new Map<string, string>()
    const keep = (response: Response) => {
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';', 1)
        jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
      }
    }
    const cookies = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
    const page = await fetch(endSession)
    keep(page)
    const html = await page.text()
    // This client holds no provider session cookie: oidc-provider's page submits the form itself.
    expect(page.status, html).toBe(200)
    expect(html).toContain('/protocol/openid-connect/logout/confirm')
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
    const action = /action="([^"]+)"/.exec(html)?.[1] ?? ''
    const confirmed = await fetch(new URL(action, endSession), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookies(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf, logout: 'yes' }),
    })
    await confirmed.body?.cancel()
    expect(confirmed.status).toBe(303)
    expect(confirmed.headers.get('location')).toBe(`${origin}/`)
    expect(await signedIn(cookie)).toBe(false)
  })

  it('defaults a client’s post-logout redirect URIs to the origins of its redirect URIs, with /', () => {
    const { clients } = normalizeDevProviderOptions({
      users: [{ sub: 'alice' }],
      resources: { [ORDERS]: {} },
      clients: [
        {
          clientId: 'web',
          clientSecret: 'dev-secret',
          redirectUris: [
            'http://127.0.0.1:3000/auth/callback',
            'http://127.0.0.1:3000/other/callback',
            'http://localhost:3001/cb?x=1',
          ],
        },
        {
          clientId: 'none',
          clientSecret: 'dev-secret',
          redirectUris: ['http://127.0.0.1:3000/cb'],
          postLogoutRedirectUris: [],
        },
        { clientId: 'job', clientSecret: 'dev-secret' },
      ],
    })
    expect(clients.get('web')?.postLogoutRedirectUris).toEqual([
      'http://127.0.0.1:3000/',
      'http://localhost:3001/',
    ])
    expect(clients.get('none')?.postLogoutRedirectUris).toEqual([])
    expect(clients.get('job')?.postLogoutRedirectUris).toEqual([])
  })

  it('refuses sendBackchannelLogout() for a client without a back-channel logout URI', async () => {
    await expect(
      provider.sendBackchannelLogout({ clientId: 'orders-job', sub: 'alice' }),
    ).rejects.toThrow('client "orders-job" is not registered with a backchannelLogoutUri')
  })
})
