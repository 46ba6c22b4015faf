/**
 * The admission pipeline: decides one request (bearer extraction → verification (cache, JWS, keys,
 * signature, claims) → revocation → client certificate and DPoP proof, when on → tenant → rate
 * limit) and runs the
 * guards. Built once per gate from the steps `openGate()` wired; knows nothing of HTTP settings:
 * every refusal goes to the gate's one refusal point. The parts: `admission-context.ts` (the
 * steps and settings, taken once), `admission-decide.ts` (credentials, and the way to the answer),
 * `admission-accept.ts` (answers, events, the admission without waiting), `admission-admit.ts`
 * (the admission that waits).
 *
 * @module
 */
import { performance } from 'node:perf_hooks'

import type { Admission, CheckResult, RequestLike } from '../types.js'
import { type AdmissionSteps, admissionContext, Refused } from './admission-context.js'
import { decideWithFor } from './admission-decide.js'
import type { Guard } from './guards.js'

export { type AdmissionSteps, Refused } from './admission-context.js'

/**
 * `gate.check()` without the promise when an admission needs no I/O: the result itself, or else a
 * promise of it (keys to fetch, a tenant policy, the Redis limiter, DPoP). A refusal decided
 * without I/O is answered as a {@link Refused}, neither thrown nor a rejected promise; one decided
 * after I/O is the promise's rejection. What the adapters call: a cached token then reaches
 * `next()` without a microtask in between, and a refusal of a flood (forgeries, unknown kids)
 * costs no throw and no promise (issue 24: measured in a Node HTTP server, a `throw` caught
 * costs about 1 µs there, V8 building its message for want of an outer handler, and a promise
 * rejected before its handler is attached costs Node's unhandled-rejection bookkeeping).
 */
export type Decide = (request: RequestLike) => CheckResult | Refused | Promise<CheckResult>

/** A gate's admission: {@link Decide}, and `check` and `authorize` as the {@link Gate} has them. */
export interface AdmissionPipeline {
  readonly decide: Decide
  readonly check: (request: RequestLike) => Promise<CheckResult>
  readonly authorize: (guard: Guard, auth: Admission | undefined, request?: RequestLike) => void
}

/**
 * Builds a gate's admission pipeline. Every step and setting is taken once, here, into one
 * record (`AdmissionContext`); the functions a request runs through are built from it, reading
 * each step once, with no wrapper object on the way. Nothing in it changes per request.
 */
export function createAdmission(steps: AdmissionSteps): AdmissionPipeline {
  const context = admissionContext(steps)
  const { emit, refusal, reasonsRead } = context
  const decideWith = decideWithFor(context)

  function decide(request: RequestLike): CheckResult | Refused | Promise<CheckResult> {
    return decideWith(request, reasonsRead)
  }

  function check(request: RequestLike): Promise<CheckResult> {
    // The caller gets the refusal itself, and may read its reason.
    const decided = decideWith(request, true)
    if (decided instanceof Promise) return decided
    return decided instanceof Refused ? Promise.reject(decided.error) : Promise.resolve(decided)
  }

  function authorize(guard: Guard, auth: Admission | undefined, request?: RequestLike): void {
    const startedAt = emit === undefined ? 0 : performance.now()
    try {
      guard(auth)
    } catch (error) {
      throw refusal(error, request, {
        issuer: auth?.issuer,
        tenant: auth?.tenant,
        plan: auth?.plan,
        startedAt,
        // Only a DPoP request gets a DPoP-bound token admitted (a certificate-bound one is Bearer).
        scheme: dpopBound(auth) ? 'DPoP' : 'Bearer',
      })
    }
  }

  return { decide, check, authorize }
}

/** Whether an admitted token is DPoP-bound (`cnf.jkt`), so was sent with the `DPoP` scheme. */
function dpopBound(auth: Admission | undefined): boolean {
  const cnf = auth?.claims.cnf
  return (
    typeof cnf === 'object' && cnf !== null && (cnf as Record<string, unknown>).jkt !== undefined
  )
}
