/**
 * How a key set's keys stand, read from its {@link KeyRefresh}: the status `gate.ready()`
 * reports, and the 503 a lookup gets when no usable keys can be had.
 *
 * @module
 */
import { ServiceUnavailableError } from '../errors.js'
import type { KeyRefresh } from './jwks-refresh.js'
import type { IssuerKeysStatus, NormalizedJWKSOptions } from './jwks-types.js'

/** How the keys stand, reported for `issuer` (one of those sharing them). */
export function keysStatus(
  keys: KeyRefresh,
  options: NormalizedJWKSOptions,
  issuer: string,
): IssuerKeysStatus {
  const { fetchedAt, lastFailure, table } = keys
  const age = Date.now() - fetchedAt
  const { maxAgeMs, staleIfErrorMs } = options
  const state = age < maxAgeMs ? 'fresh' : age < maxAgeMs + staleIfErrorMs ? 'stale' : 'unavailable'
  return {
    issuer,
    state,
    keys: state === 'unavailable' ? 0 : table.size,
    fetchedAt: Number.isFinite(fetchedAt) ? fetchedAt : undefined,
    lastFailure: lastFailure?.reason,
    lastFailureStatus: lastFailure?.status,
    lastFailureUrl: lastFailure?.url,
  }
}

/** `ERR_JWKS_UNAVAILABLE` for a token of `issuer`, retryable once the failure backoff ends. */
export function keysUnavailable(keys: KeyRefresh, issuer: string): ServiceUnavailableError {
  const { lastAttemptAt, failureBackoffMs, lastFailure } = keys
  const waitMs = lastAttemptAt + failureBackoffMs - Date.now()
  return new ServiceUnavailableError({
    code: 'ERR_JWKS_UNAVAILABLE',
    retryAfterSeconds: waitMs / 1000,
    detail: {
      issuer,
      lastFailure: lastFailure?.reason,
      lastFailureStatus: lastFailure?.status,
      lastFailureUrl: lastFailure?.url,
    },
  })
}
