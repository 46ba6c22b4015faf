/**
 * The memory limiter inside a gate holds no timer: rate-limiter-flexible's memory store, and
 * tollgate's own when it followed it, left one timer per tenant window running after
 * `gate.close()`, holding the windows for up to their duration.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import { createGate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway', algorithms: ['ES256'] })
})
afterAll(async () => {
  await issuer.close()
})
afterEach(() => {
  vi.useRealTimers()
})

describe('a gate with the memory limiter', () => {
  it('holds no timer after 200 tenants’ requests, nor after close(), and still limits after it', async () => {
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: 2, durationSeconds: 3600 }] },
    })
    await gate.ready()
    const tokens = await Promise.all(
      Array.from({ length: 200 }, (_, index) => issuer.mint({ tenant: `tenant-${index}` })),
    )
    vi.useFakeTimers()
    for (const token of tokens) {
      const result = await gate.check({ headers: { authorization: `Bearer ${token}` } })
      expect(result.auth?.tenant).toMatch(/^tenant-/)
    }
    expect(vi.getTimerCount()).toBe(0)
    const spent = { headers: { authorization: `Bearer ${tokens[0]}` } }
    await gate.check(spent)
    await gate.close()
    expect(vi.getTimerCount()).toBe(0)
    // The counts outlive close(): a request decided after it is still limited.
    await expect(gate.check(spent)).rejects.toMatchObject({ status: 429 })
  })
})
