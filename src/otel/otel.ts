/**
 * `tollgate/otel`: OpenTelemetry metrics and traces from the gate's events, through
 * `@opentelemetry/api` (an optional peer dependency: without an SDK registered, every instrument
 * is a no-op). Pass the listener as `onEvent`.
 *
 * @module
 */
import {
  type Attributes,
  type Counter,
  type Histogram,
  type MeterProvider,
  metrics,
  SpanKind,
  SpanStatusCode,
  type TracerProvider,
  trace,
} from '@opentelemetry/api'

import type { TokenSourceEvent, TokenSourceEventListener } from '../client/events.js'
import type { GateEvent, GateEventListener } from '../events.js'
import { createRevocationInstruments } from '../revocation/otel.js'
import type { SignInEvent, SignInEventListener } from '../signin/events.js'

/** Options of {@link createOtelListener}. */
export interface OtelOptions {
  /** Where instruments come from. Default: the global meter provider (`metrics.getMeterProvider()`). */
  readonly meterProvider?: MeterProvider
  /** Where spans go. Default: the global tracer provider (`trace.getTracerProvider()`). */
  readonly tracerProvider?: TracerProvider
  /**
   * Adds the tenant id as a metric attribute. Default `false`: one time series per tenant can
   * exhaust a metrics backend, and tenant ids may be personal data. Subjects are never labels.
   */
  readonly tenantLabel?: boolean
  /** Another listener that receives every event too (an audit log). Its exceptions are its own. */
  readonly next?: GateEventListener
}

const SCOPE = 'tollgate'
const DURATION_BUCKETS_SECONDS = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
  0.25, 0.5, 1, 2.5, 5,
]

/**
 * A `GateEventListener` that records:
 *
 * | instrument | kind | attributes |
 * | --- | --- | --- |
 * | `tollgate.decisions` | counter | `outcome` (`accepted`/`rejected`), `code`, `reason`, `issuer`, `plan` (`tenant` with `tenantLabel`) |
 * | `tollgate.decision.duration` | histogram, seconds | `outcome`, `code` |
 * | `tollgate.jwks.fetches` | counter | `issuer`, `result` (`ok`/`failed`), `reason` |
 * | `tollgate.jwks.stale` | counter | `issuer` |
 * | `tollgate.limiter.store_errors` | counter | none |
 * | `tollgate.limiter.fallbacks` | counter | `policy`, `engaged` |
 * | `tollgate.rate_limited` | counter | `policy` |
 * | `tollgate.revocations` | counter | `by`, `source`, `stored`, `removed` |
 * | `tollgate.revocation.propagation` | histogram, seconds | `by` |
 * | `tollgate.revocation.refused` | counter | `issuer` |
 * | `tollgate.revocation.store_errors` | counter | none |
 * | `tollgate.revocation.fallbacks` | counter | `policy`, `engaged` |
 * | `tollgate.revocation.callbacks_refused` | counter | `endpoint`, `reason` |
 *
 * and, when a tracer is active, a `tollgate.decision` span per decision (its start set back by
 * the decision's duration), with status `ERROR` for refusals of 500 and above only: a 401 is an
 * expected outcome, not a fault.
 *
 * @example
 * ```ts
 * import { createOtelListener } from 'tollgate/otel'
 * app.use(tollgate({ issuers, audience: 'gateway', onEvent: createOtelListener() }))
 * ```
 */
