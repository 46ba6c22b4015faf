/**
 * docs/stores.md: each store sample counts a tenant's requests in its real server (PostgreSQL,
 * Memcached, a cluster primary, Redis, the guide's counter service), started by the runner.
 *
 * The counter service recipe is being rewritten (a security fix); its scenarios check the
 * contract the guide states (`POST /increment`, `POST /claim-once`, 401 without the secret).
 */
import { readFileSync } from 'node:fs'
import { get as httpGet } from 'node:http'

import { createDpopKey } from 'tollgate/testing'
import { expect } from 'vitest'

import { allSamples } from '../../helpers/doc-samples.js'
import type { PostgresServer } from '../../helpers/postgres.js'
import { answer, bearer, eventually, type ScenarioTable } from '../scenario.js'
import type { SampleWorld } from '../world.js'
import { databaseOf } from './operating.js'

const BILLING = '/api/v1/billing/subscriptions'
const PROVIDES = new URL('../hosts/provides/', import.meta.url).pathname

/** docs/stores.md's `CREATE TABLE` block, as the guide says to run it when deploying. */
const CREATE_TABLE = /```sql\n([\s\S]*?)```/.exec(readFileSync('docs/stores.md', 'utf8'))?.[1] ?? ''

let databases = 0
/** A database of its own on the runner's PostgreSQL, the guide's table created in it. */
async function freshDatabase(world: SampleWorld): Promise<{ url: string; server: PostgresServer }> {
  const server = await world.postgres()
  const name = `samples_${++databases}`
  const admin = server.pool()
  await admin.query(`CREATE DATABASE ${name}`)
  const pool = server.pool({ database: name })
  await pool.query(CREATE_TABLE)
  return { url: `postgres://tollgate@127.0.0.1:${server.port}/${name}`, server }
}

/** A sample of docs/stores.md by heading (the n-th under it), for the samples that use another. */
function storesSample(heading: string, index = 0): string {
  const found = allSamples().filter((s) => s.file === 'docs/stores.md' && s.heading === heading)
  const sample = found[index]
  if (sample === undefined)
    throw new Error(`docs/stores.md has no sample #${index} under ${heading}`)
  return sample.code
}

