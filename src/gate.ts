/**
 * `createGate(options)`: validates everything once, wires the steps, and returns `gate.check()`,
 * the framework-neutral decision the adapters call on every request:
 * bearer extraction → verification (cache, JWS, keys, signature, claims) → tenant → rate limit.
 *
 * @module
 */
import { isB64Token, readBearerCredentials } from './bearer.js'
import {
  bearerChallenge,
  InvalidRequestError,
  InvalidTokenError,
  isTollgateError,
  TokenMissingError,
} from './errors.js'
import { createEmit } from './events.js'
import type { GateContext } from './guards.js'
import { IssuerKeys, type IssuerKeysStatus } from './jwks.js'
import { type GateOptions, normalizeOptions } from './options.js'
import { createTenantLimiter } from './rate-limit.js'
import type { ResolvedTenant } from './tenant.js'
import { createTenantResolver } from './tenant.js'
import type { Admission, CheckResult, RequestLike } from './types.js'
import { createVerifier, type Verdict } from './verify.js'

/** What `gate.ready()` reports: `ready` when every issuer has usable keys. */
export interface ReadyReport {
  readonly ready: boolean
  readonly issuers: readonly IssuerKeysStatus[]
}

/** A configured gate. Create one per service (and per set of options), at start-up. */
export interface Gate {
  /**
   * Decides on one request. Resolves when it may proceed; rejects with a `TollgateError` otherwise
   * (400, 401, 403, 429 or 503, with the headers to send). Anything else it rejects with comes from
   * the application's own hooks (`skip`, tenant functions).
   */
  check(request: RequestLike): Promise<CheckResult>
  /** Fetches every issuer's keys now (start-up, readiness probes) and reports their state. Never rejects. */
  ready(): Promise<ReadyReport>
  /** How the adapters handle refusals (see `GateOptions.errorHandling`). */
  readonly errorHandling: 'respond' | 'framework'
  /** The `WWW-Authenticate` realm. */
  readonly realm: string
  /** The challenge a client without credentials receives. */
  readonly challenge: string
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const PASS: CheckResult = Object.freeze({ auth: undefined, headers: NO_HEADERS })

interface TenantMemo {
  readonly id: string
  readonly plan: string | undefined
  readonly auth: Admission
}

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
  const normalized = normalizeOptions(options)
  const realm = normalized.claims.realm
  const emit = createEmit(options.onEvent)
  const issuers = normalized.issuers.map((issuer) => ({
    issuer: issuer.issuer,
    realm: issuer.realm,
    keys: new IssuerKeys(issuer, normalized.algorithms, normalized.jwks, emit),
  }))
  const context: GateContext = Object.freeze({ realm, errorHandling: normalized.errorHandling })
  const verifier = createVerifier({
    gate: context,
    keys: new Map(issuers.map((entry) => [entry.issuer, entry])),
    algorithms: new Set(normalized.algorithms),
    rules: normalized.claims,
    maxTokenBytes: normalized.maxTokenBytes,
    cache: normalized.cache,
  })
  if (options.rateLimit !== undefined && options.tenant === undefined) {
    throw new TypeError('createGate(options): "rateLimit" needs "tenant": limits are per tenant')
  }
  const resolveTenant = options.tenant && createTenantResolver(options.tenant, { realm })
  const limiter = options.rateLimit && createTenantLimiter(options.rateLimit, { realm, emit })
  const { credentialsRequired, skip } = normalized
  const pass = Promise.resolve(PASS)

  /** A hit on a gate without tenants answers with a promise built once per verified token. */
  function accept(verdict: Verdict): Promise<CheckResult> {
    let answer = verdict.memo as Promise<CheckResult> | undefined
    if (answer === undefined) {
      answer = Promise.resolve(Object.freeze({ auth: verdict.admission, headers: NO_HEADERS }))
      verdict.memo = answer
    }
    const { admission } = verdict
    emit?.({
      type: 'accepted',
      issuer: admission.issuer,
      subject: admission.subject,
      clientId: admission.clientId,
      tenant: undefined,
    })
    return answer
  }

  /** The admission with its tenant, reused while the same token keeps resolving to the same tenant and plan. */
  function withTenant(verdict: Verdict, tenant: ResolvedTenant): Admission {
    const memo = verdict.memo as TenantMemo | undefined
    if (memo !== undefined && memo.id === tenant.id && memo.plan === tenant.plan) return memo.auth
    const auth: Admission = Object.freeze({
      ...verdict.admission,
      tenant: tenant.id,
      plan: tenant.plan,
    })
    verdict.memo = { id: tenant.id, plan: tenant.plan, auth } satisfies TenantMemo
    return auth
  }

  function refuse(
    error: unknown,
    issuer: string | undefined,
    tenant: string | undefined,
  ): Promise<never> {
    if (emit !== undefined && isTollgateError(error))
      emit({ type: 'rejected', code: error.code, issuer, tenant })
    return Promise.reject(error)
  }

  async function admit(
    request: RequestLike,
    token: string,
    cached: Verdict | undefined,
  ): Promise<CheckResult> {
    let issuer: string | undefined
    let tenantId: string | undefined
    try {
      const verdict = cached ?? (await verifier.verify(token))
      if (resolveTenant === undefined) return await accept(verdict)
      issuer = verdict.admission.issuer
      const tenant = await resolveTenant(verdict.verified)
      tenantId = tenant.id
      const headers =
        limiter === undefined
          ? NO_HEADERS
          : await limiter.consume(tenant, request, verdict.verified)
      const auth = withTenant(verdict, tenant)
      emit?.({
        type: 'accepted',
        issuer,
        subject: auth.subject,
        clientId: auth.clientId,
        tenant: tenant.id,
      })
      return { auth, headers }
    } catch (error) {
      // A JWS is always a b64token, so the charset is checked only for refused tokens: credentials
      // that are not one token at all (spaces, quotes, commas) are a malformed request, not a bad token.
      const malformed =
        error instanceof InvalidTokenError && issuer === undefined && !isB64Token(token)
      return refuse(
        malformed ? new InvalidRequestError('malformed bearer credentials', { realm }) : error,
        issuer,
        tenantId,
      )
    }
  }

  // Not async on purpose: a cached token on a gate without tenants is answered without any await.
  function check(request: RequestLike): Promise<CheckResult> {
    let token: string | undefined
    try {
      if (skip?.(request)) return pass
      token = readBearerCredentials(request, realm)
    } catch (error) {
      return refuse(error, undefined, undefined)
    }
    if (token === undefined) {
      return credentialsRequired
        ? refuse(new TokenMissingError({ realm }), undefined, undefined)
        : pass
    }
    const cached = verifier.cached(token, Date.now())
    if (cached !== undefined && resolveTenant === undefined) return accept(cached)
    return admit(request, token, cached)
  }

  return Object.freeze({
    check,
    async ready(): Promise<ReadyReport> {
      const statuses = await Promise.all(issuers.map((entry) => entry.keys.warm()))
      return {
        ready: statuses.every((status) => status.state !== 'unavailable'),
        issuers: statuses,
      }
    },
    errorHandling: normalized.errorHandling,
    realm,
    challenge: bearerChallenge(realm),
  })
}
