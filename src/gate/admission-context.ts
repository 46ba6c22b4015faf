/**
 * What an admission pipeline runs with: the gate's steps and settings, taken once when the gate
 * opens ({@link AdmissionSteps}), with what follows from them ({@link AdmissionContext}). Nothing
 * in it changes per request; what a verified token carries between requests is on its verdict.
 *
 * @module
 */
import type { CertificateStep } from '../binding/certificate.js'
import type { DpopStep } from '../dpop/dpop.js'
import type { Emit } from '../events.js'
import type { TenantLimiter } from '../limits/rate-limit.js'
import type { TenantResolver } from '../limits/tenant.js'
import type { Revocation } from '../revocation/revocation.js'
import type { Verifier } from '../token/verify.js'
import type { CheckResult, RequestLike } from '../types.js'
import type { DelegationStep } from './actors.js'
import type { Refusal } from './refusal.js'

/** The steps and settings an admission pipeline runs with, each `undefined` when off. */
export interface AdmissionSteps {
  readonly skip: ((request: RequestLike) => boolean) | undefined
  readonly credentialsRequired: boolean
  readonly verifier: Verifier
  readonly revoked: Revocation | undefined
  /** Certificate-bound tokens (`mtls`): no I/O, so it runs on the synchronous path too. */
  readonly certificate: CertificateStep | undefined
  /** The `delegation` option's checks of `act` and `may_act`. */
  readonly delegation: DelegationStep | undefined
  readonly dpop: DpopStep | undefined
  readonly resolveTenant: TenantResolver | undefined
  /** Whether the tenant options have a `policy` hook, which `resolveTenant` may wait on. */
  readonly tenantPolicy: boolean
  readonly limiter: TenantLimiter | undefined
  readonly emit: Emit
  /** The gate's refusal point (see `refusal.ts`). */
  readonly refusal: Refusal
  /**
   * Whether anyone reads the `reason` of a refusal the adapters answer: an event listener, or the
   * application's error handler (`errorHandling: 'framework'`). `gate.check()` always reads it.
   */
  readonly reasonsRead: boolean
}

/** The steps, and how a request may go through them without waiting. */
export interface AdmissionContext extends AdmissionSteps {
  /** The limiter's synchronous `consumeNow`, when it keeps its counts in process memory. */
  readonly consumeNow: TenantLimiter['consumeNow'] | undefined
  /**
   * Whether the tenant and the limit are decided without waiting: a tenant without a policy
   * hook, a limiter in process memory (issue 14: on a cache hit through the Koa adapter the
   * awaits and the asynchronous limiter cost several times the lookup itself).
   */
  readonly synchronousTenant: boolean
}

/** The context of {@link AdmissionSteps}. */
export function admissionContext(steps: AdmissionSteps): AdmissionContext {
  const { limiter, resolveTenant, tenantPolicy } = steps
  const consumeNow = limiter === undefined ? undefined : limiter.consumeNow
  const synchronousTenant =
    resolveTenant !== undefined &&
    !tenantPolicy &&
    (limiter === undefined || consumeNow !== undefined)
  return { ...steps, consumeNow, synchronousTenant }
}

/** A refusal decided without I/O: the error to answer with, as the gate's refusal point left it. */
export class Refused {
  readonly error: unknown
  constructor(error: unknown) {
    this.error = error
  }
}

export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
export const PASS: CheckResult = Object.freeze({ auth: undefined, headers: NO_HEADERS })
