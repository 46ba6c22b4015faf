/**
 * The events of revocation: made here, received from another instance, the shared store's
 * health, and refused provider callbacks. Part of {@link GateEvent}.
 *
 * @module
 */
import type { LogoutRefusalReason } from './logout-token.js'
import type { RevocationKind } from './revocation-list.js'

/** Who made a revocation: `gate.revoke()`/`unrevoke()`, a back-channel logout, or a Keycloak push. */
export type RevocationSource = 'api' | 'backchannel_logout' | 'keycloak_push'

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
      /** A provider callback refused (400): forged, replayed, expired or malformed. */
      readonly type: 'logout_refused'
      readonly endpoint: 'backchannel_logout' | 'keycloak_push'
      readonly reason: LogoutRefusalReason | 'request'
      /** The issuer, once the signature was verified. */
      readonly issuer: string | undefined
    }
