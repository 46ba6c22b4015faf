/**
 * OpenID Connect Front-Channel Logout 1.0 through every adapter: the provider's logout page loads
 * `GET /auth/frontchannel-logout?iss=…&sid=…` in an iframe, and the sessions of that provider
 * session (`sid`, as the real provider put it in the ID token) end; the answer is an uncached
 * page that the provider's origin, and only it, may frame. A request without exactly one `sid`,
 * or with an `iss` that is not this issuer (or two), ends nothing; one without `iss` (Entra's)
 * is taken.
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import { claimsOf } from '../helpers/client-fixtures.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  SIGNIN_APPS,
  signInClient,
  signInOptions,
  signInWith,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  // Registered for front-channel logout with the session required: ID tokens carry `sid`.
  provider = await startProvider({
    clients: [
      {
        ...signInClient(),
        frontchannel_logout_uri: `${APP_ORIGIN}/auth/frontchannel-logout`,
        frontchannel_logout_session_required: true,
      },
    ],
    frontchannelLogout: true,
  })
})
afterAll(async () => {
  await provider.close()
})

describe.each(SIGNIN_APPS)('%s front-channel logout', (_name, createApp) => {
  function setup() {
    const events: SignInEvent[] = []
    const idTokens: string[] = []
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (String(init?.body ?? '').includes('grant_type=authorization_code')) {
        const body = (await response.clone().json()) as { id_token?: string }
        if (body.id_token !== undefined) idTokens.push(body.id_token)
      }
      return response
    }
    const app = createApp(
      signInOptions(provider, { fetch: recording, onEvent: (event) => events.push(event) }),
    )
    /** Signs `user` in; their session cookie and the provider session's `sid`. */
    const signedIn = async (user: string) => {
      const { cookie } = await signInWith(app, provider, user)
      const sid = claimsOf(idTokens.at(-1) as string)['sid'] as string
      return { cookie, sid }
    }
    const ended = () =>
      events.flatMap((event) => (event.type === 'session_ended' ? [event.reason] : []))
    const signedInNow = async (cookie: string) =>
      (await request(app).get('/public').set('Cookie', cookie)).body.signedIn as boolean
    return { app, events, signedIn, ended, signedInNow }
  }

  const logoutUrl = (query: Record<string, string | string[]>) => {
    const search = new URLSearchParams()
    for (const [name, values] of Object.entries(query)) {
      for (const value of [values].flat()) search.append(name, value)
    }
    return `/auth/frontchannel-logout?${search}`
  }

  it('ends the sessions of the provider session the iframe names, and only those', async () => {
    const { app, signedIn, ended, signedInNow } = setup()
    const alice = await signedIn('alice')
    const bob = await signedIn('bob')
    expect(alice.sid).toMatch(/^\S+$/)
    const res = await request(app).get(logoutUrl({ iss: provider.issuer(), sid: alice.sid }))
    expect(res.status).toBe(200)
    expect(ended()).toEqual(['front_channel_logout'])
    expect(await signedInNow(alice.cookie)).toBe(false)
    expect(await signedInNow(bob.cookie)).toBe(true)
  })

  it('ends the sessions of a sid sent without iss, as Microsoft Entra sends it', async () => {
    const { app, signedIn, ended, signedInNow } = setup()
    const alice = await signedIn('alice')
    const res = await request(app).get(logoutUrl({ sid: alice.sid }))
    expect(res.status).toBe(200)
    expect(ended()).toEqual(['front_channel_logout'])
    expect(await signedInNow(alice.cookie)).toBe(false)
  })

  it('answers a page the provider’s origin may frame, never cached', async () => {
    const { app, signedIn } = setup()
    const { sid } = await signedIn('alice')
    const res = await request(app).get(logoutUrl({ iss: provider.issuer(), sid }))
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-cache, no-store')
    expect(res.headers['pragma']).toBe('no-cache')
    expect(res.headers['content-security-policy']).toBe(
      `default-src 'none'; frame-ancestors ${provider.url}`,
    )
    expect(res.headers['x-frame-options']).toBeUndefined()
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.text).toContain('<title>Signed out</title>')
  })

  it('answers 200 for a sid it holds no session of, ending nothing (no oracle)', async () => {
    const { app, signedIn, ended, signedInNow } = setup()
    const { cookie } = await signedIn('alice')
    const res = await request(app).get(logoutUrl({ iss: provider.issuer(), sid: 'unknown-sid' }))
    expect(res.status).toBe(200)
    expect(ended()).toEqual([])
    expect(await signedInNow(cookie)).toBe(true)
  })

  it.each([
    [
      'another issuer',
      (sid: string) => ({ iss: 'https://sso.example.com/realms/acme', sid }),
      'front_channel_issuer',
    ],
    ['no sid', () => ({ iss: provider.issuer() }), 'front_channel_request'],
    [
      'two issuers',
      (sid: string) => ({ iss: [provider.issuer(), provider.issuer()], sid }),
      'front_channel_request',
    ],
    [
      'two sids',
      (sid: string) => ({ iss: provider.issuer(), sid: [sid, 'other'] }),
      'front_channel_request',
    ],
    ['a sid with a space', () => ({ iss: provider.issuer(), sid: 'a b' }), 'front_channel_request'],
  ] as const)('refuses %s with 400, ending nothing', async (_case, query, reason) => {
    const { app, signedIn, ended, signedInNow, events } = setup()
    const { cookie, sid } = await signedIn('alice')
    const res = await request(app).get(logoutUrl(query(sid)))
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      error: 'invalid_request',
      error_description: 'request not supported here',
    })
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', code: 'ERR_SIGNIN_BAD_REQUEST', reason }),
    )
    expect(ended()).toEqual([])
    expect(await signedInNow(cookie)).toBe(true)
  })

  it('answers another method 405 with Allow: GET', async () => {
    const { app, signedIn, ended } = setup()
    const { sid } = await signedIn('alice')
    const res = await request(app).post(logoutUrl({ iss: provider.issuer(), sid }))
    expect(res.status).toBe(405)
    expect(res.headers['allow']).toBe('GET')
    expect(ended()).toEqual([])
  })
})
