/** docs/step-up.md: the step-up guards on an API, and a web front that signs the user in again. */
import { expect } from 'vitest'

import { answer, bearer, type ScenarioTable } from '../scenario.js'
import { cookieHeader, cookiesOf, signInAs } from './sign-in-flow.js'

const now = () => Math.floor(Date.now() / 1000)

export const STEP_UP: ScenarioTable = {
  'docs/step-up.md': {
    'The API: `requireAcr` and `requireRecentSignIn`': {
      promises:
        'POST /payments with acr urn:example:mfa 200, with acr 1 or none 401 acr_values; PUT /settings signed in a minute ago 200, an hour ago or without auth_time 401 max_age=300; no token 401 bare',
      async run({ start, world: { kit } }) {
        const api = await start()
        const mint = (claims: Record<string, unknown>) =>
          kit.mint({ aud: 'gateway', ...claims }, { realm: 'sso' })
        const pay = (token: string) => api.fetch('/payments', { method: 'POST', ...bearer(token) })
        const settings = (token: string) =>
          api.fetch('/settings', { method: 'PUT', ...bearer(token) })

        expect(await answer(await pay(await mint({ acr: 'urn:example:mfa' })))).toEqual({
          status: 200,
          body: { paid: true, acr: 'urn:example:mfa' },
        })
        for (const claims of [{ acr: '1' }, {}]) {
          const refused = await pay(await mint(claims))
          expect(refused.headers.get('www-authenticate')).toBe(
            'Bearer realm="api", error="insufficient_user_authentication", error_description="a stronger authentication is required", acr_values="urn:example:mfa urn:example:hwk"',
          )
          expect(await answer(refused)).toEqual({
            status: 401,
            body: {
              error: 'insufficient_user_authentication',
              error_description: 'a stronger authentication is required',
            },
          })
        }
        expect((await settings(await mint({ auth_time: now() - 60 }))).status).toBe(200)
        for (const claims of [{ auth_time: now() - 3600 }, {}]) {
          const refused = await settings(await mint(claims))
          expect(refused.status).toBe(401)
          expect(refused.headers.get('www-authenticate')).toBe(
            'Bearer realm="api", error="insufficient_user_authentication", error_description="a more recent authentication is required", max_age=300',
          )
        }
        const anonymous = await api.fetch('/payments', { method: 'POST' })
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api"')
      },
    },
    'Signing the user in again: `req.signin.stepUpPath()`': {
      promises:
        'after signing in (acr urn:example:pwd) GET /pay 302 to /auth/login?returnTo=%2Fpay&acrValues=urn%3Aexample%3Amfa; that login asks the provider for acr_values; after it GET /pay 200 paid with acr urn:example:mfa; the API without a token 401',
      async run({ start, world }) {
        const provider = await world.devProvider()
        const app = await start({ env: { AUTH_URL: provider.url } })
        expect((await app.fetch('/api/payments', { method: 'POST' })).status).toBe(401)
        const { cookie } = await signInAs(app, provider, 'alice', '/pay')

        const refused = await app.fetch('/pay', { redirect: 'manual', headers: { cookie } })
        expect(refused.status, app.output()).toBe(302)
        const stepUp = refused.headers.get('location') ?? ''
        expect(stepUp).toBe('/auth/login?returnTo=%2Fpay&acrValues=urn%3Aexample%3Amfa')

        const login = await app.fetch(stepUp, { redirect: 'manual', headers: { cookie } })
        expect(login.status).toBe(302)
        const authorization = login.headers.get('location') ?? ''
        expect(new URL(authorization).searchParams.get('acr_values')).toBe('urn:example:mfa')
        const back = await provider.authorize(authorization, { user: 'alice' })
        const callback = await app.fetch(`${back.pathname}${back.search}`, {
          redirect: 'manual',
          headers: { cookie: `${cookie}; ${cookieHeader(cookiesOf(login))}` },
        })
        expect(callback.status, app.output()).toBe(302)
        expect(callback.headers.get('location')).toBe('/pay')
        const session = `__Host-tollgate.sid=${cookiesOf(callback).get('__Host-tollgate.sid')}`
        expect(await answer(await app.fetch('/pay', { headers: { cookie: session } }))).toEqual({
          status: 200,
          body: { paid: true, acr: 'urn:example:mfa' },
        })
      },
    },
  },
}
