/**
 * The limiter's and the key fetcher's bounds through HTTP, on Express and the Fetch adapter: a
 * request cost no window can admit (403 before any store is asked), a limiter whose memory holds
 * `maxTenants` windows (503 for a new tenant, the others still limited), a shared store answering
 * past its window or malformed (one request fails, not the store), and `ready()` fetching only what
 * is not fresh, once for issuers that share a `jwks_uri`.
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { SharedStore } from '../../src/shared-store.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'

const ROUTE = '/api/v1/billing/subscriptions'
const OTHER_ISSUER = 'https://proxy.example/realms/other'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

function limited(rateLimit: NonNullable<GateOptions['rateLimit']>): GateOptions {
  return {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    tenant: { claim: 'tenant' },
    rateLimit,
  }
}

/** A store that counts in a Map, but answers `odd` for tenant acme's counter. */
function storeWithOddAcme(odd: unknown): SharedStore & { acmeCalls: number; calls: number } {
  const counters = new Map<string, { count: number; expiresAt: number }>()
  const store = {
    acmeCalls: 0,
    calls: 0,
    async increment(key: string, amount: number, ttlMs: number) {
      store.calls++
      if (key.includes('{acme}')) {
        store.acmeCalls++
        return odd as { count: number; msBeforeReset: number }
      }
      const now = Date.now()
      let counter = counters.get(key)
      if (counter === undefined || counter.expiresAt <= now) {
        counter = { count: 0, expiresAt: now + ttlMs }
        counters.set(key, counter)
      }
      counter.count += amount
      return { count: counter.count, msBeforeReset: counter.expiresAt - now }
    },
    claimOnce: async () => true,
  }
  return store
}

describe.each(APPS.filter(([name]) => name === 'express 5' || name === 'fetch'))(
  '%s adapter: bounded limits and store answers',
  (_name, createApp) => {
    const servers: ProtectedServer[] = []
    const serve = (options: GateOptions) => {
      const server = createApp(options)
      servers.push(server)
      return server
    }
    afterAll(async () => {
      for (const server of servers) {
        server.close()
        await server.gate.close()
      }
    })
    const get = async (server: ProtectedServer, tenant: string, cost?: string) => {
      const call = request(server)
        .get(ROUTE)
        .set('Authorization', `Bearer ${await issuer.mint({ tenant })}`)
      return cost === undefined ? call : call.set('X-Cost', cost)
    }

    it('answers 403 ERR_COST_EXCEEDS_LIMIT, with the policy and without Retry-After, to a request costing more than the smallest window, counting nothing', async () => {
      const shared = storeWithOddAcme(undefined)
      const app = serve(
        limited({
          windows: [{ points: 10, durationSeconds: 60 }],
          store: { shared },
          cost: (req) => Number(req.headers['x-cost'] ?? 1),
        }),
      )
      const refused = await get(app, 'globex', '9007199254740991')
      expect(refused.status).toBe(403)
      expect(refused.body).toEqual({
        error: 'access_denied',
        error_description: 'request cost exceeds the rate limit',
      })
      expect(refused.headers['ratelimit-policy']).toBe('"default";q=10;w=60')
      expect(refused.headers['retry-after']).toBeUndefined()
      expect(shared.calls).toBe(0)
      const next = await get(app, 'globex')
      expect(next.status).toBe(200)
      expect(next.headers['ratelimit']).toMatch(/^"default";r=9;t=\d+$/)
    })

    it('answers 503 with Retry-After to a new tenant while maxTenants windows have not ended, and still limits the tenants it holds', async () => {
      const events: GateEvent[] = []
      const app = serve({
        ...limited({ windows: [{ points: 2, durationSeconds: 60 }], maxTenants: 2 }),
        onEvent: (event) => void events.push(event),
      })
      expect((await get(app, 'a')).status).toBe(200)
      expect((await get(app, 'b')).status).toBe(200)
      const full = await get(app, 'c')
      expect(full.status).toBe(503)
      expect(full.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'rate limiter unavailable',
      })
      expect(Number(full.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(Number(full.headers['retry-after'])).toBeLessThanOrEqual(60)
      expect(events).toContainEqual({
        type: 'limiter_store_error',
        error: expect.objectContaining({ code: 'ERR_STORE_FULL' }),
      })
      expect((await get(app, 'a')).status).toBe(200)
      expect((await get(app, 'a')).status).toBe(429)
    })

    it('never answers a Retry-After past the window when a shared store says its counter resets in an hour', async () => {
      const shared = storeWithOddAcme({ count: 2, msBeforeReset: 3_600_000 })
      const app = serve(
        limited({ windows: [{ points: 1, durationSeconds: 60 }], store: { shared } }),
      )
      const refused = await get(app, 'acme')
      expect(refused.status).toBe(429)
      expect(refused.headers['retry-after']).toBe('60')
      expect(refused.headers['ratelimit']).toBe('"default";r=0;t=60')
    })

    it('decides a request whose store answer is malformed by the fallback, and keeps asking the store for the others', async () => {
      const shared = storeWithOddAcme({ count: Number.NaN, msBeforeReset: -1 })
      const app = serve(
        limited({
          windows: [{ points: 5, durationSeconds: 60 }],
          store: { shared },
          onStoreError: 'deny',
        }),
      )
      const odd = await get(app, 'acme')
      expect(odd.status).toBe(503)
      const other = await get(app, 'globex')
      expect(other.status).toBe(200)
      expect(shared.calls - shared.acmeCalls).toBe(1)
    })

    it('fetches keys once for two ready() calls, and once for two issuers sharing a jwks_uri', async () => {
      const app = serve({
        issuers: [
          { issuer: issuer.issuer('acme'), jwksUri: issuer.jwksUri('acme') },
          { issuer: OTHER_ISSUER, jwksUri: issuer.jwksUri('acme') },
        ],
        audience: 'gateway',
      })
      const before = issuer.fetchCount('acme')
      expect((await app.gate.ready()).ready).toBe(true)
      expect((await app.gate.ready()).ready).toBe(true)
      expect(issuer.fetchCount('acme') - before).toBe(1)
      for (const iss of [issuer.issuer('acme'), OTHER_ISSUER]) {
        const res = await request(app)
          .get(ROUTE)
          .set('Authorization', `Bearer ${await issuer.mint({ iss })}`)
        expect(res.status).toBe(200)
        expect(res.body.issuer).toBe(iss)
      }
      expect(issuer.fetchCount('acme') - before).toBe(1)
    })
  },
)
