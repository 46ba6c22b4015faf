/** docs/status-list.md: a gate checking Token Status Lists, against the test issuer's own lists. */
import { deflateSync } from 'node:zlib'

import { expect } from 'vitest'

import { answer, bearer, type ScenarioTable } from '../scenario.js'
import { databaseOf } from './operating.js'

const REFUSED = {
  status: 401,
  body: { error: 'invalid_token', error_description: 'invalid token' },
}

export const STATUS_LIST: ScenarioTable = {
  'docs/status-list.md': {
    'The setup': {
      promises:
        'a token whose list index is VALID 200 (user); one the issuer set INVALID 401 invalid_token; one SUSPENDED 401; a token without status 200; a list that cannot be had 503 Retry-After',
      async run({ start, world: { kit } }) {
        const api = await start()
        const list = kit.statusList('docs-sample')
        list.set(5, 1)
        list.set(6, 2)
        const orders = async (status?: unknown) =>
          api.fetch(
            '/api/orders',
            bearer(await kit.mint({ aud: 'gateway', sub: 'alice', ...(status ? { status } : {}) })),
          )
        expect(await answer(await orders(list.reference(4)))).toEqual({
          status: 200,
          body: { user: 'alice' },
        })
        for (const idx of [5, 6]) {
          expect(await answer(await orders(list.reference(idx)))).toEqual({
            status: 401,
            body: { error: 'invalid_token', error_description: 'invalid token' },
          })
        }
        expect((await orders()).status).toBe(200)
        const missing = await orders({
          status_list: { idx: 0, uri: `${kit.issuer('acme')}/statuslists/none` },
        })
        expect(missing.status).toBe(503)
        expect(missing.headers.get('retry-after')).not.toBeNull()
      },
    },
    'Shared across a fleet': {
      promises:
        'three instances sharing Redis: 200 for a VALID index and 401 for an INVALID one on each, one fetch of the list; the list in Redis under tollgate:status:; a forged entry written there (every status VALID): a fourth instance refuses it, fetches the list and answers the same',
      async run({ start, world }) {
        const { kit } = world
        const redisUrl = world.redisUrl()
        const list = kit.statusList('docs-fleet')
        list.set(3, 1)
        const valid = bearer(
          await kit.mint({ aud: 'gateway', sub: 'alice', status: list.reference(2) }),
        )
        const revoked = bearer(
          await kit.mint({ aud: 'gateway', sub: 'bob', status: list.reference(3) }),
        )
        const fleet = await Promise.all(
          [1, 2, 3].map(() => start({ env: { REDIS_URL: redisUrl } })),
        )
        const first = await Promise.all(fleet.map((gate) => gate.fetch('/api/orders', valid)))
        for (const response of first) {
          expect(await answer(response)).toEqual({ status: 200, body: { user: 'alice' } })
        }
        for (const gate of fleet) {
          expect(await answer(await gate.fetch('/api/orders', revoked))).toEqual(REFUSED)
        }
        expect(list.fetchCount).toBe(1)

        const admin = await world.redis.client({ db: databaseOf(redisUrl) })
        const [key] = await admin.keys('tollgate:status:*')
        expect(key).toMatch(/^tollgate:status:\{[A-Za-z0-9_-]{32}\}$/)
        const ttl = await admin.pttl(key as string)
        expect(ttl).toBeGreaterThan(0)
        expect(ttl).toBeLessThanOrEqual(60_000)
        // Redis is not the issuer: a list written there by someone else is verified, refused, and
        // the list fetched from the issuer.
        // Redis is not the issuer: a list written there by someone else (every status VALID, the
        // issuer's signature kept) is verified, refused, and the list fetched from the issuer.
        const [header, payload, signature] = ((await admin.get(key as string)) as string).split('.')
        const claims = JSON.parse(Buffer.from(payload as string, 'base64url').toString())
        claims.status_list.lst = deflateSync(new Uint8Array(256)).toString('base64url')
        const forged = Buffer.from(JSON.stringify(claims)).toString('base64url')
        await admin.set(key as string, `${header}.${forged}.${signature}`, 'PX', 60_000)
        const fourth = await start({ env: { REDIS_URL: redisUrl } })
        expect(await answer(await fourth.fetch('/api/orders', revoked))).toEqual(REFUSED)
        expect((await fourth.fetch('/api/orders', valid)).status).toBe(200)
        expect(list.fetchCount).toBe(2)
      },
    },
  },
}
