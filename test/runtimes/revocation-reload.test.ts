/**
 * Revocation without a shared store on Cloudflare Workers (docs/operating.md): a workerd worker
 * whose `revocation.load` fetches the application's records from a service on loopback, with
 * `reloadIntervalMs`, enforces a revocation recorded after it started: a request after the interval
 * reloads the records. A timer-driven reload never ran there (a Workers timer does not outlive
 * the request that set it), which is why requests drive the reloads; for the same reason they
 * drive the retries of a failed first load.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { type RuntimeServer, runtimeBundles, startRuntime } from '../helpers/runtimes.js'

const ROUTE = '/api/v1/billing/subscriptions'
/** Far above the interval: a deadline for a loaded machine, not a measure. */
const DEADLINE_MS = 15_000

let issuer: TestIssuer
let bundles: Awaited<ReturnType<typeof runtimeBundles>>
let worker: RuntimeServer
let recordsServer: Server
const records: object[] = []
let fetched = 0
let flakyFetched = 0

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  recordsServer = createServer((request, response) => {
    // /flaky: the records cannot be read the first time.
    if (request.url === '/flaky' && ++flakyFetched === 1) {
      response.writeHead(500).end()
      return
    }
    if (request.url !== '/flaky') fetched += 1
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(records))
  })
  await new Promise<void>((done) => recordsServer.listen(0, '127.0.0.1', done))
  const port = (recordsServer.address() as AddressInfo).port
  bundles = await runtimeBundles()
  worker = await startRuntime('workerd', bundles.directory, {
    gates: {
      reload: {
        authUrl: issuer.url,
        realms: ['acme'],
        audience: 'gateway',
        revocationRecords: `http://127.0.0.1:${port}/records`,
        options: { revocation: { reloadIntervalMs: 1000, storeTimeoutMs: 5000 } },
      },
      flaky: {
        authUrl: issuer.url,
        realms: ['acme'],
        audience: 'gateway',
        revocationRecords: `http://127.0.0.1:${port}/flaky`,
        options: { revocation: { storeTimeoutMs: 500 } },
      },
    },
  })
})
afterAll(async () => {
  await worker?.stop()
  bundles?.remove()
  recordsServer?.closeAllConnections()
  recordsServer?.close()
  await issuer?.close()
})

async function statusOf(token: string, gate = 'reload'): Promise<number> {
  const response = await fetch(`${worker.origin}/${gate}${ROUTE}`, {
    headers: { authorization: `Bearer ${token}` },
  })
  await response.arrayBuffer()
  return response.status
}

describe('revocation.reloadIntervalMs on workerd', () => {
  it('enforces a revocation recorded after the worker started', { timeout: 30_000 }, async () => {
    const token = await issuer.mint({ sub: 'mallory', iat: Math.floor(Date.now() / 1000) - 10 })
    expect(await statusOf(token), worker.output()).toBe(200)
    const before = fetched
    records.push({
      issuer: issuer.issuer('acme'),
      sub: 'mallory',
      notBefore: Math.floor(Date.now() / 1000),
    })
    // Requests after the interval start a reload and wait for it: ask until one was decided by it.
    const deadline = Date.now() + DEADLINE_MS
    while ((await statusOf(token)) !== 401) {
      if (Date.now() > deadline) {
        throw new Error(`not revoked within ${DEADLINE_MS} ms:\n${worker.output()}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(fetched).toBeGreaterThan(before)
  })

  it('retries a failed first load when requests come: 503 until it succeeds, then admitted', {
    timeout: 30_000,
  }, async () => {
    const token = await issuer.mint({ sub: 'alice' })
    expect(await statusOf(token, 'flaky'), worker.output()).toBe(503)
    const deadline = Date.now() + DEADLINE_MS
    while ((await statusOf(token, 'flaky')) !== 200) {
      if (Date.now() > deadline) {
        throw new Error(`load not retried within ${DEADLINE_MS} ms:\n${worker.output()}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(flakyFetched).toBeGreaterThanOrEqual(2)
  })
})
