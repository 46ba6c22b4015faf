import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { metrics, trace } from '@opentelemetry/api'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TokenSourceError } from '../../src/client/errors.js'
import type { TokenSourceEvent } from '../../src/client/events.js'
import type { GateEvent } from '../../src/events.js'
import { createGate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import {
  createOtelListener,
  createSignInOtelListener,
  createTokenSourceOtelListener,
} from '../../src/otel/otel.js'
import type { SignInEvent } from '../../src/signin/events.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { points, TestReader } from '../helpers/metrics.js'

let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    tenant: { claim: 'tenant', planClaim: 'plan' },
    rateLimit: { plans: { free: [{ points: 2, durationSeconds: 60 }] }, defaultPlan: 'free' },
  }
})
afterAll(async () => {
  await issuer.close()
})

function instrumented(listenerOptions: Parameters<typeof createOtelListener>[0] = {}) {
  const reader = new TestReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  })
  const listener = createOtelListener({ meterProvider, tracerProvider, ...listenerOptions })
  return { reader, exporter, listener }
}

const bearer = (token: string) => ({
  headers: { authorization: `Bearer ${token}` },
  method: 'GET',
  url: '/api/v1/billing/subscriptions?page=1',
})

describe('createOtelListener', () => {
  it('counts a scripted set of decisions by outcome, code, reason, issuer and plan', async () => {
    const { reader, exporter, listener } = instrumented()
    const gate = createGate({ ...options, onEvent: listener })
    const acme = await issuer.mint({ tenant: 'acme', plan: 'free' })
    for (let index = 0; index < 3; index++) await gate.check(bearer(acme)).catch(() => undefined)
    await gate.check({ headers: {} }).catch(() => undefined)
    await gate.check(bearer(await issuer.mint({ aud: 'office' }))).catch(() => undefined)

    const { resourceMetrics } = await reader.collect()
    const acmeIssuer = issuer.issuer('acme')
    expect(points(resourceMetrics, 'tollgate.decisions')).toEqual(
      expect.arrayContaining([
        { attributes: { outcome: 'accepted', issuer: acmeIssuer, plan: 'free' }, value: 2 },
        {
          attributes: {
            outcome: 'rejected',
            issuer: acmeIssuer,
            plan: 'free',
            code: 'ERR_RATE_LIMITED',
            reason: 'rate_limited',
          },
          value: 1,
        },
        {
          attributes: {
            outcome: 'rejected',
            code: 'ERR_TOKEN_MISSING',
            reason: 'credentials_missing',
          },
          value: 1,
        },
        {
          attributes: { outcome: 'rejected', code: 'ERR_TOKEN_INVALID', reason: 'audience' },
          value: 1,
        },
      ]),
    )
    expect(points(resourceMetrics, 'tollgate.decisions')).toHaveLength(4)
    const histogram = points(resourceMetrics, 'tollgate.decision.duration')
    expect(
      histogram.reduce((sum, point) => sum + (point.value as { count: number }).count, 0),
    ).toBe(5)
    expect(points(resourceMetrics, 'tollgate.jwks.fetches')).toEqual([
      { attributes: { issuer: acmeIssuer, result: 'ok' }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.rate_limited')).toEqual([
      { attributes: { policy: 'free' }, value: 1 },
    ])

    const spans = exporter.getFinishedSpans()
    expect(spans).toHaveLength(5)
    expect(spans[0]?.name).toBe('tollgate.decision')
    expect(spans[0]?.attributes).toMatchObject({
      outcome: 'accepted',
      'http.request.method': 'GET',
      'url.path': '/api/v1/billing/subscriptions',
    })
    // Refusals below 500 are expected outcomes: no error status.
    expect(spans.every((span) => span.status.code === 0)).toBe(true)
  })

  it('never labels metrics with the tenant id or the subject unless asked for the tenant', async () => {
    const plain = instrumented()
    const labelled = instrumented({ tenantLabel: true })
    for (const { listener } of [plain, labelled]) {
      const gate = createGate({ ...options, onEvent: listener })
      await gate.check(bearer(await issuer.mint({ tenant: 'wayne', sub: 'bruce' })))
    }
    const text = JSON.stringify((await plain.reader.collect()).resourceMetrics.scopeMetrics)
    expect(text).not.toContain('wayne')
    expect(text).not.toContain('bruce')
    const labelledText = JSON.stringify(
      (await labelled.reader.collect()).resourceMetrics.scopeMetrics,
    )
    expect(labelledText).toContain('"tenant":"wayne"')
    expect(labelledText).not.toContain('bruce')
  })

  it('marks a 503 decision span as an error', () => {
    const { exporter, listener } = instrumented()
    listener({
      type: 'rejected',
      code: 'ERR_JWKS_UNAVAILABLE',
      reason: 'jwks_unavailable',
      detail: undefined,
      status: 503,
      issuer: undefined,
      tenant: undefined,
      plan: undefined,
      method: 'GET',
      path: '/',
      requestId: undefined,
      durationMs: 2,
    })
    expect(exporter.getFinishedSpans()[0]?.status).toMatchObject({ code: 2 })
  })

  it('passes every event to the next listener', () => {
    const seen: GateEvent[] = []
    const { listener } = instrumented({ next: (event) => seen.push(event) })
    const event: GateEvent = { type: 'limiter_store_error', error: new Error('down') }
    listener(event)
    expect(seen).toEqual([event])
  })

  it('ends in a Prometheus scrape endpoint, as the README shows', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true })
    const meterProvider = new MeterProvider({ readers: [exporter] })
    const gate = createGate({ ...options, onEvent: createOtelListener({ meterProvider }) })
    await gate.check(bearer(await issuer.mint({ tenant: 'acme' })))
    const server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const scraped = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    server.close()
    await meterProvider.shutdown()
    expect(scraped).toMatch(/^tollgate_decisions_total\{outcome="accepted",[^}]*\} 1$/m)
    expect(scraped).toMatch(/^tollgate_decision_duration_count\{outcome="accepted",[^}]*\} 1$/m)
    // Boundaries in seconds, down to 10 µs: a cached decision does not land in the first bucket of 5 s.
    expect(scraped).toMatch(/^tollgate_decision_duration_bucket\{[^}]*le="0.00001"\} [01]$/m)
  })

  it('is a harmless no-op without an OpenTelemetry SDK registered', () => {
    metrics.disable()
    trace.disable()
    const listener = createOtelListener()
    expect(() =>
      listener({ type: 'jwks_refreshed', issuer: 'https://sso/realms/a', kids: ['k'] }),
    ).not.toThrow()
  })

  const broken = {
    getMeter: () => {
      const instrument = {
        add: () => {
          throw new Error('sdk bug')
        },
        record: () => {
          throw new Error('sdk bug')
        },
      }
      return { createCounter: () => instrument, createHistogram: () => instrument }
    },
  }

  it.each([
    [
      'the gate',
      (next: (event: unknown) => void) =>
        createOtelListener({ meterProvider: broken as never, next }) as (event: unknown) => void,
      { type: 'limiter_store_error', error: undefined },
    ],
    [
      'a token source',
      (next: (event: unknown) => void) =>
        createTokenSourceOtelListener({ meterProvider: broken as never, next }) as (
          event: unknown,
        ) => void,
      { type: 'shared_cache_error', error: new Error('down') },
    ],
    [
      'sign-in',
      (next: (event: unknown) => void) =>
        createSignInOtelListener({ meterProvider: broken as never, next }) as (
          event: unknown,
        ) => void,
      { type: 'store_error', error: new Error('down') },
    ],
  ])(
    'survives a metrics SDK that throws, for %s, and still passes the event on',
    (_name, create, event) => {
      const seen: unknown[] = []
      const listener = create((received) => seen.push(received))
      expect(() => listener(event)).not.toThrow()
      expect(seen).toEqual([event])
    },
  )
})