export function createOtelListener(options: OtelOptions = {}): GateEventListener {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE)
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE)
  const tenantLabel = options.tenantLabel === true
  const next = options.next
  const counter = (name: string, description: string): Counter =>
    meter.createCounter(name, { description, unit: '{event}' })
  const decisions = counter('tollgate.decisions', 'Requests decided by the gate')
  const duration: Histogram = meter.createHistogram('tollgate.decision.duration', {
    description: 'Time the gate took to decide on a request',
    unit: 's',
    // A cached token is decided in microseconds, a key fetch in tens of milliseconds: the SDK's
    // default boundaries (0, 5, 10 … 10 000) are meant for milliseconds and would put all in one.
    advice: { explicitBucketBoundaries: DURATION_BUCKETS_SECONDS },
  })
  const jwksFetches = counter('tollgate.jwks.fetches', 'Key set fetches, by result')
  const jwksStale = counter('tollgate.jwks.stale', 'Refreshes that failed while stale keys served')
  const storeErrors = counter('tollgate.limiter.store_errors', 'Rate-limit store failures')
  const fallbacks = counter('tollgate.limiter.fallbacks', 'Rate-limit failure policy changes')
  const rateLimited = counter('tollgate.rate_limited', 'Requests refused by a rate limit')
  const revocation = createRevocationInstruments(meter)

  function decision(event: Extract<GateEvent, { type: 'accepted' | 'rejected' }>): void {
    if (event.type === 'rejected' && event.reason === 'revoked') revocation(event)
    const attributes: Attributes = { outcome: event.type }
    if (event.issuer !== undefined) attributes.issuer = event.issuer
    if (event.plan !== undefined) attributes.plan = event.plan
    if (tenantLabel && event.tenant !== undefined) attributes.tenant = event.tenant
    if (event.type === 'rejected') {
      attributes.code = event.code
      attributes.reason = event.reason
    }
    decisions.add(1, attributes)
    const seconds = event.durationMs / 1000
    duration.record(
      seconds,
      event.type === 'rejected'
        ? { outcome: event.type, code: event.code }
        : { outcome: event.type },
    )
    const end = Date.now()
    const span = tracer.startSpan('tollgate.decision', {
      kind: SpanKind.INTERNAL,
      startTime: end - event.durationMs,
      attributes: {
        ...attributes,
        ...(event.method === undefined ? {} : { 'http.request.method': event.method }),
        ...(event.path === undefined ? {} : { 'url.path': event.path }),
        ...(event.type === 'rejected' ? { 'http.response.status_code': event.status } : {}),
      },
    })
    if (span.isRecording()) {
      if (event.type === 'rejected' && event.status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: event.code })
      }
    }
    span.end(end)
  }

  function record(event: GateEvent): void {
    switch (event.type) {
      case 'accepted':
      case 'rejected':
        decision(event)
        break
      case 'jwks_refreshed':
        jwksFetches.add(1, { issuer: event.issuer, result: 'ok' })
        break
      case 'jwks_refresh_failed':
        jwksFetches.add(1, { issuer: event.issuer, result: 'failed', reason: event.reason })
        break
      case 'jwks_stale':
        jwksStale.add(1, { issuer: event.issuer })
        break
      case 'rate_limited':
        rateLimited.add(1, { policy: event.policy })
        break
      case 'limiter_store_error':
        storeErrors.add(1)
        break
      case 'limiter_fallback':
        fallbacks.add(1, { policy: event.policy, engaged: event.engaged })
        break
      default:
        revocation(event)
    }
  }

  return listenerOf(record, next)
}

/** Options of {@link createTokenSourceOtelListener}. */
export interface TokenSourceOtelOptions {
  /** Where instruments come from. Default: the global meter provider. */
  readonly meterProvider?: MeterProvider
  /** Another listener that receives every event too. Its exceptions are its own. */
  readonly next?: TokenSourceEventListener
}

/**
 * A token source's `onEvent` (`tollgate/client`) that records, in the gate's meter (`tollgate`):
 *
 * | instrument | kind | attributes |
 * | --- | --- | --- |
 * | `tollgate.client.token_requests` | counter | `issuer`, `client_id`, `grant` (one per attempt) |
 * | `tollgate.client.tokens` | counter | `issuer`, `client_id`, `grant`, `outcome` (`obtained`/`renewed`), `from` (`provider`/`shared_cache`) |
 * | `tollgate.client.token_failures` | counter | `issuer`, `client_id`, `grant`, `code`, `retryable`, `serving_cached` |
 * | `tollgate.client.token_request.duration` | histogram, seconds | `issuer`, `client_id`, `grant` (tokens from the provider, retries included) |
 * | `tollgate.client.shared_cache_errors` | counter | `issuer`, `client_id` |
 *
 * Scopes and resources are not attributes (a caller choosing them per request could make one
 * series each); tokens and secrets never are.
 *
 * @example
 * ```ts
 * createTokenSource({ issuer, clientId, clientSecret, onEvent: createTokenSourceOtelListener() })
 * ```
 */
