/** README.md's quick starts. */
import { expect } from 'vitest'

import { answer, bearer, eventually, type ScenarioTable } from '../scenario.js'
import { DEV_USERS, SECRETS } from '../world.js'
import { databaseOf } from './operating.js'
import { signInAs } from './sign-in-flow.js'

export const README: ScenarioTable = {
  'README.md': {
    'Quick start: a gateway (Express, Keycloak)': {
      promises:
        'ready 200; billing:read token of tenant acme 200 with RateLimit fields; no token 401; no scope 403',
      async run({ start, world }) {
        const gateway = await start()
        const ready = await answer(await gateway.fetch('/ready'))
        expect(ready).toMatchObject({ status: 200, body: { ready: true } })

        const path = '/api/v1/billing/subscriptions'
        const token = await world.kit.mint({ sub: 'alice', scope: 'billing:read', tenant: 'acme' })
        const admitted = await gateway.fetch(path, bearer(token))
        expect(admitted.headers.get('ratelimit-policy')).toMatch(/q=20;w=1/)
        expect(await answer(admitted)).toEqual({
          status: 200,
          body: { tenant: 'acme', user: 'alice' },
        })
        const anonymous = await gateway.fetch(path)
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api"')
        const unscoped = await world.kit.mint({ scope: 'openid', tenant: 'acme' })
        expect((await gateway.fetch(path, bearer(unscoped))).status).toBe(403)
      },
    },

    'Quick start: any other OpenID provider': {
      promises:
        'a token of https://login.example.com/ (found by discovery) with orders:read 200; another issuer 401; no scope 403',
      async run({ start, world }) {
        const api = await start()
        const claims = { aud: 'https://api.example.com', sub: 'alice', azp: 'orders-web' }
        const token = await world.kit.mint({ ...claims, scope: 'orders:read' }, { realm: 'login' })
        expect(await answer(await api.fetch('/orders', bearer(token)))).toEqual({
          status: 200,
          body: { user: 'alice', client: 'orders-web' },
        })
        expect(world.kit.discoveryCount('login')).toBeGreaterThan(0)
        const unscoped = await world.kit.mint(claims, { realm: 'login' })
        expect((await api.fetch('/orders', bearer(unscoped))).status).toBe(403)
        const stranger = await world.kit.mint({ ...claims, scope: 'orders:read' })
        expect((await api.fetch('/orders', bearer(stranger))).status).toBe(401)
      },
    },

    'Quick start: a product backend (Koa, limits in Redis)': {
      promises:
        'an office reader 200 counted in Redis (r=99); no client role 403; a gateway token 401',
      async run({ start, world }) {
        const redisUrl = world.redisUrl()
        const office = await start({ env: { REDIS_URL: redisUrl } })
        const reader = await world.kit.mint({
          aud: 'office',
          sub: 'bob',
          tenant: 'acme',
          resource_access: { office: { roles: ['reader'] } },
        })
        const admitted = await office.fetch('/', bearer(reader))
        expect(admitted.headers.get('ratelimit')).toMatch(/r=99/)
        expect(await answer(admitted)).toEqual({
          status: 200,
          body: { tenant: 'acme', user: 'bob' },
        })
        // Counted in Redis once the client is connected (until then, in memory: the fallback).
        const admin = await world.redis.client({ db: databaseOf(redisUrl) })
        await eventually(
          'a request counted in Redis under office:rl',
          async () => {
            expect((await office.fetch('/', bearer(reader))).status).toBe(200)
            return admin.keys('office:rl:*')
          },
          (keys) => keys.length > 0,
        )

        const noRole = await world.kit.mint({ aud: 'office', sub: 'carol', tenant: 'acme' })
        expect((await office.fetch('/', bearer(noRole))).status).toBe(403)
        const gatewayToken = await world.kit.mint({ aud: 'gateway', tenant: 'acme' })
        expect((await office.fetch('/', bearer(gatewayToken))).status).toBe(401)
      },
    },

    'Quick start: a backend job (`tollgate/client`)': {
      promises:
        'prints 200 and the office answer to a token for the office resource with office:records:read; a wrong secret ends with ERR_CLIENT_REFUSED',
      async run({ start, world }) {
        const provider = await world.devProvider()
        const job = await start({ env: { AUTH_URL: provider.url }, until: 'none' })
        const output = await job.finished()
        expect(output).toContain('200 {')
        expect(output).toContain("aud: 'office'")
        expect(output).toContain("sub: 'billing-sync'")
        expect(output).toContain("scope: 'office:records:read'")

        const refused = await start({
          env: { AUTH_URL: provider.url, BILLING_SYNC_SECRET: 'a-wrong-secret' },
          until: 'none',
        })
        expect(await refused.running.exited).toBe(1)
        expect(refused.output()).toContain('ERR_CLIENT_REFUSED')
        expect(refused.output()).not.toContain(SECRETS.BILLING_SYNC_SECRET)
      },
    },

    'Quick start: sign-in (`tollgate/signin`)': {
      promises:
        'a page without a session 302 to /auth/login; sign-in at the provider; /records 200 with the name and the office answer; an API call without a session 401',
      async run({ start, world }) {
        const provider = await world.devProvider()
        const app = await start({ env: { AUTH_URL: provider.url } })
        const page = await app.fetch('/records', {
          redirect: 'manual',
          headers: { accept: 'text/html' },
        })
        expect(page.status).toBe(302)
        expect(page.headers.get('location')).toBe('/auth/login?returnTo=%2Frecords')
        const api = await answer(await app.fetch('/records'))
        expect(api).toMatchObject({ status: 401, body: { error: 'login_required' } })

        const { cookie, location } = await signInAs(app, provider, 'alice')
        expect(location).toBe('/records')
        const records = await answer(await app.fetch('/records', { headers: { cookie } }))
        expect(records).toMatchObject({
          status: 200,
          body: {
            user: DEV_USERS.alice.name,
            namespaces: { namespaces: ['records'], caller: { aud: 'office', sub: 'alice' } },
          },
        })
      },
    },
  },
}
