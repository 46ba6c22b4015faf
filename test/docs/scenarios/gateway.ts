/** docs/gateway.md and docs/reference/gateway.md. */
import { createDpopKey } from 'tollgate/testing'
import { expect } from 'vitest'

import { answer, bearer, eventually, type ScenarioTable } from '../scenario.js'
import { databaseOf } from './operating.js'

const BILLING = '/api/v1/billing/subscriptions'

export const GATEWAY: ScenarioTable = {
  'docs/gateway.md': {
    'Framework-neutral core': {
      promises:
        "a gateway token 200; no token 401 with the bare challenge; a forged token 401 invalid_token: renderError's status, headers and body",
      async run({ start, world: { kit } }) {
        const server = await start()
        const token = await kit.mint({ sub: 'alice' })
        expect(await answer(await server.fetch('/', bearer(token)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        const anonymous = await server.fetch('/')
        expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api"')
        expect(await answer(anonymous)).toEqual({
          status: 401,
          body: { error: 'unauthorized', error_description: 'bearer token required' },
        })
        const [head, body] = token.split('.')
        const forged = await server.fetch('/', bearer(`${head}.${body}.${'A'.repeat(342)}`))
        expect(forged.headers.get('www-authenticate')).toContain('error="invalid_token"')
        expect(await answer(forged)).toMatchObject({
          status: 401,
          body: { error: 'invalid_token' },
        })
      },
    },

    'Tenants and rate limits': {
      promises:
        'acme on the free plan (two windows) and globex on pro 200 with their RateLimit-Policy; a POST costs 5 points; no tenant 401; a malformed tenant 401',
      async run({ start, world }) {
        const { kit } = world
        const redisUrl = world.redisUrl()
        const gateway = await start({ env: { REDIS_URL: redisUrl } })
        const acme = await kit.mint({ tenant: 'acme' })
        const first = await gateway.fetch(BILLING, bearer(acme))
        expect(first.headers.get('ratelimit-policy')).toBe(
          '"free-1s";q=20;w=1, "free-60s";q=600;w=60',
        )
        expect(await answer(first)).toEqual({ status: 200, body: { tenant: 'acme', plan: 'free' } })
        // Counted in Redis once the client is connected (until then, in memory: the guide's fallback).
        const admin = await world.redis.client({ db: databaseOf(redisUrl) })
        const key = 'tollgate:rl:{acme}:free:60'
        const before = Number(
          await eventually(
            'a request counted in Redis',
            async () => {
              await gateway.fetch(BILLING, bearer(acme))
              return admin.get(key)
            },
            (count) => count !== null,
          ),
        )
        const post = await gateway.fetch(BILLING, { method: 'POST', ...bearer(acme) })
        expect(post.status).toBe(200)
        expect(Number(await admin.get(key))).toBe(before + 5)
        expect(post.headers.get('ratelimit')).toContain(`"free-60s";r=${600 - before - 5}`)

        const globex = await kit.mint({ tenant: 'globex' })
        const pro = await gateway.fetch(BILLING, bearer(globex))
        expect(pro.headers.get('ratelimit-policy')).toBe('"pro";q=200;w=1')
        expect(await answer(pro)).toEqual({ status: 200, body: { tenant: 'globex', plan: 'pro' } })

        const noTenant = await kit.mint({})
        expect((await gateway.fetch(BILLING, bearer(noTenant))).status).toBe(401)
        const malformed = await kit.mint({ tenant: '../acme' })
        expect((await gateway.fetch(BILLING, bearer(malformed))).status).toBe(401)
      },
    },
  },

  'docs/reference/gateway.md': {
    'Why was it refused?': {
      promises:
        'a token for another audience 401, and the rejected event logged names reason audience, the token aud, the path and X-Request-Id; a gateway token 200 and nothing logged',
      async run({ start, world: { kit } }) {
        const gateway = await start()
        const office = await kit.mint({ aud: 'office' })
        const refused = await gateway.fetch(
          `${BILLING}?page=2`,
          bearer(office, { 'x-request-id': 'req-42' }),
        )
        expect(refused.status).toBe(401)
        const valid = await kit.mint({ sub: 'alice' })
        expect(await answer(await gateway.fetch(BILLING, bearer(valid)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        await eventually('the rejected event logged', gateway.output, (logged) =>
          logged.includes("reason: 'audience'"),
        )
        const logged = gateway.output()
        expect(logged).toContain("type: 'rejected'")
        expect(logged).toContain("aud: 'office'")
        expect(logged).toContain(`path: '${BILLING}'`)
        expect(logged).toContain("requestId: 'req-42'")
        expect(logged).not.toContain("type: 'accepted'")
        expect(logged).not.toContain(office)
      },
    },

    'DPoP: sender-constrained tokens (RFC 9449)': {
      promises:
        'a DPoP-bound token with a proof for https://api.example.com/orders 200, and a bearer token 200; the same proof again, and the bound token sent as Bearer, 401',
      async run({ start, world: { kit } }) {
        const api = await start()
        const key = await createDpopKey()
        const bound = await kit.mint({ aud: 'orders', sub: 'alice' }, { dpop: key })
        const headers = await key.headers(bound, {
          method: 'GET',
          url: 'https://api.example.com/orders',
        })
        expect(await answer(await api.fetch('/orders', { headers }))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        const replayed = await refusedReplay(() => api.fetch('/orders', { headers }))
        expect(replayed.status).toBe(401)
        expect(replayed.headers.get('www-authenticate')).toContain('error="invalid_dpop_proof"')
        expect((await api.fetch('/orders', bearer(bound))).status).toBe(401)
        const plain = await kit.mint({ aud: 'orders', sub: 'bob' })
        expect(await answer(await api.fetch('/orders', bearer(plain)))).toEqual({
          status: 200,
          body: { user: 'bob' },
        })
      },
    },
  },
}

/**
 * The answer to a replayed proof. The guide promises 401; it also promises 503 with `Retry-After`
 * when the replay store does not answer within `storeTimeoutMs` (50 ms in the sample), which a CI
 * machine running five samples at once on two cores has been seen to exceed. Such an answer is
 * still a refusal: the same proof is sent again (at most three times) and must end in 401; a 200,
 * or any other answer, fails at once.
 */
async function refusedReplay(send: () => Promise<Response>): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const response = await send()
    if (response.status !== 503 || attempt === 3) return response
    expect(await answer(response)).toEqual({
      status: 503,
      body: { error: 'temporarily_unavailable', error_description: 'replay cache unavailable' },
    })
    expect(response.headers.get('retry-after')).toBe('1')
  }
}
