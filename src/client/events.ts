/**
 * Events of a token source, for audit and metrics, in the gate's style: one listener (`onEvent`)
 * receives every event, nothing is built when nobody listens, and a throwing listener never
 * fails a token request. No event carries a token, a refresh token or a secret.
 *
 * @module
 */
import type { TokenSourceError, TokenSourceErrorCode } from './errors.js'

/** The grant a token request used. */
export type GrantType = 'client_credentials' | 'refresh_token'

/** What every token source event says about the request it concerns. */
export interface TokenRequestFacts {
  readonly issuer: string
  readonly clientId: string
  readonly grant: GrantType
  /** The scope requested (space-separated), `undefined` for the client's default. */
  readonly scope: string | undefined
  /** RFC 8707 resource indicators requested. */
  readonly resource: readonly string[]
  /** The `audience` parameter requested. */
  readonly audience: string | undefined
}

/** Everything a token source reports. Discriminated by `type`. */
export type TokenSourceEvent =
  | ({
      /** A request to the token endpoint starts (`attempt` counts retries from 1). */
      readonly type: 'token_requested'
      readonly attempt: number
      /** `true` when a token is held and this request replaces it. */
      readonly renewal: boolean
    } & TokenRequestFacts)
  | ({
      /**
       * A token was obtained: `token_obtained` the first time for these parameters,
       * `token_renewed` when it replaces one (early renewal, expiry, or a refused token).
       */
      readonly type: 'token_obtained' | 'token_renewed'
      /** `provider`: from the token endpoint; `shared_cache`: renewed by another instance. */
      readonly from: 'provider' | 'shared_cache'
      /** The token's `expires_in`, seconds. */
      readonly expiresInSeconds: number
      /** Time from the first attempt to the token, in milliseconds. */
      readonly durationMs: number
    } & TokenRequestFacts)
  | ({
      /**
       * An attempt failed; `willRetry` says whether another attempt follows. Also reported, with
       * no request sent, when the refresh token was already refused (`ERR_REFRESH_TOKEN_REFUSED`).
       */
      readonly type: 'token_request_failed'
      readonly code: TokenSourceErrorCode
      readonly retryable: boolean
      readonly willRetry: boolean
      /** `true` while a still-valid token is served in its place. */
      readonly servingCached: boolean
      readonly error: TokenSourceError
    } & TokenRequestFacts)
  | {
      /**
       * The shared cache (Redis) failed; the source carries on with its own cache. `error` is a
       * plain `Error` with the failure's name and message only (never the command's arguments).
       */
      readonly type: 'shared_cache_error'
      readonly issuer: string
      readonly clientId: string
      readonly error: Error
    }
  | {
      /**
       * `onRefreshToken` threw (`threw`) or did not settle within `timeoutMs` (`timed_out`): the
       * rotated refresh token is held in memory only, and is lost when the process ends.
       */
      readonly type: 'refresh_token_store_failed'
      readonly issuer: string
      readonly clientId: string
      readonly reason: 'threw' | 'timed_out'
    }

/** Receives every {@link TokenSourceEvent}. Exceptions it throws are ignored. */
export type TokenSourceEventListener = (event: TokenSourceEvent) => void
