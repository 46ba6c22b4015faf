/**
 * A token from the provider: one grant request after another, with bounded retries and
 * exponential backoff with full jitter. Refresh-token requests run one at a time, each with the
 * latest token, and none is sent again once it may have been spent.
 *
 * @module
 */
import { type ArrivalContext, closedError, delay, hold, usable } from './arrival-context.js'
import { type GrantResult, mayResend } from './endpoint.js'
import { isTokenSourceError, TokenSourceError } from './errors.js'
import type { SharedToken } from './shared-cache.js'
import type { Arrival, Slot } from './slot.js'

/**
 * One grant request; `sending` is called as it goes out. Refresh-token requests run one at a
 * time, each with the latest token; none goes out with a refresh token already refused.
 */
function requestOnce(
  context: ArrivalContext,
  slot: Slot,
  sending: () => void,
): Promise<GrantResult> {
  const { refresh, endpoint } = context
  if (refresh === undefined) {
    sending()
    return endpoint.request(context.grant, slot.parameters)
  }
  return refresh.run((refreshToken) => {
    sending()
    return endpoint.request('refresh_token', slot.parameters, refreshToken)
  })
}

/** Asks the provider, retrying retryable failures with exponential backoff and full jitter. */
export async function requestWithRetries(context: ArrivalContext, slot: Slot): Promise<Arrival> {
  const { settings, refresh, emit, stopped } = context
  const { clientId, now, retry } = settings
  const issuer = settings.server.issuer
  const isRenewal = slot.current !== undefined
  const startedAt = performance.now()
  for (let attempt = 1; ; attempt++) {
    if (stopped.aborted) throw closedError(context)
    const requestedAt = now()
    try {
      const result = await requestOnce(context, slot, () =>
        emit?.({ type: 'token_requested', ...slot.facts, attempt, renewal: isRenewal }),
      )
      const token: SharedToken = {
        accessToken: result.accessToken,
        obtainedAt: requestedAt,
        expiresInSeconds: result.expiresInSeconds,
      }
      return {
        held: hold(context, token, undefined),
        from: 'provider',
        durationMs: performance.now() - startedAt,
      }
    } catch (error) {
      const failure = isTokenSourceError(error)
        ? error
        : new TokenSourceError({
            code: 'ERR_TOKEN_RESPONSE_INVALID',
            message: `token request of client "${clientId}" failed unexpectedly`,
            retryable: false,
            clientId,
            issuer,
          })
      // A refresh token may have been spent (and rotated) by a request whose answer was lost:
      // sending it again would look like reuse and revoke the grant (RFC 9700 §4.14.2).
      const willRetry =
        failure.retryable &&
        (refresh === undefined || mayResend(failure)) &&
        attempt < retry.attempts &&
        !stopped.aborted
      emit?.({
        type: 'token_request_failed',
        ...slot.facts,
        code: failure.code,
        retryable: failure.retryable,
        willRetry,
        servingCached: usable(slot, now()),
        error: failure,
      })
      if (!willRetry) throw failure
      const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1))
      await delay(context, Math.random() * ceiling, slot)
    }
  }
}
