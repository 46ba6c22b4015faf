/**
 * `createGate(options)`: validates everything once, wires the steps, and returns the gate the
 * adapters call on every request (bearer extraction → verification (cache, JWS, keys, signature,
 * claims) → DPoP proof, when on → tenant → rate limit), plus the handles an operator needs (readiness, key refresh,
 * shutdown). The steps throw coded errors that know nothing of HTTP settings; {@link Gate} has one
 * refusal point that adds this gate's challenge and reports the refusal.
 *
 * @module
 */
import { performance } from 'node:perf_hooks'

import { isB64Token, readBearerCredentials, readCredentials } from '../bearer.js'
import { type CredentialScheme, createChallenger } from '../challenge.js'
import { createDpopStep } from '../dpop/dpop.js'
import {
  type ErrorResponse,
  InvalidRequestError,
  InvalidTokenError,
  isTollgateError,
  TokenMissingError,
} from '../errors.js'
import { createEmit, type DecisionFacts } from '../events.js'
import { planNameOf } from '../limits/options.js'
import { createTenantLimiter } from '../limits/rate-limit.js'
import type { ResolvedTenant } from '../limits/tenant.js'
import { createTenantResolver } from '../limits/tenant.js'
import { createResourceMetadata } from '../metadata/resource-metadata.js'
import { IssuerKeys, type IssuerKeysStatus } from '../token/jwks.js'
import { createVerdictCaches, createVerifier, type Verdict } from '../token/verify.js'
import type { Admission, CheckResult, RequestLike } from '../types.js'
import type { Guard } from './guards.js'
import { type GateOptions, normalizeOptions } from './options.js'
import { createGateRevocation, type RevocationHandles } from './revocation-handles.js'

/**
 * What `gate.ready()` and `gate.refresh()` report: `ready` when every issuer has usable keys and,
 * with `revocation` on, `gate.ready()` found the revocation list held.
 */
export interface ReadyReport {
  readonly ready: boolean
  readonly issuers: readonly IssuerKeysStatus[]
  /**
   * With `revocation` on, from `gate.ready()`: `'held'` once this instance holds the revocation
   * list (first Redis synchronization, `load` done), `'not_held'` if it still did not after
   * waiting up to `revocation.storeTimeoutMs`.
   */
  readonly revocation?: 'held' | 'not_held'
}