describe('createTokenSourceOtelListener', () => {
  it('counts token requests, tokens and failures by client and grant, never by scope', async () => {
    const reader = new TestReader()
    const seen: TokenSourceEvent[] = []
    const listener = createTokenSourceOtelListener({
      meterProvider: new MeterProvider({ readers: [reader] }),
      next: (event) => seen.push(event),
    })
    const facts = {
      issuer: 'https://sso.example.com/realms/acme',
      clientId: 'billing-sync',
      grant: 'client_credentials',
      scope: 'billing:read',
      resource: [],
      audience: undefined,
    } as const
    const error = new TokenSourceError({
      code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE',
      message: 'down',
      retryable: true,
      clientId: facts.clientId,
      issuer: facts.issuer,
    })
    const events: TokenSourceEvent[] = [
      { type: 'token_requested', ...facts, attempt: 1, renewal: false },
      { type: 'token_obtained', ...facts, from: 'provider', expiresInSeconds: 300, durationMs: 12 },
      { type: 'token_requested', ...facts, attempt: 1, renewal: true },
      {
        type: 'token_request_failed',
        ...facts,
        code: error.code,
        retryable: true,
        willRetry: false,
        servingCached: true,
        error,
      },
      {
        type: 'token_renewed',
        ...facts,
        from: 'shared_cache',
        expiresInSeconds: 300,
        durationMs: 0,
      },
    ]
    for (const event of events) listener(event)
    const { resourceMetrics } = await reader.collect()
    const base = { issuer: facts.issuer, client_id: 'billing-sync', grant: 'client_credentials' }
    expect(points(resourceMetrics, 'tollgate.client.token_requests')).toEqual([
      { attributes: base, value: 2 },
    ])
    expect(points(resourceMetrics, 'tollgate.client.tokens')).toEqual([
      { attributes: { ...base, outcome: 'obtained', from: 'provider' }, value: 1 },
      { attributes: { ...base, outcome: 'renewed', from: 'shared_cache' }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.client.token_failures')).toEqual([
      {
        attributes: {
          ...base,
          code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE',
          retryable: true,
          serving_cached: true,
        },
        value: 1,
      },
    ])
    expect(seen).toEqual(events)
  })
})

describe('createSignInOtelListener', () => {
  it('counts sign-ins, refusals, refreshes, ended sessions, store errors and lost refresh locks, never a user', async () => {
    const reader = new TestReader()
    const seen: SignInEvent[] = []
    const listener = createSignInOtelListener({
      meterProvider: new MeterProvider({ readers: [reader] }),
      next: (event) => seen.push(event),
    })
    const issuer = 'https://sso.example.com/realms/acme'
    const events: SignInEvent[] = [
      { type: 'signed_in', issuer, subject: 'alice' },
      {
        type: 'signin_refused',
        code: 'ERR_SIGNIN_CALLBACK_INVALID',
        reason: 'state',
        error: undefined,
      },
      {
        type: 'session_refreshed',
        issuer,
        subject: 'alice',
        product: 'office',
        by: 'other_instance',
      },
      { type: 'session_ended', issuer, subject: 'alice', reason: 'back_channel_logout' },
      { type: 'store_error', error: new Error('down') },
      { type: 'refresh_lock_lost', issuer, subject: 'alice', product: 'office' },
    ]
    for (const event of events) listener(event)
    const { resourceMetrics } = await reader.collect()
    expect(points(resourceMetrics, 'tollgate.signin.signins')).toEqual([
      { attributes: { issuer }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.signin.refusals')).toEqual([
      { attributes: { code: 'ERR_SIGNIN_CALLBACK_INVALID', reason: 'state' }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.signin.refreshes')).toEqual([
      { attributes: { issuer, product: 'office', by: 'other_instance' }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.signin.sessions_ended')).toEqual([
      { attributes: { reason: 'back_channel_logout' }, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.signin.store_errors')).toEqual([
      { attributes: {}, value: 1 },
    ])
    expect(points(resourceMetrics, 'tollgate.signin.refresh_locks_lost')).toEqual([
      { attributes: { issuer, product: 'office' }, value: 1 },
    ])
    expect(JSON.stringify(resourceMetrics)).not.toContain('alice')
    expect(seen).toEqual(events)
  })
})
