/**
 * The admission of one request, in the order its steps run; this file is the one place to read
 * it. {@link createAdmission} builds a gate's pipeline once from the steps `openGate()` wired
 * (each `undefined` when its capability is off) and returns the functions a request runs through:
 *
 * 1. credentials: `Bearer` (RFC 6750 §2.1), or `DPoP` too when DPoP is on ({@link readToken});
 * 2. the revocation list: a new instance waits until it holds it ({@link decideRequest});
 * 3. verification: the verified-token cache, else the JWS, keys, signature and claims
 *    (`token/verify.ts`); introspection joins here, as the verifier of the issuers whose tokens
 *    are introspected (RFC 7662, `introspection/verifier.ts`), its verdicts cached alike;
 * 4. revocation, the Token Status List (draft-ietf-oauth-status-list, `status/status-list.ts`: the
 *    issuer's list, fetched and cached, says the token is still VALID), delegation (RFC 8693
 *    `act`), the client certificate (RFC 8705) and the DPoP proof (RFC 9449), then the tenant and
 *    its rate limit ({@link admitVerified} when nothing waits, {@link admitAfterWaiting}
 *    otherwise: the same steps in the same order);
 * 5. guards: scopes, roles and step-up (RFC 9470 `acr`), run by the adapters per route through
 *    {@link AdmissionPipeline.authorize}.
 *
 * A cached token, or a miss with the issuer's keys at hand, is decided without an await: the
 * adapters then reach `next()` with no microtask in between. Every refusal goes through the gate's
 * one refusal point (`refusal.ts`), which adds the challenge; the steps know nothing of HTTP.
 *
 * @module
 */
import { performance } from 'node:perf_hooks'
import { readBearerCredentials, readCredentials } from '../bearer.js'
import type { CertificateStep } from '../binding/certificate.js'
import type { CredentialScheme } from '../challenge.js'
import type { DpopStep } from '../dpop/dpop.js'
import { InvalidTokenError, TokenMissingError } from '../errors.js'
import type { Emit } from '../events.js'
import type { TenantLimiter } from '../limits/rate-limit.js'
import type { ResolvedTenant, TenantResolver } from '../limits/tenant.js'
import type { Revocation } from '../revocation/revocation.js'
import type { StatusListStep } from '../status/status-list.js'
import { actorName } from '../token/actor.js'
import { admissionOfTenant, type Verdict, type Verifier } from '../token/verify.js'
import type { Admission, CheckResult, RequestLike } from '../types.js'
import type { DelegationStep } from './actors.js'
import type { Guard } from './guards.js'
import { BEFORE_VERIFICATION, type Refusal } from './refusal.js'
import { describeRequest } from './request-facts.js'

