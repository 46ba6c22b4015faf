/**
 * A store of your own (docs/stores.md): the counter service and the HTTP `SharedStore` client the
 * guide prints (test/limits/samples/), on loopback, shared by two gateways (two Fetch-adapter
 * apps, each with its own gate): the rate limit and the DPoP replay cache hold across both. The
 * same store from workerd is in test/runtimes/fetch-runtimes.test.ts.
 */
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateOptions } from '../../src/gate/options.js'
import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'
import { type CounterService, startCounterService } from '../helpers/counter-service.js'
import { httpSharedStore } from './samples/http-shared-store.js'

const ROUTE = '/api/v1/billing/subscriptions'
const BASE = 'https://api.example.test'

let issuer: TestIssuer
let service: CounterService
let dpopKey: TestDpopKey
const servers: ProtectedServer[] = []

const createFetchApp = APPS.find(([name]) => name === 'fetch')?.[1] as (
  options: GateOptions,
) => ProtectedServer

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  service = await startCounterService()
  dpopKey = await createDpopKey('ES256')
})
afterAll(async () => {
  for (const server of servers) server.close()
  await service?.close()
  await issuer?.close()
})

/** A gateway on a free loopback port; its origin. */
async function gateway(options: Omit<GateOptions, 'issuers' | 'audience'>): Promise<string> {
  const server = createFetchApp({
    ...options,
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  })
  servers.push(server)
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

interface ServiceAnswer {
  readonly status: number
  readonly body: { count?: number; msBeforeReset?: number; claimed?: boolean } | null
}

async function post(
  path: string,
  payload: unknown,
  secret = service.secret,
): Promise<ServiceAnswer> {
  const response = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  })
  const body = (response.status === 200 ? await response.json() : null) as ServiceAnswer['body']
  return { status: response.status, body }
}

describe('docs/stores.md, "A store of your own"', () => {
  it.each(['test/limits/samples/http-shared-store.ts', 'test/limits/samples/counter-service.ts'])(
    'shows %s exactly as the tests run it',
    (file) => {
      const guide = readFileSync('docs/stores.md', 'utf8')
      expect(guide).toContain(`\`\`\`ts\n${readFileSync(file, 'utf8')}\`\`\``)
    },
  )
})

describe('the counter service of docs/stores.md', () => {
  it('opens a counter at 0 with ttlMs, and keeps its expiry on later increments', async () => {
    const first = await post('/increment', { key: 'c:1', amount: 2, ttlMs: 60_000 })
    expect(first).toMatchObject({ status: 200, body: { count: 2 } })
    expect(first.body?.msBeforeReset).toBeLessThanOrEqual(60_000)
    expect(first.body?.msBeforeReset).toBeGreaterThan(0)
    const second = await post('/increment', { key: 'c:1', amount: 3, ttlMs: 600_000 })
    expect(second).toMatchObject({ status: 200, body: { count: 5 } })
    expect(second.body?.msBeforeReset).toBeLessThanOrEqual(first.body?.msBeforeReset as number)
  })

  it('records a claim once: true the first time, false after', async () => {
    expect(await post('/claim-once', { key: 'p:1', ttlMs: 60_000 })).toEqual({
      status: 200,
      body: { claimed: true },
    })
    expect(await post('/claim-once', { key: 'p:1', ttlMs: 60_000 })).toEqual({
      status: 200,
      body: { claimed: false },
    })
  })

  it.each([
    ['a missing key', '/increment', { amount: 1, ttlMs: 1000 }],
    ['an amount of 0', '/increment', { key: 'k', amount: 0, ttlMs: 1000 }],
    ['a ttlMs as text', '/claim-once', { key: 'k', ttlMs: '1000' }],
    ['an unknown operation', '/decrement', { key: 'k', amount: 1, ttlMs: 1000 }],
    ['a body that is not JSON', '/increment', 'not json'],
  ])('answers 400 to %s', async (_name, path, body) => {
    expect((await post(path, body)).status).toBe(400)
  })

  it('answers 401 without its secret, which the client turns into a rejection', async () => {
    expect((await post('/claim-once', { key: 'p:2', ttlMs: 1000 }, 'wrong')).status).toBe(401)
    await expect(httpSharedStore(service.url, 'wrong').claimOnce('p:2', 1000)).rejects.toThrow(
      'counter service answered 401',
    )
  })
})

describe('two gateways sharing the counter service', () => {
  it('admit exactly the limit of a burst for one tenant', async () => {
    const options = {
      tenant: { claim: 'tenant' },
      rateLimit: {
        windows: [{ points: 20, durationSeconds: 60 }],
        store: { shared: service.store() },
        // Wide deadline and fail-closed: a slow store shows up as 503s, never as extra admissions.
        storeTimeoutMs: 5000,
        onStoreError: 'deny',
      },
    } as const
    const origins = [await gateway(options), await gateway(options)]
    const token = await issuer.mint({ tenant: 'burst' })
    const statuses = await Promise.all(
      Array.from({ length: 60 }, async (_, index) => {
        const response = await fetch(`${origins[index % 2]}${ROUTE}`, {
          headers: { authorization: `Bearer ${token}` },
        })
        await response.arrayBuffer()
        return response.status
      }),
    )
    expect(statuses.filter((status) => status === 200)).toHaveLength(20)
    expect(statuses.filter((status) => status === 429)).toHaveLength(40)
  })

  it('accept a DPoP proof once: the second gateway refuses it as replayed', async () => {
    const options = {
      dpop: {
        mode: 'allowed',
        publicBaseUrl: BASE,
        replay: { store: { shared: service.store() }, storeTimeoutMs: 5000 },
      },
    } as const
    const [first, second] = [await gateway(options), await gateway(options)]
    const token = await issuer.mint({}, { dpop: dpopKey })
    const headers = await dpopKey.headers(token, { method: 'GET', url: `${BASE}${ROUTE}` })
    const accepted = await fetch(`${first}${ROUTE}`, { headers })
    expect(accepted.status).toBe(200)
    const replayed = await fetch(`${second}${ROUTE}`, { headers })
    expect(replayed.status).toBe(401)
    expect(replayed.headers.get('www-authenticate')).toContain('error="invalid_dpop_proof"')
    // A fresh proof of the same key is accepted by the second gateway.
    const fresh = await dpopKey.headers(token, { method: 'GET', url: `${BASE}${ROUTE}` })
    expect((await fetch(`${second}${ROUTE}`, { headers: fresh })).status).toBe(200)
  })
})
