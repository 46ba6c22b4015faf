/**
 * Accepting a verified token: the answer (built once per verified token on a gate without
 * tenants, once per tenant and plan with them), the `accepted` event, and the admission of a
 * verdict at hand when nothing after it waits ({@link admitNow}).
 *
 * @module
 */
import { performance } from 'node:perf_hooks'

import type { CredentialScheme } from '../challenge.js'
import type { Emit } from '../events.js'
import type { ResolvedTenant } from '../limits/tenant.js'
import { actorName } from '../token/actor.js'
import { admissionWith, type Verdict } from '../token/verify.js'
import type { Admission, CheckResult, RequestLike } from '../types.js'
import { type AdmissionContext, NO_HEADERS, Refused } from './admission-context.js'
import { describeRequest } from './request-facts.js'

/** The admission with its tenant, reused while the same token keeps resolving to the same tenant and plan. */
export function withTenant(verdict: Verdict, tenant: ResolvedTenant): Admission {
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

export function reportAccepted(
  emit: NonNullable<Emit>,
  request: RequestLike,
  auth: Admission,
  startedAt: number,
): void {
  emit({
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
export function accept(
  emit: Emit,
  request: RequestLike,
  verdict: Verdict,
  startedAt: number,
): CheckResult {
  let answer = verdict.answer
  if (answer === undefined) {
    answer = Object.freeze({ auth: verdict.admission, headers: NO_HEADERS })
    verdict.answer = answer
  }
  if (emit !== undefined) reportAccepted(emit, request, verdict.admission, startedAt)
  return answer
}

/**
 * `admit()` for a verdict at hand (cached, or verified without waiting for keys), when nothing
 * after it waits (no DPoP, see `synchronousTenant`): the same answers, events and refusal facts.
 */
export type AdmitNow = (
  request: RequestLike,
  verdict: Verdict,
  scheme: CredentialScheme,
  startedAt: number,
) => CheckResult | Refused

/** {@link AdmitNow} for a gate, its steps read once from `context`. */
export function admitNowWith(context: AdmissionContext): AdmitNow {
  const { revoked, delegation, certificate, resolveTenant, consumeNow, emit, refusal } = context
  return function admitNow(request, verdict, scheme, startedAt) {
    let tenant: ResolvedTenant | undefined
    try {
      const revocationRefusal = revoked?.refusal(verdict.admission)
      if (revocationRefusal !== undefined) throw revocationRefusal
      const actorRefusal = delegation?.refusal(verdict.admission)
      if (actorRefusal !== undefined) throw actorRefusal
      certificate?.confirm(request, verdict.verified)
      if (resolveTenant === undefined) return accept(emit, request, verdict, startedAt)
      tenant = resolveTenant(verdict.verified) as ResolvedTenant
      const headers =
        consumeNow === undefined ? NO_HEADERS : consumeNow(tenant, request, verdict.verified)
      const auth = withTenant(verdict, tenant)
      if (emit !== undefined) reportAccepted(emit, request, auth, startedAt)
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
}
