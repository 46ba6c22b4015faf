/**
 * The admission pipeline: decides one request (bearer extraction → verification (cache, JWS, keys,
 * signature, claims) → revocation → DPoP proof, when on → tenant → rate limit) and runs the
 * guards. Built once per gate from the steps `openGate()` wired; knows nothing of HTTP settings:
 * every refusal goes to the gate's one refusal point.
 *
 * @module
 */
import { performance } from 'node:perf_hooks'

import { readBearerCredentials, readCredentials } from '../bearer.js'
import type { CredentialScheme } from '../challenge.js'
import type { DpopStep } from '../dpop/dpop.js'
import { InvalidTokenError, TokenMissingError } from '../errors.js'
import type { Emit } from '../events.js'
import type { TenantLimiter } from '../limits/rate-limit.js'
import type { ResolvedTenant, TenantResolver } from '../limits/tenant.js'
import type { Revocation } from '../revocation/revocation.js'
import { actorName } from '../token/actor.js'
import { admissionWith, type Verdict, type Verifier } from '../token/verify.js'
import type { Admission, CheckResult, RequestLike } from '../types.js'
import type { DelegationStep } from './actors.js'
import type { Guard } from './guards.js'
import { BEFORE_VERIFICATION, type Refusal } from './refusal.js'
import { describeRequest } from './request-facts.js'

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

/** A refusal decided without I/O: the error to answer with, as the gate's refusal point left it. */
export class Refused {
  readonly error: unknown
  constructor(error: unknown) {
    this.error = error
  }
}

