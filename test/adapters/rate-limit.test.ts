import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

/** Every adapter, NestJS on both of its platforms included. */
const EVERY_APP = [...APPS, ...NEST_APPS]

const ROUTE = '/api/v1/billing/subscriptions'
let issuer: TestIssuer
let base: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  base = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
})
afterAll(async () => {
  await issuer.close()
})

const limited = (extra: Partial<GateOptions> = {}): GateOptions => ({
  ...base,
  tenant: { claim: 'tenant' },
  rateLimit: { plans: { free: [{ points: 2, durationSeconds: 60 }] }, defaultPlan: 'free' },
  ...extra,
})

describe.each(EVERY_APP)('%s adapter with per-tenant limits', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    app = createApp(limited())
  })
  afterAll(() => {
    app.close()
  })

  it('puts the tenant on auth and draft-10 rate-limit fields on admitted responses', async () => {
    const token = await issuer.mint({ tenant: 'acme' })
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(200)
    expect(res.body.tenant).toBe('acme')
    expect(res.headers['ratelimit-policy']).toBe('"free";q=2;w=60')
    expect(res.headers['ratelimit']).toMatch(/^"free";r=1;t=\d+$/)
  })

  it('answers 429 with Retry-After, the rate-limit fields and a JSON body once the tenant is out of points', async () => {
    const token = await issuer.mint({ tenant: 'initech' })
    await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`).expect(200)
    await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`).expect(200)
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
    expect(res.status).toBe(429)
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60)
    expect(res.headers['ratelimit-policy']).toBe('"free";q=2;w=60')
    expect(res.headers['ratelimit']).toMatch(/^"free";r=0;t=\d+$/)
    expect(res.headers['www-authenticate']).toBeUndefined()
    expect(res.body).toEqual({ error: 'rate_limited', error_description: 'rate limit exceeded' })
  })

  it('keeps another tenant admitted while one is limited', async () => {
    const spent = await issuer.mint({ tenant: 'umbrella' })
    for (let index = 0; index < 3; index++)
      await request(app).get(ROUTE).set('Authorization', `Bearer ${spent}`)
    const other = await issuer.mint({ tenant: 'globex' })
    expect((await request(app).get(ROUTE).set('Authorization', `Bearer ${other}`)).status).toBe(200)
  })

  it('never charges a tenant for forged or expired tokens, and sends no rate-limit fields on 401', async () => {
    const valid = await issuer.mint({ tenant: 'hooli' })
    const [header, payload] = valid.split('.')
    const forged = `${header}.${payload}.${(await issuer.mint({ tenant: 'x' })).split('.')[2]}`
    const expired = await issuer.mint({ tenant: 'hooli', exp: 1 })
    for (const token of [forged, expired, forged, expired]) {
      const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
      expect(res.status).toBe(401)
      expect(res.headers['ratelimit']).toBeUndefined()
      expect(res.headers['ratelimit-policy']).toBeUndefined()
    }
    const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${valid}`)
    expect(res.headers['ratelimit']).toMatch(/^"free";r=1;/)
  })

  it('answers 401 invalid_token for a token without a tenant', async () => {
    const res = await request(app)
      .get(ROUTE)
      .set('Authorization', `Bearer ${await issuer.mint()}`)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('answers 403 for a tenant the policy refuses', async () => {
    const refusing = createApp(
      limited({
        tenant: {
          claim: 'tenant',
          policy: (id) => (id === 'suspended' ? { action: 'refuse' } : { action: 'admit' }),
        },
      }),
    )
    const res = await request(refusing)
      .get(ROUTE)
      .set('Authorization', `Bearer ${await issuer.mint({ tenant: 'suspended' })}`)
    expect(res.status).toBe(403)
    expect(res.body).toEqual({ error: 'access_denied', error_description: 'tenant refused' })
    refusing.close()
  })
})

describe('all adapters with per-tenant limits', () => {
  it('give identical 429 answers', async () => {
    const answers = []
    for (const [, createApp] of EVERY_APP) {
      const app = createApp(
        limited({ rateLimit: { windows: [{ points: 1, durationSeconds: 3600 }] } }),
      )
      const token = await issuer.mint({ tenant: 'same' })
      await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
      const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
      answers.push({
        status: res.status,
        policy: res.headers['ratelimit-policy'],
        limit: res.headers['ratelimit']?.replace(/t=\d+/, 't=?'),
        retryAfter: Number(res.headers['retry-after']) > 3590,
        body: res.text,
      })
      app.close()
    }
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
  })
})

describe('Express and Koa gateways sharing one Redis', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('enforce one combined limit per tenant', async () => {
    const events: GateEvent[] = []
    const shared = async () =>
      limited({
        rateLimit: {
          windows: [{ points: 10, durationSeconds: 60 }],
          store: { redis: await redis.client() },
        },
        onEvent: (event) => events.push(event),
      })
    const express = (APPS[0] as (typeof APPS)[number])[1](await shared())
    const koa = (APPS[2] as (typeof APPS)[number])[1](await shared())
    const token = await issuer.mint({ tenant: 'wayne' })
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        request(index % 2 === 0 ? express : koa)
          .get(ROUTE)
          .set('Authorization', `Bearer ${token}`)
          .then((res) => res.status),
      ),
    )
    expect(statuses.filter((status) => status === 200)).toHaveLength(10)
    expect(statuses.filter((status) => status === 429)).toHaveLength(20)
    expect(events.filter((event) => event.type === 'rate_limited')).toHaveLength(20)
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'rejected',
        code: 'ERR_RATE_LIMITED',
        reason: 'rate_limited',
        status: 429,
        issuer: issuer.issuer('acme'),
        tenant: 'wayne',
        path: '/api/v1/billing/subscriptions',
      }),
    )
    express.close()
    koa.close()
  })
})
