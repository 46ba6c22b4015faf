/**
 * One introspecting issuer: its verdict cache, its call budget, the calls in flight (one per
 * token, whoever asks), and the turn of a provider's answer into the gate's verdict, through the
 * same claim checks a JWT meets (`checkClaims`: `exp`, `nbf`, `aud`, token type, client, …).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import {
  InvalidTokenError,
  type RefusalReason,
  ServiceUnavailableError,
  TokenExpiredError,
} from '../errors.js'
import type { Emit, IntrospectionFailureReason } from '../events.js'
import { actorOf } from '../token/actor.js'
import { type ClaimRules, checkClaims, DEFAULT_READERS } from '../token/claims.js'
import { admissionWith, type Verdict, type VerifierContext } from '../token/verify.js'
import type { TokenClaims, TokenHeader } from '../types.js'
import { CallBudget } from './budget.js'
import { IntrospectionCache } from './cache.js'
import type { NormalizedIntrospection } from './options.js'
import type { AnswerKeyRules, IntrospectionEndpoint, IntrospectionResponse } from './protocol.js'

/** What `gate.ready()` reports of an introspecting issuer. */
export interface IntrospectionStatus {
  readonly issuer: string
  /** The introspection endpoint, once known (given, or discovered). */
  readonly endpoint: string | undefined
  /** `unavailable`: discovery failed, or the last call failed (requests needing one get 503). */
  readonly state: 'ready' | 'unavailable'
}

/** Seconds a client is asked to wait after a failed call. */
const RETRY_AFTER_SECONDS = 5
/** An opaque token has no JOSE header: what `auth.header` holds for it. */
const NO_HEADER: TokenHeader = Object.freeze({ alg: 'none' })
/** `token_type` values (RFC 7662 §2.2, RFC 6749 §7.1) of an access token. */
const ACCESS_TOKEN_TYPES = new Set(['bearer', 'dpop'])

// Keys of the response that describe the answer, not the token, kept out of `auth.claims`; and
// `__proto__`, which assigned as a claim would become the prototype of the claims, lending them
// an `aud`, `exp`, `scope` or `act` that no check and no log sees as the answer's own.
const NOT_CLAIMS = new Set(['active', 'iss', '__proto__'])

const invalid = (reason: RefusalReason, detail?: Readonly<Record<string, unknown>>) =>
  new InvalidTokenError(detail === undefined ? { reason } : { reason, detail })

/** A fresh copy of a remembered refusal: the gate's refusal point adds headers to what it answers. */
function copyOf(error: InvalidTokenError): InvalidTokenError {
  const options = { reason: error.reason, detail: error.detail }
  return error instanceof TokenExpiredError
    ? new TokenExpiredError(options)
    : new InvalidTokenError({ ...options, code: error.code })
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value
  for (const child of Object.values(value)) deepFreeze(child)
  return Object.freeze(value)
}

/** Everything one introspecting issuer needs, built once by the gate. */
export interface IntrospectorContext {
  readonly settings: NormalizedIntrospection
  /** The issuer's claim rules (the gate's, with the entry's own). */
  readonly rules: ClaimRules
  readonly realm: string | undefined
  readonly emit: Emit
  /** Makes `auth.tokenFor` of an admitted token, as for verified JWTs. */
  readonly tokenFor: VerifierContext['tokenFor']
  /** Milliseconds since the epoch. */
  readonly now: () => number
  /** The gate's rules for the keys of signed answers (RFC 9701). */
  readonly keyRules: AnswerKeyRules
}

export class Introspector {
  readonly issuer: string
  readonly settings: NormalizedIntrospection
  readonly cache: IntrospectionCache<Verdict>
  private readonly budget: CallBudget
  private readonly inFlight = new Map<string, Promise<Verdict>>()
  private readonly context: IntrospectorContext
  private endpoint: Promise<IntrospectionEndpoint> | undefined
  private readonly stopped = new AbortController()
  /** Set by a failed call or discovery, cleared by an answer: what `ready()` reports. */
  private failing = false
  /** Counts drops (`forgetWhere`): a call that began before the last one keeps no verdict. */
  private generation = 0
  /** Whether `status()` has asked the endpoint once. */
  private probed = false
  /** The rules of answers without `aud` from `audiencelessClients`, made on first use. */
  private audiencelessRules: ClaimRules | undefined