/** The steps and settings an admission pipeline runs with, each `undefined` when off. */
export interface AdmissionSteps {
  readonly skip: ((request: RequestLike) => boolean) | undefined
  readonly credentialsRequired: boolean
  readonly verifier: Verifier
  readonly revoked: Revocation | undefined
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

/** A gate's admission: {@link Decide}, and `check` and `authorize` as the {@link Gate} has them. */
export interface AdmissionPipeline {
  readonly decide: Decide
  readonly check: (request: RequestLike) => Promise<CheckResult>
  readonly authorize: (guard: Guard, auth: Admission | undefined, request?: RequestLike) => void
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const PASS: CheckResult = Object.freeze({ auth: undefined, headers: NO_HEADERS })

/**
 * Builds a gate's admission pipeline. Every step and setting is taken once, here: the functions
 * a request runs through read them from this closure, with no wrapper object on the way.
 */
export function createAdmission(steps: AdmissionSteps): AdmissionPipeline {
  const {
    skip,
    credentialsRequired,
    verifier,
    revoked,
    delegation,
    dpop,
    resolveTenant,
    tenantPolicy,
    limiter,
    emit,
    refusal,
    reasonsRead,
  } = steps
  // A cached token is answered without a promise chain when nothing on its way waits: a tenant
  // without a policy hook, a limiter in process memory (issue 14: on a cache hit through the Koa
  // adapter the awaits and the asynchronous limiter cost several times the lookup itself).
  const consumeNow = limiter === undefined ? undefined : limiter.consumeNow
  const synchronousTenant =
    resolveTenant !== undefined &&
    !tenantPolicy &&
    (limiter === undefined || consumeNow !== undefined)

  /** The admission with its tenant, reused while the same token keeps resolving to the same tenant and plan. */
  function withTenant(verdict: Verdict, tenant: ResolvedTenant): Admission {
    const last = verdict.withTenant
    if (last !== undefined && last.tenant === tenant.id && last.plan === tenant.plan) return last
    const { admission } = verdict
    const auth = admissionWith(
      admission.token,
      { ...admission, tenant: tenant.id, plan: tenant.plan },
      admission.tokenFor,
    )
    verdict.withTenant = auth
    return auth
  }

  function reportAccepted(request: RequestLike, auth: Admission, startedAt: number): void {
    emit?.({
      type: 'accepted',
      issuer: auth.issuer,
      subject: auth.subject,
      clientId: auth.clientId,
      actor: actorName(auth.actor),
      tenant: auth.tenant,
      plan: auth.plan,
      ...describeRequest(request),
      durationMs: performance.now() - startedAt,
    })
  }

  /** A hit on a gate without tenants answers with a result built once per verified token. */
  function accept(request: RequestLike, verdict: Verdict, startedAt: number): CheckResult {
    let answer = verdict.answer
    if (answer === undefined) {
      answer = Object.freeze({ auth: verdict.admission, headers: NO_HEADERS })
      verdict.answer = answer
    }
    if (emit !== undefined) reportAccepted(request, verdict.admission, startedAt)
    return answer
  }

  /**
   * `admit()` for a verdict at hand (cached, or verified without waiting for keys), when nothing
   * after it waits (no DPoP, see `synchronousTenant`): the same answers, events and refusal facts.
   */
  function admitNow(
    request: RequestLike,
    verdict: Verdict,
    scheme: CredentialScheme,
    startedAt: number,
  ): CheckResult | Refused {
    let tenant: ResolvedTenant | undefined
    try {
      const revocationRefusal = revoked?.refusal(verdict.admission)
      if (revocationRefusal !== undefined) throw revocationRefusal
      const actorRefusal = delegation?.refusal(verdict.admission)
      if (actorRefusal !== undefined) throw actorRefusal
      if (resolveTenant === undefined) return accept(request, verdict, startedAt)
      tenant = resolveTenant(verdict.verified) as ResolvedTenant
      const headers =
        consumeNow === undefined ? NO_HEADERS : consumeNow(tenant, request, verdict.verified)
      const auth = withTenant(verdict, tenant)
      if (emit !== undefined) reportAccepted(request, auth, startedAt)
      return { auth, headers }
    } catch (error) {
      return new Refused(
        refusal(error, request, {
          issuer: verdict.admission.issuer,
          tenant: tenant?.id,
          plan: tenant?.plan,
          startedAt,
          scheme,
        }),
      )
    }
  }

  async function admit(
    request: RequestLike,
    token: string,
    scheme: CredentialScheme,
    pending: Verdict | Promise<Verdict> | undefined,
    startedAt: number,
  ): Promise<CheckResult> {
    let issuer: string | undefined
    let tenant: ResolvedTenant | undefined
    try {
      const verdict = await (pending ?? verifier.verify(token))
      // While the revocation list loads, the token's entries are read from the store first.
      const confirming = revoked?.confirm(verdict.admission)
      if (confirming !== undefined) await confirming
      const revocationRefusal = revoked?.refusal(verdict.admission)
      if (revocationRefusal !== undefined) {
        issuer = verdict.admission.issuer
        throw revocationRefusal
      }
      const actorRefusal = delegation?.refusal(verdict.admission)
      if (actorRefusal !== undefined) {
        issuer = verdict.admission.issuer
        throw actorRefusal
      }
      let proofHeaders = NO_HEADERS
      if (dpop !== undefined) {
        issuer = verdict.admission.issuer
        proofHeaders = await dpop.confirm(request, scheme, token, verdict.verified)
      }
      if (resolveTenant === undefined) {
        if (proofHeaders === NO_HEADERS) return accept(request, verdict, startedAt)
        if (emit !== undefined) reportAccepted(request, verdict.admission, startedAt)
        return { auth: verdict.admission, headers: proofHeaders }
      }
      issuer = verdict.admission.issuer
      tenant = await resolveTenant(verdict.verified)
      const limits =
        limiter === undefined
          ? NO_HEADERS
          : await limiter.consume(tenant, request, verdict.verified)
      const headers = proofHeaders === NO_HEADERS ? limits : { ...proofHeaders, ...limits }
      const auth = withTenant(verdict, tenant)
      if (emit !== undefined) reportAccepted(request, auth, startedAt)
      return { auth, headers }
    } catch (error) {
      throw refusal(error, request, {
        issuer,
        tenant: tenant?.id,
        plan: tenant?.plan,
        startedAt,
        scheme,
      })
    }
  }

  // Not async on purpose: a cached token, or a miss with the keys at hand, is decided without awaits.
  function decideWith(
    request: RequestLike,
    reasonRead: boolean,
  ): CheckResult | Refused | Promise<CheckResult> {
    const startedAt = emit === undefined ? 0 : performance.now()
    let token: string | undefined
    let scheme: CredentialScheme = 'Bearer'
    try {
      if (skip?.(request)) return PASS
      if (dpop === undefined) {
        token = readBearerCredentials(request)
      } else {
        const credentials = readCredentials(request)
        token = credentials?.token
        if (credentials !== undefined) scheme = credentials.scheme
      }
    } catch (error) {
      return new Refused(refusal(error, request, { ...BEFORE_VERIFICATION, startedAt }))
    }
    if (token === undefined) {
      if (!credentialsRequired) return PASS
      const missing = new TokenMissingError()
      return new Refused(refusal(missing, request, { ...BEFORE_VERIFICATION, startedAt }))
    }
    // Until this instance holds the revocation list, a token waits for it, or for the store to
    // answer for it (issue 19: new instances admitted long-revoked tokens until their first
    // synchronization; issue 30: a large list outlasted the wait).
    const listPending = revoked?.whenDecidable()
    if (listPending !== undefined) {
      const held = token
      return listPending.then(() => admit(request, held, scheme, undefined, startedAt))
    }
    const cached = verifier.cached(token, Date.now())
    // A revoked cached token goes on to admit(), which refuses it with its facts; with DPoP on,
    // a cached verdict still goes through the proof check, in admit().
    if (dpop !== undefined || (resolveTenant !== undefined && !synchronousTenant)) {
      return admit(request, token, scheme, cached, startedAt)
    }
    if (cached !== undefined) return admitNow(request, cached, scheme, startedAt)
    // A miss with the issuer's keys at hand is verified and answered without awaits too.
    let verdict: Verdict | InvalidTokenError | Promise<Verdict>
    try {
      verdict = verifier.verifyNow(token, reasonRead)
    } catch (error) {
      return new Refused(refusal(error, request, { ...BEFORE_VERIFICATION, startedAt, scheme }))
    }
    if (verdict instanceof Promise) return admit(request, token, scheme, verdict, startedAt)
    if (verdict instanceof InvalidTokenError) {
      return new Refused(refusal(verdict, request, { ...BEFORE_VERIFICATION, startedAt, scheme }))
    }
    return admitNow(request, verdict, scheme, startedAt)
  }

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
        // Only a DPoP request gets a bound token admitted.
        scheme: auth?.claims.cnf === undefined ? 'Bearer' : 'DPoP',
      })
    }
  }

  return { decide, check, authorize }
}
