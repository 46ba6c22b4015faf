/**
 * Events for audit and metrics. A single listener (`onEvent`) receives every event; with no
 * listener the gate holds `undefined` and calls `emit?.(…)`, so no event object is even built.
 *
 * @module
 */
import type { RefusalReason, TollgateErrorCode } from './errors.js'

/** Why a JWKS refresh failed. */
export type JWKSFailureReason =
  | 'network'
  | 'timeout'
  | 'status'
  | 'redirect'
  | 'too_large'
  | 'invalid_json'
  | 'no_usable_keys'
  | 'discovery'

/** Why an introspection call failed (the gate answered 503). */
export type IntrospectionFailureReason =
  | 'network'
  | 'timeout'
  | 'status'
  | 'invalid_response'
  | 'signature'
  | 'discovery'
  | 'insecure_endpoint'
  | 'credentials'
  /** A body (answer, discovery document, keys) over `introspection.maxBodyBytes`: reading stopped there. */
  | 'too_large'

/** Why a Token Status List was not used (`status_list_failed`). */
export type StatusListProblem =
  | 'fetch'
  | 'too_large'
  | 'malformed'
  | 'algorithm'
  | 'token_type'
  | 'keys'
  | 'signature'
  | 'subject'
  | 'issuer'
  | 'issued_in_future'
  | 'expired'
  | 'encoding'
  | 'compression'

/**
 * What an entry names: one token (`jti`), a sign-in session (`sid`), a user (`sub`), an OAuth
 * client (`clientId`, matched against `azp`, else `client_id`), or every token of the issuer
 * (`all`, Keycloak's realm not-before; its value is `''`).
 */
export type RevocationKind = 'jti' | 'sid' | 'sub' | 'clientId' | 'all'

/** Why a logout token was refused: on the `logout_refused` event, never in the response. */
export type LogoutRefusalReason =
  | 'malformed'
  | 'too_large'
  | 'algorithm'
  | 'header'
  | 'token_type'
  | 'unknown_issuer'
  | 'unknown_kid'
  | 'signature'
  | 'keys_unavailable'
  | 'audience'
  | 'expired'
  | 'issued_in_future'
  | 'too_old'
  | 'not_yet_valid'
  | 'missing_claim'
  /** No `exp`: Back-Channel Logout 1.0 final requires it (`requireExp: false` accepts earlier drafts' tokens). */
  | 'missing_exp'
  | 'malformed_claim'
  | 'events'
  | 'nonce'
  | 'replayed'

/**
 * Who made a revocation: `gate.revoke()`/`unrevoke()`, a back-channel logout, a Keycloak push, or a
 * Shared Signals receiver applying a SET (`createSignalReceiver()`; the event's `signal` says which).
 */
export type RevocationSource = 'api' | 'backchannel_logout' | 'keycloak_push' | 'shared_signals'

/** The Security Event Token a revocation applied (`source: 'shared_signals'`). */
export interface RevocationSignal {
  /** The event type (a URI: CAEP `session-revoked`, RISC `account-disabled`, …). */
  readonly event: string
  /** The transmitter (the SET's `iss`). */
  readonly issuer: string
  /** The SET's `jti`, as on the receiver's `signal_applied` event. */
  readonly jti: string
}

/** Where a revocation went: this process only, Redis (and so every instance), or a queue until Redis is back. */
export type RevocationStorage = 'memory' | 'redis' | 'queued'