  constructor(context: IntrospectorContext) {
    this.context = context
    this.settings = context.settings
    this.issuer = context.settings.issuer
    this.cache = new IntrospectionCache<Verdict>(context.settings.cache)
    this.budget = new CallBudget(
      context.settings.budget.calls,
      context.settings.budget.perSeconds,
      context.now(),
    )
  }

  /** The protocol part, loaded on first use: a gate that never introspects never loads oauth4webapi. */
  private protocol(): Promise<IntrospectionEndpoint> {
    this.endpoint ??= import('./protocol.js').then(
      ({ IntrospectionEndpoint }) =>
        new IntrospectionEndpoint(this.settings, this.stopped.signal, this.context.keyRules),
    )
    return this.endpoint
  }

  /**
   * The verdict for a token (by its `key`): held, shared with a call in flight, or asked for.
   * A remembered refusal is returned, not thrown. A token that would need a call past the budget
   * is a 503 (thrown): the gate could not ask, which says nothing of the token. A verdict past
   * its fresh period is refreshed; when the refresh cannot be made (budget spent, provider
   * failing) the verdict still answers, up to `staleIfErrorSeconds`.
   */
  verify(token: string, key: string): Verdict | InvalidTokenError | Promise<Verdict> {
    const now = this.context.now()
    const held = this.cache.verdict(key, now)
    if (held !== undefined) return held
    const refused = this.cache.refusal(key, now)
    if (refused !== undefined) return copyOf(refused)
    const pending = this.inFlight.get(key)
    if (pending !== undefined) return pending
    const stale = this.cache.stale(key, now)
    if (stale !== undefined) {
      if (!this.budget.takeKnown(now)) {
        this.exhausted(now)
        return stale
      }
      return this.ask(
        key,
        this.call(token, key).catch((error: unknown) => {
          if (!(error instanceof ServiceUnavailableError)) throw error
          return stale
        }),
      )
    }
    if (!this.budget.takeUnknown(now)) {
      this.exhausted(now)
      throw new ServiceUnavailableError({
        code: 'ERR_INTROSPECTION_BUSY',
        retryAfterSeconds: this.budget.retryAfterSeconds(now),
        detail: { issuer: this.issuer },
      })
    }
    return this.ask(key, this.call(token, key))
  }

  /** Holds `call` as the one call in flight for `key` until it settles. */
  private ask(key: string, call: Promise<Verdict>): Promise<Verdict> {
    this.inFlight.set(key, call)
    // Settled either way, the slot is freed: the next request reads the cache, or asks again. A
    // drop (`forgetWhere`) may have freed it already for a newer call: that one stays.
    const free = () => {
      if (this.inFlight.get(key) === call) this.inFlight.delete(key)
    }
    call.then(free, free)
    return call
  }

  /**
   * Forgets the verdicts `matches` selects (a subject whose claims changed at the provider): the
   * next request with one of those tokens is asked about again. The calls in flight now may carry
   * an answer given before the change: they keep no verdict, and requests that come after them
   * ask anew instead of sharing them.
   */
  forgetWhere(matches: (verdict: Verdict) => boolean): void {
    this.cache.forgetWhere(matches)
    this.generation += 1
    this.inFlight.clear()
  }

  /** Reports a spent budget, once per budget period. */
  private exhausted(now: number): void {
    if (!this.budget.shouldReport(now)) return
    this.context.emit?.({
      type: 'introspection_budget_exhausted',
      issuer: this.issuer,
      calls: this.budget.calls,
      perSeconds: this.budget.perSeconds,
    })
  }

  private async call(token: string, key: string): Promise<Verdict> {
    const generation = this.generation
    let response: IntrospectionResponse
    try {
      const endpoint = await this.protocol()
      response = await endpoint.introspect(token)
      this.failing = false
    } catch (error) {
      const reason = this.failed(error)
      throw new ServiceUnavailableError({
        code: 'ERR_INTROSPECTION_UNAVAILABLE',
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        detail: { issuer: this.issuer, reason },
        cause: error,
      })
    }
    try {
      return this.conclude(token, key, response, generation)
    } catch (error) {
      if (error instanceof InvalidTokenError) {
        // A held verdict of this token (stale) no longer answers: the provider has spoken.
        this.cache.forget(key)
        this.cache.refuse(key, error, this.context.now())
      }
      throw error
    }
  }

