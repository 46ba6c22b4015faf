/**
 * The step-up callback's checks against providers that do not do what was asked, on every
 * sign-in adapter. OpenID Connect Core §3.1.2.1 makes `acr_values` a voluntary wish and
 * `max_age` a request; §3.1.3.7 steps 12 and 13 leave it to the client to check `acr` and
 * `auth_time`; RFC 9470 §4 has the client send them and the API refuse tokens that miss them.
 * So the callback refuses, with no session:
 * - an `acr` that is not one of the asked values as a whole (`phr` for `phrh`, `phrh` for `phr`),
 *   against the development provider signing users in with the acr it has;
 * - an `auth_time` older than `maxAge` plus `clockToleranceSeconds` (default 5 s, not
 *   openid-client's 30 s), against a provider that ignores `max_age`, with a message that says so.
 */
import { randomBytes } from 'node:crypto'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent, SignInOptions } from '../../src/signin/index.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  cookieHeader,
  cookiesOf,
  SIGNIN_APPS,
  type SignInAppFactory,
  signInClient,
  signInOptions,
} from '../helpers/signin.js'
import { ORDERS, USERS, WEB } from '../testing/dev-provider-fixtures.js'

const SESSION_COOKIE = '__Host-tollgate.sid'

/** A development provider whose users sign in with `acrValues[0]` unless asked for another it has. */
async function acrProvider(acrValues: string[]): Promise<DevProvider> {
  return createDevProvider({
    users: USERS,
    resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
    clients: [{ ...WEB, redirectUris: [`${APP_ORIGIN}/auth/callback`], scopes: ['orders:read'] }],
    acrValues,
  })
}

function devSignInOptions(provider: DevProvider, events: SignInEvent[]): SignInOptions {
  return {
    issuer: provider.issuer,
    discovery: true,
    clientId: WEB.clientId,
    clientSecret: WEB.clientSecret,
    baseUrl: APP_ORIGIN,
    keys: [{ id: 'k1', secret: randomBytes(32) }],
    scope: 'openid profile orders:read',
    products: { orders: { resource: ORDERS } },
    onEvent: (event) => events.push(event),
  }
}

describe.each(SIGNIN_APPS)(
  '%s: the step-up callback compares acr as whole values',
  (_name, createApp: SignInAppFactory) => {
    // Signs in with `phr` only, and with `phrh` only: each the other's prefix or extension.
    let phr: DevProvider
    let phrh: DevProvider
    beforeAll(async () => {
      ;[phr, phrh] = await Promise.all([acrProvider(['phr']), acrProvider(['phrh'])])
    })
    afterAll(async () => {
      await Promise.all([phr?.close(), phrh?.close()])
    })

    async function stepUp(provider: DevProvider, acrValues: string) {
      const events: SignInEvent[] = []
      const app = createApp(devSignInOptions(provider, events))
      const login = await request(app).get(
        `/auth/login?returnTo=%2Fpay&acrValues=${encodeURIComponent(acrValues)}`,
      )
      expect(login.status).toBe(302)
      const authorization = new URL(login.headers['location'] as string)
      expect(authorization.searchParams.get('acr_values')).toBe(acrValues)
      const back = await provider.authorize(authorization.href, { user: 'alice' })
      const callback = await request(app)
        .get(`${back.pathname}${back.search}`)
        .set('Cookie', cookieHeader(cookiesOf(login)))
      app.close()
      return { callback, events }
    }

    function expectRefused(result: Awaited<ReturnType<typeof stepUp>>) {
      const { callback, events } = result
      expect(callback.status).toBe(400)
      expect(callback.body).toEqual({
        error: 'access_denied',
        error_description: 'the identity provider did not complete the sign-in',
      })
      expect(cookiesOf(callback).get(SESSION_COOKIE) ?? '').toBe('')
      expect(events).toContainEqual(
        expect.objectContaining({
          type: 'signin_refused',
          code: 'ERR_SIGNIN_REFUSED',
          reason: 'acr',
        }),
      )
      expect(events.some((event) => event.type === 'signed_in')).toBe(false)
    }

    it('asked phrh, signed in with phr (a prefix): refused, no session', async () => {
      expectRefused(await stepUp(phr, 'phrh'))
    })

    it('asked phr, signed in with phrh (an extension): refused, no session', async () => {
      expectRefused(await stepUp(phrh, 'phr'))
    })

    it('asked "phrh x", signed in with phr: none of the values is phr, refused', async () => {
      expectRefused(await stepUp(phr, 'phrh x'))
    })

    it('asked for the acr the provider signs in with, alone or among others: a session opens', async () => {
      for (const [provider, asked] of [
        [phr, 'phr'],
        [phrh, 'x phrh'],
      ] as const) {
        const { callback, events } = await stepUp(provider, asked)
        expect(callback.status).toBe(302)
        expect(callback.headers['location']).toBe('/pay')
        expect(cookiesOf(callback).get(SESSION_COOKIE)).toBeTruthy()
        expect(events).toContainEqual(
          expect.objectContaining({ type: 'signed_in', subject: 'alice' }),
        )
      }
    })
  },
)

/** Signs users in as if they had authenticated 80 s ago, whatever `max_age` asks. */
const LOGIN_AGE_SECONDS = 80
const AUTH_TIME_MESSAGE =
  'the identity provider did not report a sign-in within the max_age asked for (auth_time)'

