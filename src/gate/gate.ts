/**
 * `createGate(options)`: validates everything once, builds each capability's step (those switched
 * off stay `undefined`, and cost nothing per request), and returns the gate the adapters call on
 * every request, plus the handles an operator needs (readiness, key refresh, shutdown). This file
 * only wires: the order in which one request goes through the steps is `admission.ts`, the one
 * refusal point that adds this gate's challenge and reports the refusal is `refusal.ts`, and
 * `ready()`/`refresh()` are `readiness.ts`. The steps throw coded errors that know nothing of HTTP
 * settings.
 *
 * @module
 */
import { createCertificateStep } from '../binding/certificate.js'
import { createChallenger } from '../challenge.js'
import { createDpopStep } from '../dpop/dpop.js'
import { type ErrorResponse, TokenMissingError } from '../errors.js'
import { createEmit, type Emit } from '../events.js'
import { createIntrospectionStep } from '../introspection/verifier.js'
import { planNameOf } from '../limits/options.js'
import { createTenantLimiter } from '../limits/rate-limit.js'
import { createTenantResolver } from '../limits/tenant.js'
import { createResourceMetadata } from '../metadata/resource-metadata.js'
import { createStatusListStep } from '../status/status-list.js'
import { IssuerKeys, KeySets } from '../token/jwks.js'
import { createVerdictCaches, createVerifier } from '../token/verify.js'
import type { Admission, CheckResult, RequestLike } from '../types.js'
import { ANY_ACTOR, createDelegationStep } from './actors.js'
import { createAdmission, type Decide } from './admission.js'
import type { Guard } from './guards.js'
import { type GateOptions, normalizeOptions } from './options.js'
import { createReadiness, type ReadyReport } from './readiness.js'
import { createRefusal } from './refusal.js'
import { createGateRevocation, type RevocationHandles } from './revocation-handles.js'
import { createSignalHandles, registerSignalHandles, VerdictDrops } from './signal-handles.js'
import { createTokenFor } from './token-for.js'

export { type Decide, Refused } from './admission.js'
export type { ReadyReport } from './readiness.js'

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
   * Aborts key fetches, introspection calls and status list fetches under way and starts no new ones, and closes the
   * revocation subscriber, so nothing the gate holds keeps the process alive. Requests are still
   * decided with the keys, verdicts and revocations already held. Idempotent.
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

const NO_METADATA = () => undefined

// Each gate's listener (wrapped: a throwing listener fails no request), for what an adapter builds
// beside the gate from it (`mcpGate`'s tool windows): they report through it as its own steps do.
const listeners = new WeakMap<Gate, NonNullable<Emit>>()

/**
 * The listener of a gate this package built (`options.onEvent`, wrapped), for the adapters (not
 * exported by the package); `undefined` when nobody listens.
 */
export function emitOf(gate: Gate): Emit {
  return listeners.get(gate)
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
  return openGate(options).gate
}

/**
 * `createGate()` plus its {@link Decide} step, for the adapters (not exported by the package).
 * `refusalsReachApplication`: the adapter hands the refusal error itself to the application even
 * when it answers refusals (NestJS, as the `cause` of its exception), so its reason is read.
 */
