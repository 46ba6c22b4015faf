/**
 * The development provider behind `tollgate/signin` (Express adapter, a listening application):
 * a user signs in without a page (`authorize()`), gets access tokens per product, and a
 * back-channel logout sent from the test ends the session.
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

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
      web: {
        redirectUris: [`${origin}/auth/callback`],
        postLogoutRedirectUris: [`${origin}/`],
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

  it('refuses sendBackchannelLogout() for a client without a back-channel logout URI', async () => {
    await expect(
      provider.sendBackchannelLogout({ clientId: 'orders-job', sub: 'alice' }),
    ).rejects.toThrow('client "orders-job" is not registered with a backchannelLogoutUri')
  })
})