export const STORES: ScenarioTable = {
  'docs/stores.md': {
    PostgreSQL: {
      promises:
        "the gate it exports counts tenant acme's requests in the guide's table (RateLimiterPostgres): 200 and a row for the tenant; no tenant 401",
      async run({ start, world }) {
        const { url, server } = await freshDatabase(world)
        const gate = await start({ host: 'gate-module.ts', env: { DATABASE_URL: url } })
        const token = await world.kit.mint({ sub: 'alice', tenant: 'acme' }, { realm: 'sso' })
        const admitted = await answer(await gate.fetch(BILLING, bearer(token)))
        expect(admitted, gate.output()).toEqual({
          status: 200,
          body: { user: 'alice', tenant: 'acme' },
        })
        const pool = server.pool({ database: url.split('/').pop() ?? '' })
        // A late command still counts (the guide): the row is there, at once or a little later.
        const rows = await eventually(
          'the row of tenant acme',
          async () => (await pool.query('SELECT key FROM tollgate_limits')).rows,
          (found) => found.length > 0,
        )
        expect(rows).toEqual([{ key: 'tollgate:rl:{acme}:default:60' }])
        const noTenant = await world.kit.mint({ sub: 'alice' }, { realm: 'sso' })
        expect((await gate.fetch(BILLING, bearer(noTenant))).status).toBe(401)
      },
    },

    Memcached: {
      promises:
        'a gate with these rateLimit options (RateLimiterMemcache on the runner memcached) admits tenant acme 200 with the window of 50; no tenant 401',
      async run({ start, world }) {
        const memcached = await world.memcached()
        const gate = await start({
          host: 'gate-module.ts',
          env: { MEMCACHED_SERVERS: memcached.location },
        })
        const token = await world.kit.mint({ sub: 'alice', tenant: 'acme' })
        const admitted = await gate.fetch(BILLING, bearer(token))
        expect(admitted.headers.get('ratelimit-policy')).toBe('"default";q=50;w=60')
        expect(await answer(admitted)).toEqual({
          status: 200,
          body: { user: 'alice', tenant: 'acme' },
        })
        expect((await gate.fetch(BILLING, bearer(await world.kit.mint({})))).status).toBe(401)
      },
    },

    'A Node cluster without a store': {
      promises:
        'two workers share the port and the primary counts for both: of 60 requests of tenant acme exactly 50 admitted, 10 refused 429; no token 401',
      async run({ start, world: { kit } }) {
        const app = await start()
        // A new connection per request: the primary hands connections to the workers in turn,
        // and fetch would keep reusing the first ones (made while one worker listened).
        const get = (token: string) =>
          new Promise<{ status: number; worker?: number }>((resolve, reject) => {
            const req = httpGet(
              `${app.url}${BILLING}`,
              { agent: false, headers: { authorization: `Bearer ${token}` } },
              (res) => {
                let text = ''
                res.setEncoding('utf8')
                res.on('data', (chunk: string) => {
                  text += chunk
                })
                res.on('end', () => {
                  const body = JSON.parse(text) as { worker?: number }
                  resolve({ status: res.statusCode ?? 0, ...body })
                })
              },
            )
            req.on('error', reject)
          })
        // The port answers once one worker listens: wait (a new tenant per batch, within its
        // window) until both answer, so that acme's requests are shared between them.
        const listening = new Set<number | undefined>()
        for (let batch = 0; batch < 60 && listening.size < 2; batch++) {
          const warm = await kit.mint({ tenant: `warmup${batch}` })
          for (const { status, worker } of await Promise.all(
            Array.from({ length: 4 }, () => get(warm)),
          )) {
            expect(status).toBe(200)
            listening.add(worker)
          }
          if (listening.size < 2) await new Promise((resolve) => setTimeout(resolve, 500))
        }
        expect(listening.size).toBe(2)
        const token = await kit.mint({ tenant: 'acme' })
        const statuses: number[] = []
        const workers = new Set<number | undefined>()
        for (let batch = 0; batch < 6; batch++) {
          for (const { status, worker } of await Promise.all(
            Array.from({ length: 10 }, () => get(token)),
          )) {
            statuses.push(status)
            if (status === 200) workers.add(worker)
          }
        }
        expect(statuses.filter((status) => status === 200)).toHaveLength(50)
        expect(statuses.filter((status) => status === 429)).toHaveLength(10)
        expect(workers.size).toBe(2)
        expect((await app.fetch(BILLING)).status).toBe(401)
      },
    },

    'Over HTTP': [
      {
        promises:
          'the client against the guide counter service: increments add up (2, then 5), a claim succeeds once, a wrong secret rejects with the 401',
        async run({ start }) {
          const program = await start({
            host: 'shared-store-client.ts',
            until: 'none',
            files: { 'counter-service.ts': storesSample('Over HTTP', 1) },
          })
          const lines = (await program.finished())
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line))
          expect(lines).toEqual([
            { count: 2, msBeforeReset: expect.any(Number) },
            { count: 5, msBeforeReset: expect.any(Number) },
            true,
            false,
            { rejected: 'counter service answered 401' },
          ])
          expect(lines[1].msBeforeReset).toBeLessThanOrEqual(60_000)
        },
      },
      {
        promises:
          'the service: POST /increment and /claim-once with its secret 200 as the contract says; without the secret 401; a malformed body 400',
        async run({ start }) {
          const secret = 'counter-secret'
          const service = await start({
            host: 'counter-service.ts',
            env: { COUNTER_SECRET: secret },
          })
          const post = (path: string, body: unknown, key = secret) =>
            service.fetch(path, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify(body),
            })
          const first = await answer(await post('/increment', { key: 'k', amount: 3, ttlMs: 1000 }))
          expect(first).toMatchObject({ status: 200, body: { count: 3 } })
          const second = await answer(
            await post('/increment', { key: 'k', amount: 1, ttlMs: 1000 }),
          )
          expect(second).toMatchObject({ status: 200, body: { count: 4 } })
          expect(await answer(await post('/claim-once', { key: 'p', ttlMs: 1000 }))).toEqual({
            status: 200,
            body: { claimed: true },
          })
          expect(await answer(await post('/claim-once', { key: 'p', ttlMs: 1000 }))).toEqual({
            status: 200,
            body: { claimed: false },
          })
          expect((await post('/increment', { key: 'k', amount: 1, ttlMs: 1000 }, 'x')).status).toBe(
            401,
          )
          expect((await post('/increment', { key: 'k', amount: 0, ttlMs: 1000 })).status).toBe(400)
        },
      },
      {
        promises:
          'the gate it exports, its store the guide client of the guide service: tenant acme 200 counted there (r=49); a DPoP proof accepted once, replayed 401',
        async run({ start, world: { kit } }) {
          const gate = await start({
            host: 'gate-module.ts',
            env: { SAMPLE_PROVIDES: `${PROVIDES}shared-store.ts` },
            files: {
              'http-shared-store.ts': storesSample('Over HTTP', 0),
              'counter-service.ts': storesSample('Over HTTP', 1),
            },
          })
          const token = await kit.mint({ sub: 'alice', tenant: 'acme' }, { realm: 'sso' })
          const admitted = await gate.fetch(BILLING, bearer(token))
          expect(await answer(admitted), gate.output()).toEqual({
            status: 200,
            body: { user: 'alice', tenant: 'acme' },
          })
          expect(admitted.headers.get('ratelimit')).toMatch(/r=49/)

          const key = await createDpopKey()
          const bound = await kit.mint({ sub: 'bob', tenant: 'acme' }, { realm: 'sso', dpop: key })
          const headers = await key.headers(bound, {
            method: 'GET',
            url: `https://api.example.com${BILLING}`,
          })
          expect((await gate.fetch(BILLING, { headers })).status).toBe(200)
          expect((await gate.fetch(BILLING, { headers })).status).toBe(401)
        },
      },
    ],

    'Moving counters between stores': [
      {
        promises:
          "RateLimiterRedis with the gate's keyPrefix counts in tollgate's own key, tollgate:rl:{acme}:default:60; no tenant 401",
        async run({ start, world }) {
          const redisUrl = world.redisUrl()
          const gate = await start({ host: 'gate-module.ts', env: { REDIS_URL: redisUrl } })
          const admin = await world.redis.client({ db: databaseOf(redisUrl) })
          const token = await world.kit.mint({ tenant: 'acme' })
          // Requests before the client connected are counted in memory (the store is not ready).
          await eventually(
            'a request counted in Redis by RateLimiterRedis',
            async () => {
              expect((await gate.fetch(BILLING, bearer(token))).status).toBe(200)
              return admin.get('tollgate:rl:{acme}:default:60')
            },
            (count) => count !== null && /^\d+$/.test(count),
          )
          expect((await gate.fetch(BILLING, bearer(await world.kit.mint({})))).status).toBe(401)
        },
      },
      {
        promises:
          "copies the window counters from Redis to the guide's PostgreSQL table (key, points, expire), and not the :instances key",
        async run({ start, world }) {
          const { url, server } = await freshDatabase(world)
          const redisUrl = world.redisUrl()
          const admin = await world.redis.client({ db: databaseOf(redisUrl) })
          await admin.set('tollgate:rl:{acme}:default:60', '4', 'PX', 60_000)
          await admin.set('tollgate:rl:instances', '2', 'PX', 60_000)
          const program = await start({
            until: 'none',
            env: { REDIS_URL: redisUrl, DATABASE_URL: url },
          })
          await program.finished()
          const pool = server.pool({ database: url.split('/').pop() ?? '' })
          const { rows } = await pool.query('SELECT key, points, expire FROM tollgate_limits')
          expect(rows).toEqual([
            { key: 'tollgate:rl:{acme}:default:60', points: 4, expire: expect.any(String) },
          ])
          const expire = Number(rows[0].expire)
          expect(expire).toBeGreaterThan(Date.now())
          expect(expire).toBeLessThanOrEqual(Date.now() + 60_000)
        },
      },
    ],
  },
}
