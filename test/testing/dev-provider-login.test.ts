/**
 * How the development provider's authorization endpoint picks the user: its page (a person
 * clicks), `login_hint` naming a configured user, or `autoLogin`. Driven with plain HTTP and a
 * cookie jar, as a browser without scripts would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { ORDERS, startDevProvider, USERS, WEB } from './dev-provider-fixtures.js'

const REDIRECT_URI = 'http://127.0.0.1:4999/callback'

/** An authorization URL with PKCE (the challenge of a fixed verifier; no exchange follows). */
function authorizationUrl(provider: DevProvider, extra: Record<string, string> = {}): string {
  const url = new URL(provider.authorizationEndpoint)
  url.search = new URLSearchParams({
    client_id: WEB.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'openid profile',
    state: 'state-1',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGmSfWeSqg',
    code_challenge_method: 'S256',
    ...extra,
  }).toString()
  return url.href
}

/** Follows redirects on the provider's origin; the last response (a page, or the way back). */
async function follow(start: string, init: RequestInit = {}, jar = new Map<string, string>()) {
  let next = start
  let request = init
  for (let hop = 0; hop < 10; hop++) {
    const response = await fetch(next, {
      ...request,
      redirect: 'manual',
      headers: {
        ...(request.headers as Record<string, string>),
        cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
      },
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';', 1)
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1))
    }
    const location = response.headers.get('location')
    if (location === null) return { response, url: next, jar }
    await response.body?.cancel()
    const resolved = new URL(location, next)
    if (resolved.origin !== new URL(start).origin) return { response, url: resolved.href, jar }
    next = resolved.href
    request = {}
  }
  throw new Error('too many redirects')
}

describe('createDevProvider sign-in', () => {
  let provider: DevProvider
  beforeAll(async () => {
    provider = await startDevProvider()
  })
  afterAll(() => provider?.close())

  it('shows a page listing every configured user, and signs in the one chosen', async () => {
    const page = await follow(authorizationUrl(provider))
    expect(page.response.status).toBe(200)
    expect(page.response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const html = await page.response.text()
    for (const user of USERS) expect(html).toContain(`value="${user.sub}"`)
    const chosen = await follow(
      page.url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'user=bob',
      },
      page.jar,
    )
    const back = new URL(chosen.url)
    expect(back.origin + back.pathname).toBe(REDIRECT_URI)
    expect(back.searchParams.get('state')).toBe('state-1')
    expect(back.searchParams.get('code')).toMatch(/.+/)
  })

  it('answers the page again, 400, for a user who is not configured', async () => {
    const page = await follow(authorizationUrl(provider))
    await page.response.body?.cancel()
    const refused = await follow(
      page.url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'user=mallory',
      },
      page.jar,
    )
    expect(refused.response.status).toBe(400)
    expect(await refused.response.text()).toContain('value="alice"')
  })

  it('signs in the user a login_hint names, without the page', async () => {
    const back = await follow(authorizationUrl(provider, { login_hint: 'alice' }))
    expect(new URL(back.url).searchParams.get('code')).toMatch(/.+/)
  })

  it('shows the page for a login_hint naming no configured user', async () => {
    const page = await follow(authorizationUrl(provider, { login_hint: 'mallory' }))
    expect(page.response.status).toBe(200)
    await page.response.body?.cancel()
  })

  it('signs the autoLogin user in on every request, without the page', async () => {
    const auto = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { scopes: ['orders:read'] } },
      clients: [{ ...WEB, redirectUris: [REDIRECT_URI] }],
      autoLogin: 'bob',
    })
    try {
      const back = await follow(authorizationUrl(auto))
      expect(new URL(back.url).searchParams.get('code')).toMatch(/.+/)
    } finally {
      await auto.close()
    }
  })
})