describe.each(SIGNIN_APPS)(
  '%s: the step-up callback holds max_age to its tolerance',
  (_name, createApp: SignInAppFactory) => {
    let provider: RunningProvider
    beforeAll(async () => {
      provider = await startProvider({
        clients: [signInClient()],
        loginAgeSeconds: LOGIN_AGE_SECONDS,
      })
    })
    afterAll(async () => {
      await provider.close()
    })

    async function stepUp(maxAge: number, overrides: Partial<SignInOptions> = {}) {
      const events: SignInEvent[] = []
      const app = createApp(
        signInOptions(provider, { ...overrides, onEvent: (event) => events.push(event) }),
      )
      const login = await request(app).get(`/auth/login?returnTo=%2Fpay&maxAge=${maxAge}`)
      expect(login.status).toBe(302)
      const back = await provider.followAuthorization(
        login.headers['location'] as string,
        `${APP_ORIGIN}/auth/callback`,
      )
      const callback = await request(app)
        .get(`${back.pathname}${back.search}`)
        .set('Cookie', cookieHeader(cookiesOf(login)))
      app.close()
      return { callback, events }
    }

    // 80 s old against max_age 60: inside openid-client's own 30 s tolerance, outside the default 5 s.
    it('refuses a sign-in older than maxAge by more than the default 5 s, saying auth_time is too old for max_age', async () => {
      const { callback, events } = await stepUp(60)
      expect(callback.status).toBe(400)
      expect(callback.body).toEqual({
        error: 'invalid_request',
        error_description: AUTH_TIME_MESSAGE,
      })
      expect(cookiesOf(callback).get(SESSION_COOKIE) ?? '').toBe('')
      expect(events).toContainEqual(
        expect.objectContaining({
          type: 'signin_refused',
          code: 'ERR_SIGNIN_CALLBACK_INVALID',
          reason: 'auth_time',
        }),
      )
    })

    it('admits it when clockToleranceSeconds allows the difference (max_age 60 + 30 s)', async () => {
      const { callback } = await stepUp(60, { clockToleranceSeconds: 30 })
      expect(callback.status).toBe(302)
      expect(cookiesOf(callback).get(SESSION_COOKIE)).toBeTruthy()
    })

    it('with clockToleranceSeconds 0, max_age is the bound: a sign-in 80 s old fails max_age 75', async () => {
      const refused = await stepUp(75, { clockToleranceSeconds: 0 })
      expect(refused.callback.status).toBe(400)
      expect(refused.callback.body.error_description).toBe(AUTH_TIME_MESSAGE)
      // And max_age well above the sign-in's age passes with no tolerance at all.
      expect((await stepUp(600, { clockToleranceSeconds: 0 })).callback.status).toBe(302)
    })
  },
)

describe('clockToleranceSeconds', () => {
  it.each([-1, 1.5, 301, '5'])('refuses %j at construction, naming the option', (value) => {
    const [, createApp] = SIGNIN_APPS[0] as (typeof SIGNIN_APPS)[number]
    expect(() =>
      createApp({
        issuer: 'https://sso.example.com/realms/acme',
        clientId: 'web',
        clientSecret: 'secret-of-the-web-client',
        baseUrl: 'https://web.example.com',
        keys: [{ id: 'k1', secret: randomBytes(32) }],
        clockToleranceSeconds: value as number,
      }),
    ).toThrow(/"clockToleranceSeconds"/)
  })
})

describe.each(SIGNIN_APPS)(
  '%s: the step-up callback refuses an auth_time in the future',
  (_name, createApp: SignInAppFactory) => {
    // A provider (hostile, or with a clock an hour fast) that reports a sign-in an hour from now:
    // it would pass any max_age for ever.
    let provider: RunningProvider
    beforeAll(async () => {
      provider = await startProvider({ clients: [signInClient()], loginAgeSeconds: -3600 })
    })
    afterAll(async () => {
      await provider.close()
    })

    async function signIn(query: string) {
      const events: SignInEvent[] = []
      const app = createApp(signInOptions(provider, { onEvent: (event) => events.push(event) }))
      const login = await request(app).get(`/auth/login?returnTo=%2Fpay${query}`)
      const back = await provider.followAuthorization(
        login.headers['location'] as string,
        `${APP_ORIGIN}/auth/callback`,
      )
      const callback = await request(app)
        .get(`${back.pathname}${back.search}`)
        .set('Cookie', cookieHeader(cookiesOf(login)))
      return { callback, events }
    }

    it('a step-up (maxAge) whose ID token says the user signs in an hour from now: 400, reason auth_time, no session', async () => {
      const { callback, events } = await signIn('&maxAge=300')
      expect(callback.status).toBe(400)
      expect(callback.body).toEqual({
        error: 'invalid_request',
        error_description: AUTH_TIME_MESSAGE,
      })
      expect(cookiesOf(callback).get(SESSION_COOKIE) ?? '').toBe('')
      expect(events).toContainEqual(
        expect.objectContaining({ code: 'ERR_SIGNIN_CALLBACK_INVALID', reason: 'auth_time' }),
      )
    })

    it('a sign-in that asked no maxAge does not judge auth_time: the session opens', async () => {
      const { callback } = await signIn('')
      expect(callback.status).toBe(302)
    })
  },
)
