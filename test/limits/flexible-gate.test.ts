/**
 * `rateLimit.store: { flexible }` as a new user wires it: `createGate` options, two Express
 * gateways in front of one real PostgreSQL, requests over HTTP.
 */
import type { Server } from 'node:http'

import type pg from 'pg'
import { RateLimiterPostgres } from 'rate-limiter-flexible'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { type PostgresServer, startPostgresServer } from '../helpers/postgres.js'

const ROUTE = '/api/v1/billing/subscriptions'
const createApp = APPS.find(([name]) => name === 'express 5')?.[1]
let issuer: TestIssuer
let server: PostgresServer
const apps: Server[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  server = await startPostgresServer()
  await server
    .pool()
    .query(
      'CREATE TABLE tollgate_limits (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)',
    )
  for (let index = 0; index < 2; index++) {
    // Each gateway has its own pool, as two replicas would.
    const pool: pg.Pool = server.pool()
    const options: GateOptions = {
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      tenant: { claim: 'tenant' },
      rateLimit: {
        windows: [{ points: 3, durationSeconds: 60 }],
        storeTimeoutMs: 5000,
        fallbackDivisor: 2,
        store: {
          flexible: (window) =>
            new RateLimiterPostgres({
              storeClient: pool,
              tableName: 'tollgate_limits',
              tableCreated: true,
              points: window.points,
              duration: window.durationSeconds,
              keyPrefix: window.keyPrefix,
            }),
        },
      },
    }
    apps.push((createApp as NonNullable<typeof createApp>)(options))
  }
}, 60_000)

afterAll(async () => {
  for (const app of apps) app.close()
  await issuer?.close()
  await server?.stop()
})

describe('two Express gateways sharing one PostgreSQL through createGate({ rateLimit: { store: { flexible } } })', () => {
  it('admit the limit between them, then answer 429 with Retry-After, the RateLimit fields and the JSON body', async () => {
    const token = await issuer.mint({ tenant: 'acme' })
    const statuses: number[] = []
    let refusal: request.Response | undefined
    for (let index = 0; index < 6; index++) {
      const res = await request(apps[index % 2] as Server)
        .get(ROUTE)
        .set('Authorization', `Bearer ${token}`)
      statuses.push(res.status)
      if (res.status === 429) refusal ??= res
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429])
    expect(Number(refusal?.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(Number(refusal?.headers['retry-after'])).toBeLessThanOrEqual(60)
    expect(refusal?.headers['ratelimit-policy']).toBe('"default";q=3;w=60')
    expect(refusal?.headers['ratelimit']).toMatch(/^"default";r=0;t=\d+$/)
    expect(refusal?.body).toEqual({
      error: 'rate_limited',
      error_description: 'rate limit exceeded',
    })
  })
})
