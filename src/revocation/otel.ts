/**
 * The OpenTelemetry instruments of revocation, recorded by `tollgate/otel`'s listener: revocations
 * made, their propagation to other instances, requests refused for them, and the shared store's
 * health. Subjects and session ids are never attributes.
 *
 * @module
 */
import type { Meter } from '@opentelemetry/api'

import type { GateEvent } from '../events.js'

/** Propagation through Redis is milliseconds on a LAN, seconds when something is wrong. */
const PROPAGATION_BUCKETS_SECONDS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
]

/** Returns the recorder for revocation events (others are ignored). */
export function createRevocationInstruments(meter: Meter): (event: GateEvent) => void {
  const counter = (name: string, description: string) =>
    meter.createCounter(name, { description, unit: '{event}' })
  const made = counter('tollgate.revocations', 'Revocations made by this instance')
  const propagation = meter.createHistogram('tollgate.revocation.propagation', {
    description: 'Time from a revocation published by another instance to this one enforcing it',
    unit: 's',
    advice: { explicitBucketBoundaries: PROPAGATION_BUCKETS_SECONDS },
  })
  const refused = counter('tollgate.revocation.refused', 'Requests refused for a revoked token')
  const storeErrors = counter('tollgate.revocation.store_errors', 'Revocation store failures')
  const fallbacks = counter(
    'tollgate.revocation.fallbacks',
    'Revocation store failure policy changes',
  )
  const callbacksRefused = counter(
    'tollgate.revocation.callbacks_refused',
    'Back-channel logout and Keycloak push requests refused',
  )

  return (event) => {
    switch (event.type) {
      case 'revoked':
      case 'unrevoked':
        made.add(1, {
          by: event.by,
          source: event.source,
          stored: event.stored,
          removed: event.type === 'unrevoked',
        })
        break
      case 'revocation_received':
        propagation.record(event.lagMs / 1000, { by: event.by })
        break
      case 'rejected':
        refused.add(1, event.issuer === undefined ? {} : { issuer: event.issuer })
        break
      case 'revocation_store_error':
        storeErrors.add(1)
        break
      case 'revocation_fallback':
        fallbacks.add(1, { policy: event.policy, engaged: event.engaged })
        break
      case 'logout_refused':
        callbacksRefused.add(1, { endpoint: event.endpoint, reason: event.reason })
        break
    }
  }
}
