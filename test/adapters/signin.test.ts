/**
 * Sign-in through both adapters against the real provider: the flow, and every way a callback,
 * a cookie or a stored session can be forged, replayed or swapped, refused the same way by each.
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { claimsOf } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  cookieHeader,
  cookiesOf,
  SIGNIN_APPS,
  signInOptions,
  signInWith,
  startSignIn,
  startSignInProvider,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider()
})
afterAll(async () => {
  await provider.close()
})

describe.each(SIGNIN_APPS)('%s sign-in', (_name, createApp) => {
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
    const transaction = (login.headers['set-cookie'] as string[])[0] ?? ''
    expect(transaction).toMatch(/^__Secure-tollgate\.sid\.tx=/)
    expect(transaction).toContain('Path=/auth/callback; HttpOnly; SameSite=Lax; Secure')
    // The transaction is sealed: the browser never sees the verifier, the nonce or the state.
    const sealed = [...cookies.values()][0] ?? ''
    expect(sealed).not.toContain(query.get('state'))
  })

  it('sets an HttpOnly, Secure, SameSite=Lax __Host- session cookie that carries no token', async () => {
    const { callback } = await signInWith(createApp(signInOptions(provider)), provider)
    const line = (callback.headers['set-cookie'] as string[]).find((cookie) =>
      cookie.startsWith('__Host-tollgate.sid='),
    )
    expect(line).toMatch(/^__Host-tollgate\.sid=[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=28800$/)
  })

  it('gives a handler the user’s token for each product, each with its audience', async () => {
    const app = createApp(signInOptions(provider))
    const { cookie } = await signInWith(app, provider, 'bob')
    const office = await request(app).get('/token/office').set('Cookie', cookie)
    const gateway = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(office.body).toMatchObject({ aud: 'office', sub: 'bob' })
    expect(gateway.body).toMatchObject({ aud: 'gateway', sub: 'bob' })
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

  it('refuses a logout by GET (a link on another site cannot sign the user out)', async () => {
    const res = await request(createApp(signInOptions(provider))).get('/auth/logout')
    expect(res.status).toBe(405)
    expect(res.headers['allow']).toBe('POST')
  })
})