  /** The provider's answer through the gate's checks; caches the verdict. */
  private conclude(
    token: string,
    key: string,
    response: IntrospectionResponse,
    generation: number,
  ): Verdict {
    // processIntrospectionResponse has made sure `active` is a boolean.
    if (response.active !== true) throw invalid('inactive')
    const { issuer } = this
    // RFC 7662 §2.2: `iss` is optional; when present it must be this issuer.
    if (response.iss !== undefined && response.iss !== issuer) {
      throw invalid('unknown_issuer', {
        unverifiedIss: typeof response.iss === 'string' ? response.iss.slice(0, 200) : 'non-string',
      })
    }
    const tokenType = response.token_type
    if (
      tokenType !== undefined &&
      (typeof tokenType !== 'string' || !ACCESS_TOKEN_TYPES.has(tokenType.toLowerCase()))
    ) {
      throw invalid('token_type')
    }
    const claims: Record<string, unknown> = { iss: issuer }
    for (const name of Object.keys(response)) {
      // structuredClone keeps a nested `__proto__` an own, inert member, as JSON.parse made it.
      if (!NOT_CLAIMS.has(name)) claims[name] = structuredClone(response[name])
    }
    const header = NO_HEADER
    const rules = this.rulesFor(claims)
    const now = this.context.now()
    const validity = checkClaims(header, claims, rules, now)
    const frozen = deepFreeze(claims) as TokenClaims
    const readers = rules.readers ?? DEFAULT_READERS
    const verified = Object.freeze({ header, claims: frozen, issuer, realm: this.context.realm })
    const admission = admissionWith(
      token,
      {
        header,
        claims: frozen,
        issuer,
        realm: this.context.realm,
        subject: frozen.sub,
        clientId: readers.clientId(frozen),
        scopes: readers.scopes(frozen),
        roles: readers.roles(frozen),
        tenant: undefined,
        plan: undefined,
        // A malformed chain (`null`) is no actor: the gate's delegation step refuses it.
        actor: actorOf(frozen) ?? undefined,
      },
      this.context.tokenFor(token, frozen, issuer),
    )
    const verdict: Verdict = { verified, admission, answer: undefined, withTenant: undefined }
    // Asked before a drop: the answer may predate the change the drop was for.
    if (generation === this.generation) this.cache.keep(key, verdict, validity, now)
    return verdict
  }

  /**
   * The rules an answer is judged by. An answer that names no `aud`, from a provider that never
   * sends one, stands for this API only when its client is one of `audiencelessClients`: a
   * client that obtains tokens for this API alone. Otherwise the gate's audience rule, unchanged.
   */
  private rulesFor(claims: Record<string, unknown>): ClaimRules {
    const { rules } = this.context
    const allowed = this.settings.audiencelessClients
    if (allowed === undefined || claims['aud'] !== undefined || rules.withoutAudience) return rules
    const clientId = (rules.readers ?? DEFAULT_READERS).clientId(claims as TokenClaims)
    if (clientId === undefined || !allowed.has(clientId)) {
      throw invalid('audience', {
        aud: undefined,
        clientId: clientId?.slice(0, 128),
        expected: [...allowed],
      })
    }
    this.audiencelessRules ??= { ...rules, withoutAudience: allowed }
    return this.audiencelessRules
  }

  /** Ends calls under way (503) and starts no new ones; held verdicts still answer. */
  close(): void {
    this.stopped.abort()
  }

  /** Marks the endpoint failing and reports why (`introspection_failed`); returns the reason. */
  private failed(error: unknown): IntrospectionFailureReason {
    this.failing = true
    const failure = error as { reason?: unknown; status?: number; url?: string }
    const reason =
      typeof failure.reason === 'string'
        ? (failure.reason as IntrospectionFailureReason)
        : 'network'
    this.context.emit?.({
      type: 'introspection_failed',
      issuer: this.issuer,
      reason,
      status: failure.status,
      url: failure.url,
      error,
    })
    return reason
  }

  /**
   * Finds the endpoint (discovery, when configured) and, the first time and after a failed call,
   * asks it about a random string: an answer (`active: false`) shows the endpoint reachable and
   * the gate's credentials accepted. Never rejects.
   */
  async status(): Promise<IntrospectionStatus> {
    let endpoint: IntrospectionEndpoint | undefined
    try {
      endpoint = await this.protocol()
      await endpoint.metadata()
      if (this.failing || !this.probed) {
        await endpoint.introspect(`tollgate-probe-${randomUUID()}`)
        this.probed = true
        this.failing = false
      }
    } catch (error) {
      this.failed(error)
    }
    return {
      issuer: this.issuer,
      endpoint: endpoint?.url ?? this.settings.endpoint,
      state: this.failing ? 'unavailable' : 'ready',
    }
  }
}