/** The steps and settings an admission pipeline runs with, each `undefined` when off. */
export interface AdmissionSteps {
  readonly skip: ((request: RequestLike) => boolean) | undefined
  readonly credentialsRequired: boolean
  readonly verifier: Verifier
  readonly revoked: Revocation | undefined
  /** The `statusList` option's check; it waits only while a list is fetched the first time. */
  readonly statusList: StatusListStep | undefined
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

/** A refusal decided without I/O: the error to answer with, as the gate's refusal point left it. */
export class Refused {
  readonly error: unknown
  constructor(error: unknown) {
    this.error = error
  }
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const PASS: CheckResult = Object.freeze({ auth: undefined, headers: NO_HEADERS })

/**
 * `gate.check()` without the promise when an admission needs no I/O: the result itself, or else a
 * promise of it (keys to fetch, a tenant policy, the Redis limiter, DPoP). A refusal decided
 * without I/O is answered as a {@link Refused}, neither thrown nor a rejected promise; one decided
 * after I/O is the promise's rejection. What the adapters call: a cached token then reaches
 * `next()` without a microtask in between, and a refusal of a flood (forgeries, unknown kids)
 * costs no throw and no promise. Measured in a Node HTTP server, a `throw` caught there costs
 * about 1 µs (V8 builds its message for want of an outer handler), and a promise rejected before
 * its handler is attached costs Node's unhandled-rejection bookkeeping.
 */
export type Decide = (request: RequestLike) => CheckResult | Refused | Promise<CheckResult>

/** A gate's admission: {@link Decide}, and `check` and `authorize` as the {@link Gate} has them. */
export interface AdmissionPipeline {
  readonly decide: Decide
  readonly check: (request: RequestLike) => Promise<CheckResult>
  readonly authorize: (guard: Guard, auth: Admission | undefined, request?: RequestLike) => void
}

/**
 * Builds a gate's admission pipeline. Every step and setting is read once, here: the functions
 * below close over them, and a capability that is off is one comparison with `undefined` on the
 * way. Nothing here changes per request; what a verified token carries between requests is on its
 * verdict.
 */
export function createAdmission(steps: AdmissionSteps): AdmissionPipeline {
  const {
    skip,
    credentialsRequired,
    verifier,
    revoked,
    statusList,
    delegation,
    certificate,
    dpop,
  } = steps
  const { resolveTenant, tenantPolicy, limiter, emit, refusal, reasonsRead } = steps
  // The limiter's synchronous `consumeNow`, when it keeps its counts in process memory.
  const consumeNow = limiter?.consumeNow
  // Whether a verified token is answered without waiting: no DPoP proof to check against its
  // replay cache, and a tenant (if any) without a policy hook and metered in process memory. On a
  // cache hit through an adapter, the awaits and an asynchronous limiter were measured to cost
  // several times the cache lookup itself.
  const answersNow =
    dpop === undefined &&
    (resolveTenant === undefined ||
      (!tenantPolicy && (limiter === undefined || consumeNow !== undefined)))

  /**
   * Decides `request`, top to bottom; `reasonRead` says whether the refusal's reason will be read.
   * Not async on purpose: a cached token, or a miss with the keys at hand, is decided here
   * without awaits; anything that waits goes on in {@link admitAfterWaiting}.
   */
  function decideRequest(
    request: RequestLike,
    reasonRead: boolean,
  ): CheckResult | Refused | Promise<CheckResult> {
    const startedAt = emit === undefined ? 0 : performance.now()
    // 1. Credentials.
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
    // 2. The revocation list: until this instance holds it, a token waits for it, or for the
    // store to answer for that token (a new instance must not admit long-revoked tokens before
    // its first synchronization, however large the list).
    const listPending = revoked?.whenDecidable()
    if (listPending !== undefined) {
      const held = token
      return listPending.then(() => admitAfterWaiting(request, held, scheme, undefined, startedAt))
    }
    // 3. Verification: the cached verdict, else the token verified now when its keys are at hand.
    // A revoked cached token goes on like any other: the revocation step refuses it.
    const cached = verifier.cached(token, Date.now())
    if (!answersNow) return admitAfterWaiting(request, token, scheme, cached, startedAt)
    if (cached !== undefined) return admitVerified(request, token, cached, scheme, startedAt)
    let verdict: Verdict | InvalidTokenError | Promise<Verdict>
    try {
      verdict = verifier.verifyNow(token, reasonRead)
    } catch (error) {
      return new Refused(refusal(error, request, { ...BEFORE_VERIFICATION, startedAt, scheme }))
    }
    if (verdict instanceof Promise) {
      return admitAfterWaiting(request, token, scheme, verdict, startedAt)
    }
    if (verdict instanceof InvalidTokenError) {
      return new Refused(refusal(verdict, request, { ...BEFORE_VERIFICATION, startedAt, scheme }))
    }
    // 4. Everything after verification, without waiting.
    return admitVerified(request, token, verdict, scheme, startedAt)
  }

  /**
   * Step 4 for a verdict at hand when nothing after it waits (see `answersNow`): revocation,
   * delegation, the client certificate, the tenant and its limit, in the same order and with the
   * same answers, events and refusal facts as {@link admitAfterWaiting}.
   */
  function admitVerified(
    request: RequestLike,
    token: string,
    verdict: Verdict,
    scheme: CredentialScheme,
    startedAt: number,
  ): CheckResult | Refused | Promise<CheckResult> {
    let tenant: ResolvedTenant | undefined
    try {
      const revocationRefusal = revoked?.refusal(verdict.admission)
      if (revocationRefusal !== undefined) throw revocationRefusal
      if (statusList !== undefined) {
        const listed = statusList.judge(verdict.verified)
        if (listed instanceof Promise) {
          // The token's list is being fetched: the rest waits for it, its refusal included.
          return admitAfterWaiting(request, token, scheme, verdict, startedAt, listed)
        }
        if (listed !== undefined) throw listed
      }
      const actorRefusal = delegation?.refusal(verdict.admission)
      if (actorRefusal !== undefined) throw actorRefusal
      certificate?.confirm(request, verdict.verified)
      if (resolveTenant === undefined) return answer(request, verdict, startedAt)
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

  /**
   * Steps 3 and 4 for a request that waits on the way: for the token's keys or its
   * introspection, the revocation list, a DPoP proof's replay check, a tenant policy or the Redis
   * limiter. Its refusal is the returned promise's rejection, with the facts known when it was
   * decided.
   */
  async function admitAfterWaiting(
    request: RequestLike,
    token: string,
    scheme: CredentialScheme,
    pending: Verdict | Promise<Verdict> | undefined,
    startedAt: number,
    listing?: Promise<void>,
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
      if (statusList !== undefined) {
        issuer = verdict.admission.issuer
        // The fetch of its list when the synchronous path started it, else the list's answer.
        const listed = listing ?? statusList.judge(verdict.verified)
        if (listed instanceof Promise) await listed
        else if (listed !== undefined) throw listed
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
        if (proofHeaders === NO_HEADERS) return answer(request, verdict, startedAt)
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

  /** The answer of a gate without tenants: built once per verified token, then reused. */
  function answer(request: RequestLike, verdict: Verdict, startedAt: number): CheckResult {
    let result = verdict.answer
    if (result === undefined) {
      result = Object.freeze({ auth: verdict.admission, headers: NO_HEADERS })
      verdict.answer = result
    }
    if (emit !== undefined) reportAccepted(emit, request, verdict.admission, startedAt)
    return result
  }

  // What the adapters call: nobody may read the reason of a refusal they answer themselves.
  function decide(request: RequestLike): CheckResult | Refused | Promise<CheckResult> {
    return decideRequest(request, reasonsRead)
  }

  function check(request: RequestLike): Promise<CheckResult> {
    // The caller gets the refusal itself, and may read its reason.
    const decided = decideRequest(request, true)
    if (decided instanceof Promise) return decided
    return decided instanceof Refused ? Promise.reject(decided.error) : Promise.resolve(decided)
  }

  /** 5. A route's guard for a request this gate decided on (step-up's `acr` guards among them). */
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

/** The admission with its tenant, reused while the same token keeps resolving to the same tenant and plan. */
function withTenant(verdict: Verdict, tenant: ResolvedTenant): Admission {
  const last = verdict.withTenant
  if (last !== undefined && last.tenant === tenant.id && last.plan === tenant.plan) return last
  const auth = admissionOfTenant(verdict.admission, tenant.id, tenant.plan)
  verdict.withTenant = auth
  return auth
}

function reportAccepted(
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

/** Whether an admitted token is DPoP-bound (`cnf.jkt`), so was sent with the `DPoP` scheme. */
function dpopBound(auth: Admission | undefined): boolean {
  const cnf = auth?.claims.cnf
  return (
    typeof cnf === 'object' && cnf !== null && (cnf as Record<string, unknown>).jkt !== undefined
  )
}
