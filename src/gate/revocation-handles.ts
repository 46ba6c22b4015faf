/**
 * What revocation adds to a gate: the step the gate runs on every request, the operator's handles
 * (`gate.revoke()`, `gate.unrevoke()`) and the provider callbacks, built once from the validated
 * options, so that `createGate()` only wires them.
 *
 * @module
 */
import type { Emit } from '../events.js'
import {
  type CallbackRequest,
  type CallbackResponse,
  createRevocationCallbacks,
} from '../revocation/callbacks.js'
import {
  createRevocation,
  type Revocation,
  type RevocationReceipt,
  type RevocationTarget,
  type RevokeOptions,
  type VerdictSubject,
} from '../revocation/revocation.js'
import type { IssuerKeys } from '../token/jwks.js'
import type { NormalizedOptions } from './options.js'

/** The revocation methods of a {@link Gate}. */
export interface RevocationHandles {
  /**
   * Refuses, on every instance sharing the store, the tokens `target` names that were issued
   * before `notBefore` (default: now). Resolves once this instance enforces it and, with Redis,
   * once Redis has it (`stored: 'redis'`) or has failed (`stored: 'queued'`: written when it is
   * back). Never rejects for a store failure.
   *
   * @example
   * ```ts
   * await gate.revoke({ sub: 'alice' }) // log alice out everywhere
   * await gate.revoke({ jti: leaked.jti }) // one token
   * ```
   * @throws TypeError (as a rejection) without the `revocation` option, or for an invalid target.
   */
  revoke(target: RevokeOptions): Promise<RevocationReceipt>
  /**
   * Removes a revocation (same `target` as given to `revoke`, without `notBefore`).
   *
   * @throws TypeError (as a rejection) without the `revocation` option, or for an invalid target.
   */
  unrevoke(target: RevocationTarget): Promise<RevocationReceipt>
  /**
   * Answers an OpenID Connect Back-Channel Logout request (the adapters' `backchannelLogout()`
   * mounts it). Never rejects for a bad request: 400 with a JSON error, 200 once the session is
   * revoked.
   *
   * @throws TypeError (as a rejection) without `revocation.callbacks`.
   */
  backchannelLogout(request: CallbackRequest): Promise<CallbackResponse>
  /**
   * Answers Keycloak's admin "push not-before" request (`{adminUrl}/k_push_not_before`; the
   * adapters' `keycloakPushNotBefore()` mounts it).
   *
   * @throws TypeError (as a rejection) without `revocation.callbacks`.
   */
  keycloakPushNotBefore(request: CallbackRequest): Promise<CallbackResponse>
  /** Whether `revocation.callbacks` is configured (the adapters refuse to mount the endpoints otherwise). */
  readonly acceptsCallbacks: boolean
}

/** A gate's revocation: its request step (`undefined` when off), handles, and shutdown. */
export interface GateRevocation {
  readonly step: Revocation | undefined
  readonly handles: RevocationHandles
  close(): void
}

const notConfigured = (what: string) => () =>
  Promise.reject(new TypeError(`gate: ${what} needs the "revocation" option`))

/**
 * Builds a gate's revocation from its validated options and the issuers' key sets. `onDrop`: told
 * of another instance's drop of cached verdicts (a Shared Signals claims change), through Redis.
 */
export function createGateRevocation(
  normalized: NormalizedOptions,
  issuers: ReadonlyMap<string, { readonly keys: IssuerKeys }>,
  emit: Emit,
  onDrop?: (subject: VerdictSubject) => void,
): GateRevocation {
  const options = normalized.revocation
  if (options === undefined) {
    return {
      step: undefined,
      handles: {
        revoke: notConfigured('revoke()'),
        unrevoke: notConfigured('unrevoke()'),
        backchannelLogout: notConfigured('backchannelLogout()'),
        keycloakPushNotBefore: notConfigured('keycloakPushNotBefore()'),
        acceptsCallbacks: false,
      },
      close() {},
    }
  }
  const { clockToleranceSeconds } = normalized.claims
  const step = createRevocation(options, {
    issuers: [...issuers.keys()],
    clockToleranceSeconds,
    emit,
    ...(onDrop === undefined ? {} : { onDrop }),
  })
  const callbacks =
    options.callbacks === undefined
      ? undefined
      : createRevocationCallbacks(
          step,
          {
            keys: issuers,
            algorithms: new Set(normalized.algorithms),
            maxTokenBytes: normalized.maxTokenBytes,
            clockToleranceSeconds,
            audiences: options.callbacks.clientIds,
            maxAgeSeconds: options.callbacks.maxAgeSeconds,
            requireExp: options.callbacks.requireExp,
          },
          emit,
        )
  const withoutCallbacks = notConfigured('a provider callback (revocation.callbacks)')
  return {
    step,
    handles: {
      // Async so that an invalid target is a rejection, like every other failure of these methods.
      revoke: async (target) => step.revoke(target, 'api'),
      unrevoke: async (target) => step.unrevoke(target, 'api'),
      backchannelLogout: callbacks?.backchannelLogout ?? withoutCallbacks,
      keycloakPushNotBefore: callbacks?.keycloakPushNotBefore ?? withoutCallbacks,
      acceptsCallbacks: callbacks !== undefined,
    },
    close: () => step.close(),
  }
}
