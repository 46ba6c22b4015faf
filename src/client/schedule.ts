/**
 * When a token is renewed and until when it may be handed out, from `expires_in` alone (an access
 * token may be opaque; the client never reads it).
 *
 * @module
 */
import type { NormalizedTokenSourceOptions } from './options.js'

/** The times of one token, ms since the epoch. */
export interface TokenSchedule {
  /** From here `get()` still answers with the token, and starts one renewal in the background. */
  readonly renewAt: number
  /** From here the token is never handed out: `get()` waits for a new one. */
  readonly usableUntil: number
  readonly expiresAt: number
}

/**
 * Schedules a token requested at `requestedAt` (the request's start, so time in transit counts
 * against the token). `random` in [0, 1) places the renewal within the jitter window.
 */
export function scheduleToken(
  requestedAt: number,
  expiresInSeconds: number,
  renewal: NormalizedTokenSourceOptions['renewal'],
  random: number,
): TokenSchedule {
  const lifetimeMs = expiresInSeconds * 1000
  const expiresAt = requestedAt + lifetimeMs
  const usableUntil = expiresAt - Math.min(renewal.expiryMarginMs, lifetimeMs / 10)
  const share = renewal.atFraction - random * renewal.jitterFraction
  const renewAt = Math.min(requestedAt + lifetimeMs * share, usableUntil)
  return { renewAt, usableUntil, expiresAt }
}
