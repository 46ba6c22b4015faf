/**
 * docs/stores.md's "A store of your own" on Cloudflare Workers: two workerd processes (two
 * isolates that share no memory) run the runtime app with the guide's HTTP `SharedStore`, against
 * the guide's counter service on Node; a burst for one tenant across both admits exactly the limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { type CounterService, startCounterService } from '../helpers/counter-service.js'
import { type RuntimeServer, runtimeBundles, startRuntime } from '../helpers/runtimes.js'
import type { RuntimeAppConfig } from './app.js'

const ROUTE = '/api/v1/billing/subscriptions'
const LIMIT = 20
const BASE = 'https://api.example.test'

let issuer: TestIssuer
let service: CounterService
let bundles: Awaited<ReturnType<typeof runtimeBundles>>
let dpopKey: TestDpopKey
const workers: RuntimeServer[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  service = await startCounterService()
  dpopKey = await createDpopKey('ES256')
  bundles = await runtimeBundles()
  const config: RuntimeAppConfig = {
    gates: {
      shared: {
        authUrl: issuer.url,
        realms: ['acme'],
        audience: 'gateway',
        sharedStore: { url: service.url, secret: service.secret },
        options: {
          tenant: { claim: 'tenant' },
          rateLimit: {
            windows: [{ points: LIMIT, durationSeconds: 60 }],
            // Wide deadline and fail-closed: a slow store shows up as 503s, never as extra admissions.
            storeTimeoutMs: 5000,
            onStoreError: 'deny',
          },
        },
      },
      dpop: {
        authUrl: issuer.url,
        realms: ['acme'],
        audience: 'gateway',
        sharedStore: { url: service.url, secret: service.secret },
        options: {
          dpop: { mode: 'allowed', publicBaseUrl: BASE, replay: { storeTimeoutMs: 5000 } },
        },
      },
    },
  }
  for (let index = 0; index < 2; index++) {
    workers.push(await startRuntime('workerd', bundles.directory, config))
  }
})
afterAll(async () => {
  for (const worker of workers) await worker.stop()
  bundles?.remove()
  await service?.close()
  await issuer?.close()
})

describe('rateLimit.store: { shared } on workerd (docs/stores.md)', () => {
  it('admits exactly the limit of a burst for one tenant across two workerd processes', async () => {
    const token = await issuer.mint({ tenant: 'edge' })
    const statuses = await Promise.all(
      Array.from({ length: 3 * LIMIT }, async (_, index) => {
        const worker = workers[index % 2] as RuntimeServer
        const response = await fetch(`${worker.origin}/shared${ROUTE}`, {
          headers: { authorization: `Bearer ${token}` },
        })
        await response.arrayBuffer()
        return response.status
      }),
    )
    const output = workers.map((worker) => worker.output()).join('\n')
    expect(statuses.filter((status) => status === 200).length, output).toBe(LIMIT)
    expect(statuses.filter((status) => status === 429).length, output).toBe(2 * LIMIT)
  })

  it('accepts a DPoP proof once across two workerd processes: the second refuses it as replayed', async () => {
    const [first, second] = workers as [RuntimeServer, RuntimeServer]
    const token = await issuer.mint({}, { dpop: dpopKey })
    const headers = await dpopKey.headers(token, { method: 'GET', url: `${BASE}${ROUTE}` })
    const accepted = await fetch(`${first.origin}/dpop${ROUTE}`, { headers })
    expect(accepted.status, first.output()).toBe(200)
    const replayed = await fetch(`${second.origin}/dpop${ROUTE}`, { headers })
    expect(replayed.status, second.output()).toBe(401)
    expect(replayed.headers.get('www-authenticate')).toContain('error="invalid_dpop_proof"')
  })
})
