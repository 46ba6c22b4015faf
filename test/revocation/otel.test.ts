import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createGate } from '../../src/gate/gate.js'
import { createOtelListener } from '../../src/otel/otel.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { points, TestReader } from '../helpers/metrics.js'

let issuer: TestIssuer

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

describe('createOtelListener and revocation', () => {
  it('counts revocations made, requests refused for them and refused callbacks, never by subject', async () => {
    const reader = new TestReader()
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      revocation: { callbacks: { clientIds: 'gateway' } },
      onEvent: createOtelListener({ meterProvider: new MeterProvider({ readers: [reader] }) }),
    })
    const token = await issuer.mint({ sub: 'alice', iat: Math.floor(Date.now() / 1000) - 10 })
    await gate.revoke({ sub: 'alice' })
    await gate.check({ headers: { authorization: `Bearer ${token}` } }).catch(() => {})
    await gate.backchannelLogout({
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      method: 'POST',
      body: 'logout_token=forged',
    })
    const { resourceMetrics } = await reader.collect()
    expect(points(resourceMetrics, 'tollgate.revocations')).toEqual([
      { attributes: { by: 'sub', source: 'api', stored: 'memory', removed: false }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.revocation.refused')).toEqual([
      { attributes: { issuer: issuer.issuer('acme') }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.revocation.callbacks_refused')).toEqual([
      { attributes: { endpoint: 'backchannel_logout', reason: 'malformed' }, value: 1 },
    ])
    expect(JSON.stringify(resourceMetrics)).not.toContain('alice')
    await gate.close()
  })

  it('records propagation lag, store errors and fallbacks', async () => {
    const reader = new TestReader()
    const listener = createOtelListener({
      meterProvider: new MeterProvider({ readers: [reader] }),
    })
    const issuerName = issuer.issuer('acme')
    listener({
      type: 'revocation_received',
      issuer: issuerName,
      by: 'sid',
      removed: false,
      lagMs: 3,
    })
    listener({
      type: 'revocation_received',
      issuer: issuerName,
      by: 'sid',
      removed: false,
      lagMs: 40,
    })
    listener({ type: 'revocation_store_error', error: new Error('ECONNREFUSED') })
    listener({ type: 'revocation_fallback', engaged: true, policy: 'deny' })
    const { resourceMetrics } = await reader.collect()
    const [histogram] = points(resourceMetrics, 'tollgate.revocation.propagation')
    expect(histogram?.attributes).toEqual({ by: 'sid' })
    expect(histogram?.value).toMatchObject({ count: 2, min: 0.003, max: 0.04 })
    expect(points(resourceMetrics, 'tollgate.revocation.store_errors')).toEqual([
      { attributes: {}, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.revocation.fallbacks')).toEqual([
      { attributes: { policy: 'deny', engaged: true }, value: 1 },
    ])
  })
})