export function createTokenSourceOtelListener(
  options: TokenSourceOtelOptions = {},
): TokenSourceEventListener {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE)
  const next = options.next
  const counter = (name: string, description: string): Counter =>
    meter.createCounter(name, { description, unit: '{event}' })
  const requests = counter('tollgate.client.token_requests', 'Requests to a token endpoint')
  const tokens = counter('tollgate.client.tokens', 'Access tokens obtained or renewed')
  const failures = counter('tollgate.client.token_failures', 'Failed token requests')
  const sharedErrors = counter('tollgate.client.shared_cache_errors', 'Shared token cache failures')
  const storeFailures = counter(
    'tollgate.client.refresh_token_store_failures',
    'Rotated refresh tokens onRefreshToken failed to store',
  )
  const duration: Histogram = meter.createHistogram('tollgate.client.token_request.duration', {
    description: 'Time to obtain a token from the provider, retries included',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS_SECONDS },
  })

  function record(event: TokenSourceEvent): void {
    if (event.type === 'shared_cache_error') {
      sharedErrors.add(1, { issuer: event.issuer, client_id: event.clientId })
      return
    }
    if (event.type === 'refresh_token_store_failed') {
      storeFailures.add(1, {
        issuer: event.issuer,
        client_id: event.clientId,
        reason: event.reason,
      })
      return
    }
    const attributes: Attributes = {
      issuer: event.issuer,
      client_id: event.clientId,
      grant: event.grant,
    }
    switch (event.type) {
      case 'token_requested':
        requests.add(1, attributes)
        break
      case 'token_obtained':
      case 'token_renewed':
        tokens.add(1, {
          ...attributes,
          outcome: event.type === 'token_obtained' ? 'obtained' : 'renewed',
          from: event.from,
        })
        if (event.from === 'provider') duration.record(event.durationMs / 1000, attributes)
        break
      case 'token_request_failed':
        failures.add(1, {
          ...attributes,
          code: event.code,
          retryable: event.retryable,
          serving_cached: event.servingCached,
        })
        break
    }
  }

  return listenerOf(record, next)
}

/** Options of {@link createSignInOtelListener}. */
export interface SignInOtelOptions {
  /** Where instruments come from. Default: the global meter provider. */
  readonly meterProvider?: MeterProvider
  /** Another listener that receives every event too. Its exceptions are its own. */
  readonly next?: SignInEventListener
}

/**
 * Sign-in's `onEvent` (`tollgate/signin`, `signIn()` in the adapters) that records, in the gate's
 * meter (`tollgate`):
 *
 * | instrument | kind | attributes |
 * | --- | --- | --- |
 * | `tollgate.signin.signins` | counter | `issuer` |
 * | `tollgate.signin.refusals` | counter | `code`, `reason` |
 * | `tollgate.signin.refreshes` | counter | `issuer`, `product`, `by` (`this_instance`/`other_instance`) |
 * | `tollgate.signin.sessions_ended` | counter | `reason` |
 * | `tollgate.signin.store_errors` | counter | |
 * | `tollgate.signin.refresh_locks_lost` | counter | `issuer`, `product` (raise `refresh.lockMs` when it counts) |
 *
 * Never a user, a session id or a token.
 *
 * @example
 * ```ts
 * signIn({ ...options, onEvent: createSignInOtelListener() })
 * ```
 */
export function createSignInOtelListener(options: SignInOtelOptions = {}): SignInEventListener {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE)
  const next = options.next
  const counter = (name: string, description: string): Counter =>
    meter.createCounter(name, { description, unit: '{event}' })
  const signins = counter('tollgate.signin.signins', 'Completed sign-ins')
  const refusals = counter('tollgate.signin.refusals', 'Refused sign-in requests')
  const refreshes = counter('tollgate.signin.refreshes', 'Session access tokens refreshed')
  const ended = counter('tollgate.signin.sessions_ended', 'Sessions ended')
  const storeErrors = counter('tollgate.signin.store_errors', 'Session store failures')
  const locksLost = counter(
    'tollgate.signin.refresh_locks_lost',
    'Refreshes that outlasted their lock (rotated tokens not stored)',
  )

  function record(event: SignInEvent): void {
    switch (event.type) {
      case 'signed_in':
        signins.add(1, { issuer: event.issuer })
        break
      case 'signin_refused':
        refusals.add(1, { code: event.code, reason: event.reason })
        break
      case 'session_refreshed':
        refreshes.add(1, { issuer: event.issuer, product: event.product, by: event.by })
        break
      case 'session_ended':
        ended.add(1, { reason: event.reason })
        break
      case 'store_error':
        storeErrors.add(1)
        break
      case 'refresh_lock_lost':
        locksLost.add(1, { issuer: event.issuer, product: event.product })
        break
    }
  }

  return listenerOf(record, next)
}

/** A recorder as a listener: a broken metrics SDK never fails the request, token or sign-in it
 * reports on, and `next` receives every event. */
function listenerOf<Event>(
  record: (event: Event) => void,
  next: ((event: Event) => void) | undefined,
): (event: Event) => void {
  return (event) => {
    try {
      record(event)
    } catch {
      // Metrics are for operators; they must never change an answer.
    }
    next?.(event)
  }
}
