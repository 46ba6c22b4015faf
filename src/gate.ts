/**
 * `createGate(options)`: validates everything once, wires the steps, and returns `gate.check()`,
 * the framework-neutral decision the adapters call on every request:
 * bearer extraction → verification (cache, JWS, keys, signature, claims) → tenant → rate limit.
 *
 * @module
 */
import { extractBearerToken } from './bearer.js'
import { bearerChallenge, isTollgateError, TokenMissingError } from './errors.js'
import { createEmit } from './events.js'
import { bindContext, type GateContext } from './guards.js'
import { IssuerKeys, type IssuerKeysStatus } from './jwks.js'
import { type GateOptions, normalizeOptions } from './options.js'
import { createTenantLimiter } from './rate-limit.js'
import { createTenantResolver } from './tenant.js'
import type { CheckResult, RequestLike } from './types.js'
import { createVerifier } from './verify.js'

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
  const verify = createVerifier({
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
  const context: GateContext = Object.freeze({ realm, errorHandling: normalized.errorHandling })
  const { credentialsRequired, skip } = normalized

  /** Filled in as facts become known, for the `rejected` event; only allocated when someone listens. */
  interface Trace {
    issuer: string | undefined
    tenant: string | undefined
  }

  async function admit(request: RequestLike, trace?: Trace): Promise<CheckResult> {
    if (skip?.(request)) return PASS
    const token = extractBearerToken(request, realm)
    if (token === undefined) {
      if (!credentialsRequired) return PASS
      throw new TokenMissingError({ realm })
    }
    const { verified, admission } = await verify(token)
    if (trace !== undefined) trace.issuer = admission.issuer
    if (resolveTenant === undefined) {
      bindContext(admission, context)
      emit?.({
        type: 'accepted',
        issuer: admission.issuer,
        subject: admission.subject,
        clientId: admission.clientId,
        tenant: undefined,
      })
      return { auth: admission, headers: NO_HEADERS }
    }
    const tenant = await resolveTenant(verified)
    if (trace !== undefined) trace.tenant = tenant.id
    const headers =
      limiter === undefined ? NO_HEADERS : await limiter.consume(tenant, request, verified)
    const auth = Object.freeze({ ...admission, tenant: tenant.id, plan: tenant.plan })
    bindContext(auth, context)
    emit?.({
      type: 'accepted',
      issuer: auth.issuer,
      subject: auth.subject,
      clientId: auth.clientId,
      tenant: tenant.id,
    })
    return { auth, headers }
  }

  const check =
    emit === undefined
      ? admit
      : async (request: RequestLike): Promise<CheckResult> => {
          const trace: Trace = { issuer: undefined, tenant: undefined }
          try {
            return await admit(request, trace)
          } catch (error) {
            if (isTollgateError(error)) {
              emit({
                type: 'rejected',
                code: error.code,
                issuer: trace.issuer,
                tenant: trace.tenant,
              })
            }
            throw error
          }
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