/** A configured gate. Create one per service (and per set of options), at start-up. */
export interface Gate extends RevocationHandles {
  /**
   * Decides on one request. Resolves when it may proceed; rejects with a `TollgateError` otherwise
   * (400, 401, 403, 429 or 503, with the headers to send, this gate's challenge included).
   * Anything else it rejects with comes from the application's own hooks (`skip`, tenant
   * functions).
   */
  check(request: RequestLike): Promise<CheckResult>
  /**
   * Runs a guard (`requireScopes(…)` and the like) for a request this gate has decided on. Throws
   * the guard's refusal with this gate's challenge, also when nothing was admitted (anonymous
   * request on a gate with `credentialsRequired: false`), and reports it like any refusal.
   */
  authorize(guard: Guard, auth: Admission | undefined, request?: RequestLike): void
  /**
   * Fetches every issuer's keys unless fresh ones are held (start-up, readiness probes) and, with
   * `revocation` on, waits for the revocation list (at most `revocation.storeTimeoutMs`): not
   * ready until this instance holds it. Never rejects.
   */
  ready(): Promise<ReadyReport>
  /**
   * Fetches the key sets now, bypassing the cooldown: after the provider dropped a compromised
   * key, tokens it signed are refused from the next request, cached verdicts included. Never
   * rejects; the report says whether the fetch succeeded.
   *
   * @param issuer One configured issuer (exact `iss`); default every issuer.
   * @throws TypeError when `issuer` is not a configured issuer.
   */
  refresh(issuer?: string): Promise<ReadyReport>
  /**
   * Aborts key fetches under way and starts no new ones, and closes the revocation subscriber, so
   * nothing the gate holds keeps the process alive. Requests are still decided with the keys and
   * revocations already held. Idempotent.
   */
  close(): Promise<void>
  /** How the adapters handle refusals (see `GateOptions.errorHandling`). */
  readonly errorHandling: 'respond' | 'framework'
  /** The `WWW-Authenticate` realm. */
  readonly realm: string
  /** The challenge a client without credentials receives. */
  readonly challenge: string
  /**
   * The RFC 9728 metadata document's answer (200, JSON) when `request` is a GET or HEAD of this
   * gate's well-known metadata path; `undefined` otherwise, and always without `resourceMetadata`.
   * The adapters send it before authenticating: the document is public.
   */
  resourceMetadata(request: RequestLike): ErrorResponse | undefined
  /** Where the RFC 9728 metadata is served (also in every 401 challenge), when configured. */
  readonly resourceMetadataUrl: string | undefined
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const PASS: CheckResult = Object.freeze({ auth: undefined, headers: NO_HEADERS })

/**
 * `gate.check()` without the promise when an admission needs no I/O: the result itself, or else a
 * promise of it (keys to fetch, a tenant policy, the Redis limiter, DPoP). A refusal is always a
 * rejected promise, I/O or not. What the adapters call: a cached token then reaches `next()`
 * without a microtask in between.
 */
export type Decide = (request: RequestLike) => CheckResult | Promise<CheckResult>

/** Where the gate was when it refused: what the `rejected` event reports beyond the error. */
interface RefusalFacts {
  readonly issuer: string | undefined
  readonly tenant: string | undefined
  readonly plan: string | undefined
  readonly startedAt: number
  /** The scheme of the request's credentials, which decides the challenge when DPoP is on. */
  readonly scheme?: CredentialScheme | undefined
}

const BEFORE_VERIFICATION: Omit<RefusalFacts, 'startedAt'> = Object.freeze({
  issuer: undefined,
  tenant: undefined,
  plan: undefined,
})
const NO_METADATA = () => undefined

/**
 * Creates a gate.
 *
 * @example
 * ```ts
 * const gate = createGate({
 *   issuers: keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] }),
 *   audience: 'gateway',
 * })
 * const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
 * ```
 * @throws TypeError when an option is invalid or unsafe; the message names it and what to change.
 */
export function createGate(options: GateOptions): Gate {
  return openGate(options).gate
}

/** `createGate()` plus its {@link Decide} step, for the adapters (not exported by the package). */
export function openGate(options: GateOptions): { readonly gate: Gate; readonly decide: Decide } {
  const normalized = normalizeOptions(options)
  const { realm, credentialsRequired, skip } = normalized
  const emit = createEmit(options.onEvent)
  const caches = createVerdictCaches(normalized.cache)
  const dpopOptions = normalized.dpop
  const dpop =
    dpopOptions &&
    createDpopStep(dpopOptions, { clockToleranceSeconds: normalized.claims.clockToleranceSeconds })
  const metadata =
    normalized.resourceMetadata &&
    createResourceMetadata(normalized.resourceMetadata, {
      authorizationServers: normalized.issuers.map((issuer) => issuer.issuer),
      dpop: dpopOptions && {
        algorithms: dpopOptions.algorithms,
        required: dpopOptions.mode === 'required',
      },
    })
  const challenge = createChallenger({
    realm,
    resourceMetadataUrl: metadata?.url,
    dpop: dpopOptions && { mode: dpopOptions.mode, algorithms: dpopOptions.algorithms },
  })
  const hooks = { emit, onKeysRetired: caches?.purgeRetired }
  const issuers = new Map(
    normalized.issuers.map((issuer) => [
      issuer.issuer,
      {
        realm: issuer.realm,
        keys: new IssuerKeys(issuer, normalized.algorithms, normalized.jwks, hooks),
      },
    ]),
  )
  const verifier = createVerifier({
    keys: issuers,
    algorithms: new Set(normalized.algorithms),
    // With DPoP on, `cnf` is judged by the DPoP step on every request, cache hits included.
    rules:
      dpop === undefined ? normalized.claims : { ...normalized.claims, confirmationChecked: true },
    maxTokenBytes: normalized.maxTokenBytes,
    caches,
  })
  const limits = normalized.rateLimit
  // The admission names the plan the request is metered on, which the limiter's options decide.
  const resolveTenant =
    normalized.tenant &&
    createTenantResolver(
      normalized.tenant,
      limits === undefined ? undefined : (id, plan) => planNameOf(limits, id, plan),
    )
  const limiter = limits && createTenantLimiter(limits, { emit })
  // A cached token is answered without a promise chain when nothing on its way waits: a tenant
  // without a policy hook, a limiter in process memory (issue 14: on a cache hit through the Koa
  // adapter the awaits and the asynchronous limiter cost several times the lookup itself).
  const consumeNow = limiter === undefined ? undefined : limiter.consumeNow
  const synchronousTenant =
    resolveTenant !== undefined &&
    normalized.tenant?.policy === undefined &&
    (limiter === undefined || consumeNow !== undefined)
  const revocation = createGateRevocation(normalized, issuers, emit)
  const revoked = revocation.step

  /** Request facts for events, read only when someone listens. */
  function describeRequest(
    request: RequestLike | undefined,
  ): Pick<DecisionFacts, 'method' | 'path' | 'requestId'> {
    const url = request?.url
    const query = url === undefined ? -1 : url.indexOf('?')
    const requestId = request?.headers['x-request-id']
    return {
      method: request?.method,
      path: query === -1 ? url : url?.slice(0, query),
      requestId: typeof requestId === 'string' ? requestId : undefined,
    }
  }

  /**
   * The one refusal point: adds this gate's challenge and reports why. Errors that are not
   * tollgate's (a throwing `skip` or tenant policy) pass through untouched, for the application.
   */
  function refusal(error: unknown, request: RequestLike | undefined, facts: RefusalFacts): unknown {
    if (!isTollgateError(error)) return error
    challenge(error, facts.scheme)
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

  function refuse(error: unknown, request: RequestLike, facts: RefusalFacts): Promise<never> {
    return Promise.reject(refusal(error, request, facts))
  }

  function reportAccepted(request: RequestLike, auth: Admission, startedAt: number): void {
    emit?.({
      type: 'accepted',
      issuer: auth.issuer,
      subject: auth.subject,
      clientId: auth.clientId,
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

  /** The admission with its tenant, reused while the same token keeps resolving to the same tenant and plan. */
  function withTenant(verdict: Verdict, tenant: ResolvedTenant): Admission {
    const last = verdict.withTenant
    if (last !== undefined && last.tenant === tenant.id && last.plan === tenant.plan) return last
    const auth: Admission = Object.freeze({
      ...verdict.admission,
      tenant: tenant.id,
      plan: tenant.plan,
    })
    verdict.withTenant = auth
    return auth
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
  ): CheckResult | Promise<never> {
    let tenant: ResolvedTenant | undefined
    try {
      const revocationRefusal = revoked?.refusal(verdict.admission)
      if (revocationRefusal !== undefined) throw revocationRefusal
      if (resolveTenant === undefined) return accept(request, verdict, startedAt)
      tenant = resolveTenant(verdict.verified) as ResolvedTenant
      const headers =
        consumeNow === undefined ? NO_HEADERS : consumeNow(tenant, request, verdict.verified)
      const auth = withTenant(verdict, tenant)
      if (emit !== undefined) reportAccepted(request, auth, startedAt)
      return { auth, headers }
    } catch (error) {
      return refuse(error, request, {
        issuer: verdict.admission.issuer,
        tenant: tenant?.id,
        plan: tenant?.plan,
        startedAt,
        scheme,
      })
    }
  }

  /**
   * A JWS is always a b64token, so the charset is checked only for refused tokens: credentials
   * that are not one token at all (spaces, quotes, commas) are a malformed request, not a bad token.
   * Only tokens refused before they could be split need it: canonical segments are b64tokens.
   */
  function unverified(error: unknown, token: string): unknown {
    return error instanceof InvalidTokenError &&
      (error.reason === 'malformed' || error.reason === 'too_large') &&
      !isB64Token(token)
      ? new InvalidRequestError({ reason: 'malformed_credentials' })
      : error
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
      const revocationRefusal = revoked?.refusal(verdict.admission)
      if (revocationRefusal !== undefined) {
        issuer = verdict.admission.issuer
        throw revocationRefusal
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
      return refuse(issuer === undefined ? unverified(error, token) : error, request, {
        issuer,
        tenant: tenant?.id,
        plan: tenant?.plan,
        startedAt,
        scheme,
      })
    }
  }

  // Not async on purpose: a cached token, or a miss with the keys at hand, is decided without awaits.
  function decide(request: RequestLike): CheckResult | Promise<CheckResult> {
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
      return refuse(error, request, { ...BEFORE_VERIFICATION, startedAt })
    }
    if (token === undefined) {
      return credentialsRequired
        ? refuse(new TokenMissingError(), request, { ...BEFORE_VERIFICATION, startedAt })
        : PASS
    }
    // Until this instance holds the revocation list, a token waits for it (issue 19: new
    // instances admitted long-revoked tokens until their first synchronization).
    const listPending = revoked?.whenHeld()
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
    let verdict: Verdict | Promise<Verdict>
    try {
      verdict = verifier.verifyNow(token)
    } catch (error) {
      return refuse(unverified(error, token), request, {
        ...BEFORE_VERIFICATION,
        startedAt,
        scheme,
      })
    }
    if (verdict instanceof Promise) return admit(request, token, scheme, verdict, startedAt)
    return admitNow(request, verdict, scheme, startedAt)
  }

  function check(request: RequestLike): Promise<CheckResult> {
    const decided = decide(request)
    return decided instanceof Promise ? decided : Promise.resolve(decided)
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

  async function report(selected: readonly IssuerKeys[], now: boolean): Promise<ReadyReport> {
    const statuses = await Promise.all(
      selected.map((keys) => (now ? keys.refreshNow() : keys.warm())),
    )
    return {
      ready: statuses.every((status) => status.state !== 'unavailable'),
      issuers: statuses,
    }
  }

  const allKeys = [...issuers.values()].map((entry) => entry.keys)

  const gate: Gate = Object.freeze({
    check,
    authorize,
    async ready(): Promise<ReadyReport> {
      const [keys] = await Promise.all([report(allKeys, false), revoked?.whenHeld()])
      if (revoked === undefined) return keys
      const held = revoked.held
      return {
        ready: keys.ready && held,
        issuers: keys.issuers,
        revocation: held ? 'held' : 'not_held',
      }
    },
    refresh(issuer?: string): Promise<ReadyReport> {
      if (issuer === undefined) return report(allKeys, true)
      const entry = typeof issuer === 'string' ? issuers.get(issuer) : undefined
      if (entry === undefined) {
        throw new TypeError(
          'gate.refresh(issuer): "issuer" must be one of the configured issuers (the exact iss)',
        )
      }
      return report([entry.keys], true)
    },
    async close(): Promise<void> {
      for (const keys of allKeys) keys.close()
      revocation.close()
    },
    ...revocation.handles,
    errorHandling: normalized.errorHandling,
    realm,
    challenge: challenge(new TokenMissingError(), undefined).headers['WWW-Authenticate'] as string,
    resourceMetadata: metadata === undefined ? NO_METADATA : metadata.respond,
    resourceMetadataUrl: metadata?.url,
  })
  return { gate, decide }
}