/** Revocation events. Never carry a token; `value` is the revoked `jti`, `sid`, `sub` or client id. */
export type RevocationEvent =
  | {
      readonly type: 'revoked' | 'unrevoked'
      readonly issuer: string
      readonly by: RevocationKind
      readonly value: string
      /** Tokens issued (`iat`) before this second are refused; 0 for `unrevoked`. */
      readonly notBefore: number
      readonly source: RevocationSource
      /** With `source: 'shared_signals'`: the SET applied. */
      readonly signal?: RevocationSignal
      readonly stored: RevocationStorage
    }
  | {
      /** A revocation made by another instance, learnt through Redis pub/sub. */
      readonly type: 'revocation_received'
      readonly issuer: string
      readonly by: RevocationKind
      readonly removed: boolean
      /** From the sender's publish to this instance applying it (clocks of both hosts). */
      readonly lagMs: number
    }
  | {
      /** A full resynchronization with Redis succeeded. */
      readonly type: 'revocation_synced'
      readonly entries: number
    }
  | {
      readonly type: 'revocation_store_error'
      readonly error: unknown
    }
  | {
      /**
       * `engaged: true` when this instance lost Redis and decides from what it knows
       * (`enforce-known`) or, past `denyAfterMs`, refuses with 503 (`deny`); `false` once synchronized again.
       */
      readonly type: 'revocation_fallback'
      readonly engaged: boolean
      readonly policy: 'enforce-known' | 'deny'
    }
  | {
      /**
       * The `load` hook resolved: `entries` revocations are held from the application's records,
       * `skipped` were invalid (named no single target, or a `sid`/`sub`/`clientId`/`all` without
       * `notBefore`). `trigger`: the gate started, Redis was found to have lost its data, or
       * `revocation.reloadIntervalMs` passed.
       */
      readonly type: 'revocation_loaded'
      readonly trigger: 'start' | 'store_lost' | 'reload'
      readonly entries: number
      readonly skipped: number
    }
  | {
      /**
       * The `load` hook threw or rejected; it is called again shortly (`reload`: at the next
       * interval, the entries already held are kept meanwhile).
       */
      readonly type: 'revocation_load_failed'
      readonly trigger: 'start' | 'store_lost' | 'reload'
      readonly error: unknown
    }
  | {
      /**
       * The Redis that holds the revocation list persists nothing (`persistence: 'none'`: no AOF,
       * no RDB save points) or would not say (`'unknown'`: `CONFIG GET save` refused, as on
       * managed Redis, and no AOF): when it restarts, revocations survive only in the instances'
       * memory and in `load` (`loader`: whether one is configured).
       */
      readonly type: 'revocation_store_volatile'
      readonly persistence: 'none' | 'unknown'
      readonly loader: boolean
    }
  | {
      /** A provider callback refused (400): forged, replayed, expired or malformed. */
      readonly type: 'logout_refused'
      readonly endpoint: 'backchannel_logout' | 'keycloak_push'
      readonly reason: LogoutRefusalReason | 'request'
      /** The issuer, once the signature was verified. */
      readonly issuer: string | undefined
    }

