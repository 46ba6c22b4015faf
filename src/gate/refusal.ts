/**
 * The gate's one refusal point. The steps throw coded errors that know nothing of HTTP settings;
 * every refusal of a gate, from `check` or from a guard, passes here once: this gate's challenge
 * is added and the `rejected` event reported.
 *
 * @module
 */
import { performance } from 'node:perf_hooks'

import type { Challenger, CredentialScheme } from '../challenge.js'
import { isTollgateError } from '../errors.js'
import type { Emit } from '../events.js'
import type { RequestLike } from '../types.js'
import { describeRequest } from './request-facts.js'

/** Where the gate was when it refused: what the `rejected` event reports beyond the error. */
export interface RefusalFacts {
  readonly issuer: string | undefined
  readonly tenant: string | undefined
  readonly plan: string | undefined
  readonly startedAt: number
  /** The scheme of the request's credentials, which decides the challenge when DPoP is on. */
  readonly scheme?: CredentialScheme | undefined
}

/** The facts of a refusal before any token was verified: no issuer, tenant or plan yet. */
export const BEFORE_VERIFICATION: Omit<RefusalFacts, 'startedAt'> = Object.freeze({
  issuer: undefined,
  tenant: undefined,
  plan: undefined,
})

/**
 * Adds the challenge to a tollgate error and reports it; returns the error to answer with. Errors that
 * are not tollgate's pass through untouched.
 */
export type Refusal = (
  error: unknown,
  request: RequestLike | undefined,
  facts: RefusalFacts,
) => unknown

/** Builds a gate's refusal point from its challenge and its event listener. */
export function createRefusal(challenge: Challenger, emit: Emit): Refusal {
  /**
   * The one refusal point: adds this gate's challenge and reports why. Errors that are not
   * tollgate's (a throwing `skip` or tenant policy) pass through untouched, for the application.
   */
  function refusal(error: unknown, request: RequestLike | undefined, facts: RefusalFacts): unknown {
    if (!isTollgateError(error)) return error
    // The route's scopes when a guard ran the gate (RFC 6750 §3 `scope`), else the challenger's
    // default (the metadata's `scopes_supported`); read only here, on the way out.
    challenge(error, facts.scheme, request?.requiredScope)
    emit?.({
      type: 'rejected',
      code: error.code,
      reason: error.reason,
      detail: error.detail,
      status: error.status,
      issuer: facts.issuer,
      tenant: facts.tenant,
      plan: facts.plan,
      ...describeRequest(request),
      durationMs: performance.now() - facts.startedAt,
    })
    return error
  }

  return refusal
}
