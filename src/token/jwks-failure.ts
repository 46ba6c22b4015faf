/**
 * Saying that a key set cannot work as configured: without an `onEvent` listener a wrong URL
 * would only show as 503s, so a failure that asking again will not fix is told once per URL as a
 * process warning.
 *
 * @module
 */
import type { JWKSFailureReason } from '../events.js'
import { warnOnce } from '../warnings.js'
import { FetchFailure } from './fetch-json.js'

/** Code of the process warning for a key set that cannot work as configured. */
export const JWKS_WARNING_CODE = 'TOLLGATE_JWKS_UNUSABLE'

/** HTTP statuses that say "later", not "wrong address": 408 Request Timeout, 429 Too Many Requests. */
const TRANSIENT_CLIENT_STATUSES = new Set([408, 429])

/**
 * A failure that asking again will not fix: the URL or the provider's setup is wrong (4xx, a
 * redirect, not a key set, no usable keys, discovery pointing elsewhere). Network errors,
 * timeouts, 5xx and oversized bodies may be passing.
 */
function isConfigurationFailure(failure: FetchFailure | undefined): boolean {
  if (failure === undefined) return false
  switch (failure.reason) {
    case 'status':
      return (
        failure.status !== undefined &&
        failure.status >= 400 &&
        failure.status < 500 &&
        !TRANSIENT_CLIENT_STATUSES.has(failure.status)
      )
    case 'redirect':
    case 'invalid_json':
    case 'no_usable_keys':
      return true
    case 'discovery':
      // The discovery document itself failed to fetch: judged like any fetch. Otherwise it was
      // fetched and names another issuer or no usable jwks_uri.
      return failure.cause instanceof FetchFailure ? isConfigurationFailure(failure.cause) : true
    default:
      return false
  }
}

const WHAT_FAILED: Readonly<Record<JWKSFailureReason, string>> = {
  network: 'unreachable',
  timeout: 'did not answer in time',
  status: 'answered',
  redirect: 'answered with a redirect (not followed)',
  too_large: 'answered with a body over jwks.maxBodyBytes',
  invalid_json: 'answered with something that is not a JSON key set',
  no_usable_keys: 'holds no key usable with the allowed algorithms',
  discovery: 'gave no discovery document naming this issuer and a usable jwks_uri',
}

/**
 * Warns once per URL (warnOnce rate-limits), never per request, when `failure` is one that asking
 * again will not fix; the message holds no token.
 */
export function warnIfMisconfigured(issuer: string, failure: FetchFailure): void {
  if (!isConfigurationFailure(failure)) return
  const { reason, status, url } = failure
  const answered =
    status === undefined ? '' : reason === 'status' ? ` ${status}` : ` (HTTP ${status})`
  warnOnce({
    code: JWKS_WARNING_CODE,
    subject: url ?? issuer,
    message:
      `signing keys of issuer ${issuer} at ${url ?? '(unknown URL)'} ${WHAT_FAILED[reason]}${answered}: ` +
      "tokens of this issuer are answered 503 once no good keys are left. Check the issuer's jwksUri " +
      '(keycloak(): authUrl and realm names). Give onEvent to receive jwks_refresh_failed events instead.',
  })
}
