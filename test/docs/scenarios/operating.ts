/** docs/operating.md. */
import { expect } from 'vitest'

import { answer, bearer, eventually, type ScenarioTable } from '../scenario.js'

const BILLING = '/api/v1/billing/subscriptions'
const HOSTS_PROVIDES = new URL('../hosts/provides/', import.meta.url).pathname

/** The database index of a `redis://host:port/db` URL. */
export const databaseOf = (url: string) => Number(url.split('/').pop())

export const OPERATING: ScenarioTable = {
  'docs/operating.md': {
    'Operating the gate': [
      {
        promises:
          'Express: /ready 200 with the issuer ready, without a token; any other path without a token 401; /ready 503 while the keys cannot be fetched; SIGTERM ends the program',
        async run({ start, world: { kit } }) {
          const app = await start()
          const ready = await answer(await app.fetch('/ready'))
          expect(ready).toMatchObject({
            status: 200,
            body: { ready: true, issuers: [{ issuer: kit.issuer('acme'), state: 'fresh' }] },
          })
          expect((await app.fetch('/anything')).status).toBe(401)
          app.running.child.kill('SIGTERM')
          expect(await app.running.exited).toBe(0)

          // No provider where AUTH_URL points: a closed port.
          const { freePort } = await import('../../helpers/redis.js')
          const down = await start({ env: { AUTH_URL: `http://127.0.0.1:${await freePort()}` } })
          expect(await answer(await down.fetch('/ready'))).toMatchObject({
            status: 503,
            body: { ready: false, issuers: [{ lastFailure: 'network' }] },
          })
        },
      },
      {
        promises:
          'Koa: /ready 200 without a token; an office token 404 past the gate (no route); no token 401',
        async run({ start, world: { kit } }) {
          const app = await start()
          expect(await answer(await app.fetch('/ready'))).toMatchObject({
            status: 200,
            body: { ready: true },
          })
          const token = await kit.mint({ aud: 'office' })
          expect((await app.fetch('/records', bearer(token))).status).toBe(404)
          expect((await app.fetch('/records')).status).toBe(401)
        },
      },
    ],

    'Redis for the limiter': {
      promises:
        'the client is accepted as the limiter store: 2 admitted then 429, counted in its Redis; its duplicate with commandTimeout refused at creation naming rateLimit.store.redis',
      async run({ start, world }) {
        const redisUrl = world.redisUrl()
        const gate = await start({ host: 'gate-module.ts', env: { REDIS_URL: redisUrl } })
        expect(gate.output()).toMatch(/refused: .*"rateLimit\.store\.redis"/)
        const token = await world.kit.mint({ tenant: 'acme' })
        const admin = await world.redis.client({ db: databaseOf(redisUrl) })
        // The client connects after the gate started: the first requests may fall back to memory.
        await eventually(
          'a request counted in Redis',
          async () => {
            await gate.fetch('/', bearer(token))
            return admin.keys('tollgate:rl:*')
          },
          (keys) => keys.includes('tollgate:rl:{acme}:default:60'),
        )
        const statuses: number[] = []
        for (let i = 0; i < 3; i++) statuses.push((await gate.fetch('/', bearer(token))).status)
        expect(statuses).toContain(429)
        expect(await admin.get('tollgate:rl:{acme}:default:60')).toBe('2')
      },
    },

    Revocation: {
      promises:
        "alice, revoked then unrevoked, 200; the revoked jti and sid 401; a back-channel logout for a session 200, then that session's token 401; a forged logout token 400",
      async run({ start, world: { kit } }) {
        const app = await start()
        const mint = (claims: Record<string, unknown>) => kit.mint(claims, { realm: 'sso' })
        const alice = await mint({ sub: 'alice' })
        expect(await answer(await app.fetch(BILLING, bearer(alice)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        const revokedJti = await mint({ jti: '0b6f3c1e-9d2a-4f51-8a77-2c0d1e5b9f44' })
        expect((await app.fetch(BILLING, bearer(revokedJti))).status).toBe(401)
        // Issued before the sample's revoke() calls, which ran at its start.
        const revokedSid = await mint({
          sid: 'a sign-in session id',
          iat: Math.floor(Date.now() / 1000) - 60,
        })
        expect((await app.fetch(BILLING, bearer(revokedSid))).status).toBe(401)

        const session = await mint({ sub: 'bob', sid: 'bob-session' })
        expect((await app.fetch(BILLING, bearer(session))).status).toBe(200)
        const logout = (token: string) =>
          app.fetch('/backchannel-logout', {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ logout_token: token }).toString(),
          })
        const logoutToken = await kit.mintLogoutToken(
          { sub: 'bob', sid: 'bob-session' },
          { realm: 'sso' },
        )
        const loggedOut = await logout(logoutToken)
        expect(loggedOut.status).toBe(200)
        expect(loggedOut.headers.get('cache-control')).toBe('no-store')
        expect((await app.fetch(BILLING, bearer(session))).status).toBe(401)
        const [head, body] = logoutToken.split('.')
        expect((await logout(`${head}.${body}.${'A'.repeat(342)}`)).status).toBe(400)
      },
    },

    'Revocation without a shared store': {
      promises:
        "the gate it exports, given the application's records (readRevocations): a token of mallory issued before them 401; alice 200",
      async run({ start, world: { kit } }) {
        const gate = await start({
          host: 'gate-module.ts',
          env: { SAMPLE_PROVIDES: `${HOSTS_PROVIDES}read-revocations.ts` },
        })
        const mallory = await kit.mint(
          { sub: 'mallory', iat: Math.floor(Date.now() / 1000) - 60 },
          { realm: 'sso' },
        )
        expect((await gate.fetch('/', bearer(mallory))).status).toBe(401)
        const alice = await kit.mint({ sub: 'alice' }, { realm: 'sso' })
        expect(await answer(await gate.fetch('/', bearer(alice)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
      },
    },

    'Metrics and traces (OpenTelemetry): `tollgate/otel`': {
      promises:
        'a gateway token 200 and no token 401, counted in tollgate_decisions on /metrics, which needs no token',
      async run({ start, world: { kit } }) {
        const app = await start()
        const token = await kit.mint({ sub: 'alice' })
        expect((await app.fetch(BILLING, bearer(token))).status).toBe(200)
        expect((await app.fetch(BILLING)).status).toBe(401)
        const metrics = await app.fetch('/metrics')
        expect(metrics.status).toBe(200)
        const text = await metrics.text()
        expect(text).toMatch(/^tollgate_decisions_total\{[^}]*outcome="accepted"[^}]*\} 1$/m)
        expect(text).toMatch(
          /^tollgate_decisions_total\{[^}]*outcome="rejected"[^}]*reason="credentials_missing"[^}]*\} \d+$/m,
        )
      },
    },
  },
}
