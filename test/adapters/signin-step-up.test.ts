/**
 * Step-up sign-in (RFC 9470) on every sign-in adapter, against oidc-provider: the login route's
 * `acrValues` and `maxAge` become the authorization request's `acr_values` and `max_age`, and the
 * callback refuses what the provider answers when it did not meet them: an ID token whose
 * `auth_time` is older than `max_age` (openid-client's check), or whose `acr` is not one asked for.
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  cookieHeader,
  cookiesOf,
  SIGNIN_APPS,
  signInClient,
  signInOptions,
} from '../helpers/signin.js'

/** Signs users in as if they had authenticated an hour ago, and names no acr. */
let provider: RunningProvider
beforeAll(async () => {
  provider = await startProvider({ clients: [signInClient()], loginAgeSeconds: 3600 })
})
afterAll(async () => {
  await provider.close()
})

describe.each(SIGNIN_APPS)('%s: step-up sign-in', (_name, createApp) => {
  async function signIn(query: string, events: SignInEvent[]) {
    const app = createApp(signInOptions(provider, { onEvent: (event) => events.push(event) }))
    const login = await request(app).get(`/auth/login?returnTo=%2Fpay&${query}`)
    expect(login.status).toBe(302)
    const authorization = new URL(login.headers['location'] as string)
    const back = await provider.followAuthorization(
      authorization.href,
      `${APP_ORIGIN}/auth/callback`,
    )
    const callback = await request(app)
      .get(`${back.pathname}${back.search}`)
      .set('Cookie', cookieHeader(cookiesOf(login)))
    return { authorization, callback }
  }

  it('sends acr_values and max_age; an auth_time older than max_age is refused, no session', async () => {
    const events: SignInEvent[] = []
    const { authorization, callback } = await signIn(
      'maxAge=60&acrValues=urn%3Aa%20urn%3Ab',
      events,
    )
    expect(authorization.searchParams.get('max_age')).toBe('60')
    expect(authorization.searchParams.get('acr_values')).toBe('urn:a urn:b')
    expect(callback.status).toBe(400)
    expect(cookiesOf(callback).get('__Host-tollgate.sid') ?? '').toBe('')
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'signin_refused',
        code: 'ERR_SIGNIN_CALLBACK_INVALID',
        reason: 'auth_time',
      }),
    )
  })

  it('an ID token without the acr asked for is refused: ERR_SIGNIN_REFUSED, reason acr', async () => {
    const events: SignInEvent[] = []
    const { callback } = await signIn('acrValues=urn%3Aexample%3Amfa', events)
    expect(callback.status).toBe(400)
    expect(events).toContainEqual(
      expect.objectContaining({ code: 'ERR_SIGNIN_REFUSED', reason: 'acr' }),
    )
  })

  it('without step-up parameters the same provider signs the user in (the old auth_time is fine)', async () => {
    const events: SignInEvent[] = []
    const { authorization, callback } = await signIn('', events)
    expect(authorization.searchParams.has('max_age')).toBe(false)
    expect(callback.status).toBe(302)
    expect(callback.headers['location']).toBe('/pay')
  })
})