/** Everything the gate reports. Discriminated by `type`. Never carries a token. */
export type GateEvent =
  | ({
      readonly type: 'accepted'
      readonly issuer: string
      readonly subject: string | undefined
      readonly clientId: string | undefined
      /**
       * Who acts for the subject (`act.sub`, else `act.client_id`, of the token's `act` claim,
       * RFC 8693): the service that exchanged the user's token; `undefined` without `act`.
       */
      readonly actor: string | undefined
    } & DecisionFacts)
  | ({
      readonly type: 'rejected'
      readonly code: TollgateErrorCode
      /** Why, for operators (the response stays generic). */
      readonly reason: RefusalReason
      /** Context for operators, such as the token's `aud` on an audience mismatch. Never a token. */
      readonly detail: Readonly<Record<string, unknown>> | undefined
      /** The HTTP status of the refusal. */
      readonly status: number
      /** The issuer, once the token's signature was verified; `undefined` before that. */
      readonly issuer: string | undefined
    } & DecisionFacts)
  | {
      readonly type: 'jwks_refreshed'
      readonly issuer: string
      readonly kids: readonly string[]
    }
  | {
      readonly type: 'jwks_refresh_failed'
      readonly issuer: string
      readonly reason: JWKSFailureReason
      /** The HTTP status the provider answered (`404`…), with reasons `status`, `redirect` and `discovery`. */
      readonly status?: number | undefined
      /** The URL fetched (the JWKS, or the discovery document), scheme, host and path; a query shows as `?…`. */
      readonly url?: string | undefined
      readonly error: unknown
    }
  | {
      /** A refresh failed and the last good keys are still served, for at most `staleIfErrorMs`. */
      readonly type: 'jwks_stale'
      readonly issuer: string
      /** How long ago the keys in use were fetched. */
      readonly ageMs: number
    }
  | {
      /** An introspection call failed: the provider was down, slow, or answered what cannot be trusted (503). */
      readonly type: 'introspection_failed'
      readonly issuer: string
      readonly reason: IntrospectionFailureReason
      /** The HTTP status the provider answered, with reason `status`. */
      readonly status?: number | undefined
      /** The endpoint called, scheme, host and path; a query shows as `?…`. */
      readonly url?: string | undefined
      readonly error: unknown
    }
  | {
      /**
       * A token needed an introspection call and the issuer's call budget was spent (a flood of
       * unknown tokens): it was answered 503 with `Retry-After` without calling the provider (a
       * token whose verdict is held kept it). Once per budget period.
       */
      readonly type: 'introspection_budget_exhausted'
      readonly issuer: string
      /** The budget: calls per `perSeconds`. */
      readonly calls: number
      readonly perSeconds: number
    }
  | {
      /**
       * A Token Status List was fetched and verified; `size` is how many statuses it holds.
       * `from`: the issuer, or the fleet's Redis (`statusList.store`), where another instance
       * stored it (verified here all the same).
       */
      readonly type: 'status_list_fetched'
      readonly issuer: string
      /** The list's URL, scheme, host and path; a query shows as `?…`. */
      readonly url: string
      readonly size: number
      readonly from: 'issuer' | 'store'
    }
  | {
      /**
       * A Token Status List could not be had (fetch) or was refused (its signature, `typ`, `sub`,
       * times or encoding): the last good list stays in force within `staleIfErrorSeconds`,
       * else tokens naming it are answered 503. Retried with backoff, up to 30 s. With
       * `from: 'store'`, the list Redis held failed a check (a forged or damaged entry): it was
       * ignored and the list fetched from the issuer, so this alone answers nobody 503.
       */
      readonly type: 'status_list_failed'
      readonly issuer: string
      readonly url: string
      readonly problem: StatusListProblem
      readonly error: unknown
      readonly from: 'issuer' | 'store'
    }
  | {
      /**
       * The Redis of `statusList.store` failed or answered late: lists are fetched from their
       * issuers directly, and Redis is left alone for 5 s. `error` carries the name and message
       * only (ioredis attaches the command's arguments, which hold a list).
       */
      readonly type: 'status_list_store_error'
      readonly url: string
      readonly error: Error
    }
  | {
      readonly type: 'rate_limited'
      readonly tenant: string
      readonly policy: string
      /** The MCP tool refused by its own windows (`mcpGate`); absent for the tenant's limit. */
      readonly tool?: string
    }
  | {
      readonly type: 'limiter_store_error'
      readonly error: unknown
      /** The MCP tool whose windows' store failed (`mcpGate`); absent for the tenant's limit. */
      readonly tool?: string
    }
  | {
      /** `engaged: true` when the store failed and the failure policy took over; `false` when it is back. */
      readonly type: 'limiter_fallback'
      readonly engaged: boolean
      readonly policy: 'memory' | 'allow' | 'deny'
      /**
       * The MCP tool whose call found its windows' store failed, or back (`mcpGate`); absent for
       * the tenant's limit.
       */
      readonly tool?: string
    }
  | RevocationEvent

/** What an access log needs to join a decision to its request line. */
export interface DecisionFacts {
  readonly tenant: string | undefined
  /** The tenant's plan, when plans are configured. */
  readonly plan: string | undefined
  readonly method: string | undefined
  /** The request path, without the query string (which may carry secrets). */
  readonly path: string | undefined
  /** The `X-Request-Id` header, when the request has one. */
  readonly requestId: string | undefined
  /** Time the decision took, in milliseconds. */
  readonly durationMs: number
}

/** Receives every {@link GateEvent}. Exceptions it throws are swallowed: events never fail a request. */
export type GateEventListener = (event: GateEvent) => void

/** How modules report events; `undefined` when nobody listens. */
export type Emit<Event = GateEvent> = ((event: Event) => void) | undefined

/**
 * Wraps the listener so that a throwing listener can never turn into a failed request. Generic
 * so that other parts of the package (the token source's events) share the same behaviour.
 */
export function createEmit<Event = GateEvent>(
  listener: ((event: Event) => void) | undefined,
): Emit<Event> {
  if (listener === undefined) return undefined
  return (event) => {
    try {
      listener(event)
    } catch {
      // A broken metrics hook must not refuse or crash requests.
    }
  }
}
