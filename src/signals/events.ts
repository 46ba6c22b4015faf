/**
 * The receiver's events for audit and metrics (`onEvent`). They carry the SET's issuer, `jti`
 * and event type, and the subject values the provider named (a user id, a session id, an email
 * when the transmitter identifies users by it): never a token, never the Authorization header.
 *
 * @module
 */
import type { SetErrorCode } from './vocabulary.js'

/** How a SET arrived. */
export type SignalDelivery = 'push' | 'poll'

/**
 * Why a SET was refused or not acted on:
 * - the SET itself (answered with its RFC 8935 error code): `request` (not a POST, no body, wrong
 *   media type, too large), `malformed`, `token_type` (no `typ: secevent+jwt`), `algorithm`
 *   (`none` or outside the allow-list), `header`, `signature`, `unknown_kid`, `unknown_issuer`,
 *   `audience`, `issued_in_future`, `too_old`, `missing_claim`, `events` (not exactly one event),
 *   `subject` (no `sub_id` or a malformed one), `authentication` (the Authorization header);
 * - temporary, answered 503 (the transmitter retries): `keys_unavailable`, `store_unavailable`;
 * - acknowledged without effect: `duplicate` (this `jti` was applied already), `unknown_event`,
 *   `unmapped_subject` (no token claim is configured for the subject's format), `no_action`
 *   (kept for listeners of earlier versions: no event the receiver knows is without action now).
 */
export type SignalRefusalReason =
  | 'request'
  | 'malformed'
  | 'token_type'
  | 'algorithm'
  | 'header'
  | 'signature'
  | 'unknown_kid'
  | 'unknown_issuer'
  | 'audience'
  | 'issued_in_future'
  | 'too_old'
  | 'missing_claim'
  | 'events'
  | 'subject'
  | 'authentication'
  | 'keys_unavailable'
  | 'store_unavailable'
  | 'duplicate'
  | 'unknown_event'
  | 'unmapped_subject'
  | 'no_action'

/** What a signal changed, on `signal_applied`. */
export interface SignalChange {
  /**
   * `revoked`/`unrevoked`: through the gate's revocation; `forgotten`: the cached verdicts of the
   * tokens it names were dropped (a claims change: they are verified, or introspected, afresh).
   */
  readonly change: 'revoked' | 'unrevoked' | 'forgotten'
  readonly issuer: string | undefined
  readonly by: 'sub' | 'sid'
  readonly value: string
  /** Tokens issued before it (seconds since the epoch) are refused; `0` for a lift or a drop. */
  readonly notBefore: number
}

/** The receiver's events. */
export type SignalEvent =
  | {
      /** A SET verified (signature, issuer, audience, time, one event). */
      readonly type: 'signal_received'
      readonly delivery: SignalDelivery
      readonly issuer: string
      readonly jti: string
      readonly event: string
    }
  | {
      /** A verified SET acted on; `changes` lists what it changed (empty for stream events). */
      readonly type: 'signal_applied'
      readonly delivery: SignalDelivery
      readonly issuer: string
      readonly jti: string
      readonly event: string
      readonly changes: readonly SignalChange[]
    }
  | {
      /**
       * A SET refused, or acknowledged without effect (`acknowledged: true`: unknown events,
       * duplicates, subjects no claim is mapped for). `err` is the RFC 8935 code it was answered
       * with, when it was refused.
       */
      readonly type: 'signal_refused'
      readonly delivery: SignalDelivery
      readonly reason: SignalRefusalReason
      readonly acknowledged: boolean
      readonly err: SetErrorCode | undefined
      /** Known once the SET verified (or, for `unknown_issuer`, never). */
      readonly issuer: string | undefined
      readonly jti: string | undefined
      readonly event: string | undefined
    }
  | {
      /**
       * What the receiver heard of its stream (SSF 1.0 §8.1.2, §8.1.4, §8.1.5), by `change`:
       * `status`, a `stream-updated` event, or a status read (`streams.status()`) that differs
       * from the last status known; `verified`, a verification event arrived;
       * `verification_requested`, `streams.verify()` asked for one; `verification_missing`, none
       * arrived within its wait (`gate.ready()` is then not ready until one does). The rest is
       * the stream as known after the change (times in ms since the epoch).
       */
      readonly type: 'signal_stream'
      readonly change: 'status' | 'verified' | 'verification_requested' | 'verification_missing'
      readonly status: 'enabled' | 'paused' | 'disabled' | undefined
      /** The transmitter's reason for the status, when it gave one (its text, at most 256 characters). */
      readonly reason: string | undefined
      readonly verifiedAt: number | undefined
      readonly lastEventAt: number | undefined
    }
  | {
      /** A poll or a store call failed; the poller backs off (`retryInMs`). */
      readonly type: 'signal_poll_error'
      readonly reason: 'network' | 'timeout' | 'status' | 'invalid_response' | 'store_unavailable'
      readonly status: number | undefined
      readonly retryInMs: number
    }