export function openGate(
  options: GateOptions,
  adapter?: { readonly refusalsReachApplication?: boolean },
): { readonly gate: Gate; readonly decide: Decide } {
  const normalized = normalizeOptions(options)
  const { realm, credentialsRequired, skip } = normalized
  const emit = createEmit(options.onEvent)
  const caches = createVerdictCaches(normalized.cache)
  const dpopOptions = normalized.dpop
  const mtlsOptions = normalized.mtls
  const dpop =
    dpopOptions &&
    createDpopStep(dpopOptions, {
      clockToleranceSeconds: normalized.claims.clockToleranceSeconds,
      certificateBound: mtlsOptions !== undefined,
    })
  const certificate =
    mtlsOptions && createCertificateStep(mtlsOptions, { dpop: dpopOptions !== undefined })
  const metadata =
    normalized.resourceMetadata &&
    createResourceMetadata(normalized.resourceMetadata, {
      authorizationServers: normalized.issuers.map((issuer) => issuer.issuer),
      dpop: dpopOptions && {
        algorithms: dpopOptions.algorithms,
        required: dpopOptions.mode === 'required',
      },
      mtls: normalized.mtls !== undefined,
    })
  const challenge = createChallenger({
    realm,
    resourceMetadataUrl: metadata?.url,
    scopesSupported: normalized.resourceMetadata?.scopesSupported,
    dpop: dpopOptions && { mode: dpopOptions.mode, algorithms: dpopOptions.algorithms },
  })
  const hooks = { emit, onKeysRetired: caches?.purgeRetired }
  // Issuers naming one jwksUri share its key set: one fetch for all of them (a thousand realms
  // behind one proxy must not make a thousand fetches).
  const keySets = new KeySets()
  const issuers = new Map(
    normalized.issuers.map((issuer) => [
      issuer.issuer,
      {
        realm: issuer.realm,
        keys: new IssuerKeys(issuer, normalized.algorithms, normalized.jwks, hooks, keySets),
      },
    ]),
  )
  const tokenFor = createTokenFor(normalized.delegation)
  const jwtVerifier = createVerifier({
    keys: issuers,
    algorithms: new Set(normalized.algorithms),
    // With DPoP or mTLS on, `cnf` is judged by their steps on every request, cache hits included.
    rules:
      dpop === undefined && certificate === undefined
        ? normalized.claims
        : { ...normalized.claims, confirmationChecked: true },
    maxTokenBytes: normalized.maxTokenBytes,
    caches,
    tokenFor,
  })
  // Issuers whose tokens are introspected (RFC 7662): a verifier that routes each token.
  const introspection = createIntrospectionStep({
    jwt: jwtVerifier,
    issuers: normalized.issuers,
    rules:
      dpop === undefined && certificate === undefined
        ? normalized.claims
        : { ...normalized.claims, confirmationChecked: true },
    maxTokenBytes: normalized.maxTokenBytes,
    emit,
    tokenFor,
    keyRules: {
      algorithms: normalized.algorithms,
      allowInsecureHttp: normalized.jwks.allowInsecureHttp,
    },
  })
  const verifier = introspection?.verifier ?? jwtVerifier
  const limits = normalized.rateLimit
  // The admission names the plan the request is metered on, which the limiter's options decide.
  const resolveTenant =
    normalized.tenant &&
    createTenantResolver(
      normalized.tenant,
      limits === undefined ? undefined : (id, plan) => planNameOf(limits, id, plan),
    )
  const limiter = limits && createTenantLimiter(limits, { emit })
  // A Shared Signals claims change drops a subject's cached verdicts, here and, through the
  // revocation store's channel, on the other instances.
  const drops = new VerdictDrops(caches, introspection)
  const revocation = createGateRevocation(normalized, issuers, emit, drops.later)
  const revoked = revocation.step
  const refusal = createRefusal(challenge, emit)
  // Token Status Lists are verified with the keys of the issuer of the token that names them.
  const statusList =
    normalized.statusList &&
    createStatusListStep(normalized.statusList, {
      keysOf: (issuer) => issuers.get(issuer)?.keys,
      algorithms: new Set(normalized.algorithms),
      clockToleranceSeconds: normalized.claims.clockToleranceSeconds,
      emit,
    })
  const { decide, check, authorize } = createAdmission({
    skip,
    credentialsRequired,
    verifier,
    revoked,
    statusList,
    certificate,
    // Without the option any well-formed chain is admitted; an `act` that is not one is refused
    // all the same, so that `auth.actor` undefined always means a token without an actor.
    delegation: createDelegationStep(normalized.delegation ?? ANY_ACTOR),
    dpop,
    resolveTenant,
    tenantPolicy: normalized.tenant?.policy !== undefined,
    limiter,
    emit,
    refusal,
    // Nobody reads the reason of a refusal an adapter answers itself with no listener: a backed-off
    // unknown kid is then refused without reading its payload (most of the cost of such a flood).
    reasonsRead:
      emit !== undefined ||
      normalized.errorHandling === 'framework' ||
      adapter?.refusalsReachApplication === true,
  })
  const { ready, refresh, attachStream } = createReadiness(issuers, revoked, introspection?.status)

  const gate: Gate = Object.freeze({
    check,
    authorize,
    ready,
    refresh,
    async close(): Promise<void> {
      for (const { keys } of issuers.values()) keys.close()
      introspection?.close()
      statusList?.close()
      revocation.close()
    },
    ...revocation.handles,
    errorHandling: normalized.errorHandling,
    realm,
    challenge: challenge(new TokenMissingError(), undefined).headers['WWW-Authenticate'] as string,
    resourceMetadata: metadata === undefined ? NO_METADATA : metadata.respond,
    resourceMetadataUrl: metadata?.url,
  })
  if (emit !== undefined) listeners.set(gate, emit)
  registerSignalHandles(
    gate,
    createSignalHandles({ revoked, handles: revocation.handles, drops, issuers, attachStream }),
  )
  return { gate, decide }
}
