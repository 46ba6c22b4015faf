/**
 * Deciding one request: skipped, no credentials, or a token, then the shortest way to its answer.
 * A cached token, or a miss with the issuer's keys at hand, is decided without awaits
 * ({@link admitNow}); anything that waits goes through {@link admit}.
 *
 * @module
 */
import { performance } from 'node:perf_hooks'

import { readBearerCredentials, readCredentials } from '../bearer.js'
import type { CredentialScheme } from '../challenge.js'
import { InvalidTokenError, TokenMissingError } from '../errors.js'
import type { Verdict } from '../token/verify.js'
import type { CheckResult, RequestLike } from '../types.js'
import { admitNowWith } from './admission-accept.js'
import { admitWith } from './admission-admit.js'
import { type AdmissionContext, PASS, Refused } from './admission-context.js'
import { BEFORE_VERIFICATION } from './refusal.js'

/**
 * Decides `request`; `reasonRead` says whether the refusal's reason will be read.
 * Not async on purpose: a cached token, or a miss with the keys at hand, is decided without awaits.
 */
export type DecideWith = (
  request: RequestLike,
  reasonRead: boolean,
) => CheckResult | Refused | Promise<CheckResult>

/** {@link DecideWith} for a gate, its steps read once from `context`. */
export function decideWithFor(context: AdmissionContext): DecideWith {
  const { skip, credentialsRequired, verifier, revoked, dpop, resolveTenant, emit, refusal } =
    context
  const { synchronousTenant } = context
  const admit = admitWith(context)
  const admitNow = admitNowWith(context)
  return function decideWith(request, reasonRead) {
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
}
