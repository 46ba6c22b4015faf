/**
 * The admission of a request that waits on the way: for the token's keys, the revocation list,
 * a DPoP proof's replay check, a tenant policy or the Redis limiter. Its refusal is the returned
 * promise's rejection, with the facts known when it was decided.
 *
 * @module
 */
import type { CredentialScheme } from '../challenge.js'
import type { ResolvedTenant } from '../limits/tenant.js'
import type { Verdict } from '../token/verify.js'
import type { CheckResult, RequestLike } from '../types.js'
import { accept, reportAccepted, withTenant } from './admission-accept.js'
import { type AdmissionContext, NO_HEADERS } from './admission-context.js'

export type Admit = (
  request: RequestLike,
  token: string,
  scheme: CredentialScheme,
  pending: Verdict | Promise<Verdict> | undefined,
  startedAt: number,
) => Promise<CheckResult>

/** {@link Admit} for a gate, its steps read once from `context`. */
export function admitWith(context: AdmissionContext): Admit {
  const {
    verifier,
    revoked,
    delegation,
    certificate,
    dpop,
    resolveTenant,
    limiter,
    emit,
    refusal,
  } = context
  return async function admit(request, token, scheme, pending, startedAt) {
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
      if (certificate !== undefined) {
        issuer = verdict.admission.issuer
        // Before the DPoP proof: a refused certificate takes no place in the replay cache.
        certificate.confirm(request, verdict.verified)
      }
      let proofHeaders = NO_HEADERS
      if (dpop !== undefined) {
        issuer = verdict.admission.issuer
        proofHeaders = await dpop.confirm(request, scheme, token, verdict.verified)
      }
      if (resolveTenant === undefined) {
        if (proofHeaders === NO_HEADERS) return accept(emit, request, verdict, startedAt)
        if (emit !== undefined) reportAccepted(emit, request, verdict.admission, startedAt)
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
      if (emit !== undefined) reportAccepted(emit, request, auth, startedAt)
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
}
