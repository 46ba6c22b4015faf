/**
 * Events of sign-in, for audit and metrics, in the gate's style: one listener (`onEvent`), nothing
 * built when nobody listens, a throwing listener never fails a request. No event carries a token,
 * a code, a cookie, a session id or a key.
 *
 * @module
 */
import type { ProviderErrorWords, SignInErrorCode, SignInRefusalReason } from './errors.js'

/** Why a session ended. */
export type SessionEndReason =
  | 'logout'
  | 'expired'
  | 'unreadable'
  | 'refresh_refused'
  | 'back_channel_logout'
  | 'front_channel_logout'
  | 'replaced'

/**
 * What the token endpoint answered when it refused a session's refresh token: its OAuth `error`
 * (`invalid_grant`, `invalid_request`…; at most 64 characters, control characters removed) and
 * the HTTP status. Its `error_description` is not carried: a provider may quote the token in it.
 */
export interface RefreshRefusal {
  readonly error: string | undefined
  readonly status: number | undefined
}

/** Everything sign-in reports. Discriminated by `type`. */
export type SignInEvent =
  | {
      /** A user completed sign-in and a session was created. */
      readonly type: 'signed_in'
      readonly issuer: string
      readonly subject: string
    }
  | {
      /** A sign-in route refused a request, or a handler could not have a token. */
      readonly type: 'signin_refused'
      readonly code: SignInErrorCode
      readonly reason: SignInRefusalReason
      /** The error underneath (a provider's, the store's), for operators. Never holds a token. */
      readonly error: unknown
      /**
       * With `reason: 'provider_error'`: the `error` and `error_description` the provider sent
       * back to the redirect URI (`access_denied`, `invalid_target`…), bounded, control
       * characters removed.
       */
      readonly provider?: ProviderErrorWords
    }
  | {
      /** A session's access token for `product` was refreshed, here or by another instance. */
      readonly type: 'session_refreshed'
      readonly issuer: string
      readonly subject: string
      /** The product's name, `''` for the sign-in's own token. */
      readonly product: string
      readonly by: 'this_instance' | 'other_instance'
    }
  | {
      /** A session ended. */
      readonly type: 'session_ended'
      readonly issuer: string | undefined
      readonly subject: string | undefined
      readonly reason: SessionEndReason
      /**
       * With `reason: 'refresh_refused'`: what the provider answered, when it answered (a session
       * without a refresh token ends without one).
       */
      readonly refusal?: RefreshRefusal
    }
  | {
      /**
       * A refresh outlasted its lock: the session still exists, but another owner's lock (or
       * none) was in place, so the rotated tokens were not stored. The request is answered 503;
       * raise `refresh.lockMs` if this recurs.
       */
      readonly type: 'refresh_lock_lost'
      readonly issuer: string
      readonly subject: string
      /** The product's name, `''` for the sign-in's own token. */
      readonly product: string
    }
  | {
      /** The session store failed; the request was answered 503. */
      readonly type: 'store_error'
      readonly error: unknown
    }

/** Receives every {@link SignInEvent}. Exceptions it throws are ignored. */
export type SignInEventListener = (event: SignInEvent) => void
