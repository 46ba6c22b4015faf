/**
 * A gate's verification step when issuers introspect: routes each token to local JWT
 * verification or to its issuer's introspection, and answers with the same {@link Verifier}
 * interface, so the admission pipeline (revocation, DPoP, tenant, rate limits, guards) runs
 * unchanged after it.
 *
 * Routing: a JWT whose payload names a configured issuer goes to that issuer (`jwt`: verified
 * locally; `introspection`: introspected; `jwt-then-introspection`: verified locally, and
 * introspected when the issuer's keys do not verify it). A JWT naming another issuer is refused
 * as today (`unknown_issuer`): it is never sent to a provider. Any other token (opaque) goes
 * where the issuers' `opaqueTokens` rules send it: a token must never reach a provider that
 * cannot be its issuer (RFC 7662 §4: the token and the gate's credentials would go to that
 * provider's operator), so with several introspecting issuers the rules are required, and a
 * token no rule claims, or that two claim, is refused `unrouted` and sent nowhere.
 *
 * @module
 */
import { InvalidTokenError } from '../errors.js'
import type { Emit } from '../events.js'
import { DEFAULT_ALGORITHMS } from '../token/algorithms.js'
import type { ClaimRules } from '../token/claims.js'
import { parsePayload, splitCompactJWS } from '../token/jws.js'
import type { Verdict, Verifier, VerifierContext } from '../token/verify.js'
import { tokenKey } from './cache.js'
import { type IntrospectionStatus, Introspector } from './introspector.js'
import type { NormalizedIntrospection, NormalizedOpaqueRule } from './options.js'
import type { AnswerKeyRules } from './protocol.js'

/** What the gate hands over to build its introspecting verification. */
export interface IntrospectionContext {
  /** The gate's JWT verifier, over every configured issuer. */
  readonly jwt: Verifier
  /** Every configured issuer (exact `iss`) with its introspection settings, in configured order. */
  readonly issuers: readonly {
    readonly issuer: string
    readonly realm: string | undefined
    readonly introspection: NormalizedIntrospection | undefined
  }[]
  /** The gate's claim rules (with `byIssuer`, and `confirmationChecked` when DPoP is on). */
  readonly rules: ClaimRules
  readonly maxTokenBytes: number
  readonly emit: Emit
  /** Makes `auth.tokenFor` of an admitted token, as for verified JWTs. */
  readonly tokenFor: VerifierContext['tokenFor']
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number
  /** The gate's rules for keys (RFC 9701 signed answers). Default: its default algorithms, https keys. */
  readonly keyRules?: AnswerKeyRules
}

const DEFAULT_KEY_RULES: AnswerKeyRules = {
  algorithms: DEFAULT_ALGORITHMS,
  allowInsecureHttp: false,
}

/** The introspecting verification of one gate. */
export interface IntrospectionStep {
  readonly verifier: Verifier
  /** What `gate.ready()` reports of each introspecting issuer. */
  status(): Promise<readonly IntrospectionStatus[]>
  /**
   * Forgets the verdicts `matches` selects in every introspecting issuer's cache (a subject whose
   * claims changed at the provider): their tokens are asked about again.
   */
  forgetWhere(matches: (verdict: Verdict) => boolean): void
  /** `gate.close()`: ends calls under way and starts no new ones. */
  close(): void
}

/** JWT refusals that mean "not a JWT of this issuer's keys": `jwt-then-introspection` introspects them. */
const NOT_OURS = new Set(['signature', 'unknown_kid', 'algorithm'])

function notOurs(outcome: unknown): boolean {
  return outcome instanceof InvalidTokenError && NOT_OURS.has(outcome.reason)
}

/** `undefined` when no issuer introspects: the gate then keeps its JWT verifier as it is. */
export function createIntrospectionStep(
  context: IntrospectionContext,
): IntrospectionStep | undefined {
  const { jwt, maxTokenBytes } = context
  const now = context.now ?? (() => Date.now())
  const byIssuer = new Map<string, Introspector>()
  /** Where each introspecting issuer sits in `issuers`, for construction messages. */
  const paths = new Map<string, string>()
  for (const [index, { issuer, realm, introspection }] of context.issuers.entries()) {
    if (introspection === undefined) continue
    paths.set(issuer, `issuers[${index}].introspection`)
    const own = context.rules.byIssuer?.get(issuer)
    const rules: ClaimRules =
      own === undefined
        ? context.rules
        : { ...own, confirmationChecked: context.rules.confirmationChecked === true }
    byIssuer.set(
      issuer,
      new Introspector({
        settings: introspection,
        rules,
        realm,
        emit: context.emit,
        tokenFor: context.tokenFor,
        now,
        keyRules: context.keyRules ?? DEFAULT_KEY_RULES,
      }),
    )
  }
  if (byIssuer.size === 0) return undefined
  const introspectors = [...byIssuer.values()]
  const routeOpaque = opaqueRouting(introspectors, paths)

  // The last token's key: `cached()` and `verifyNow()` of one request hash it once.
  let lastToken = ''
  let lastKey = ''
  function keyOf(token: string): string {
    if (token !== lastToken) {
      lastKey = tokenKey(token)
      lastToken = token
    }
    return lastKey
  }

  /**
   * Where a token goes: an introspector (first trying the JWT when `jwtFirst`), the JWT verifier
   * (`undefined`), or nowhere (`UNROUTED`).
   */
  function routeOf(
    token: string,
  ): { to: Introspector; jwtFirst: boolean } | typeof UNROUTED | undefined {
    const split = splitCompactJWS(token)
    const payload = split === undefined ? undefined : parsePayload(split.payloadBytes)
    const iss = payload?.iss
    if (typeof iss === 'string') {
      const to = byIssuer.get(iss)
      if (to !== undefined) return { to, jwtFirst: to.settings.mode === 'jwt-then-introspection' }
      // A JWT of a `jwt` issuer, or of no configured issuer: the JWT path decides (and refuses
      // the latter as unknown_issuer); it is never sent to a provider.
      return undefined
    }
    const to = routeOpaque(token)
    return to === undefined ? UNROUTED : { to, jwtFirst: false }
  }

  function verifyNow(
    token: string,
    reasonRead = true,
  ): Verdict | InvalidTokenError | Promise<Verdict> {
    // Size first, before any hashing or parsing: the JWT path refuses it as too_large.
    if (token.length > maxTokenBytes) return jwt.verifyNow(token, reasonRead)
    const route = routeOf(token)
    if (route === undefined) return jwt.verifyNow(token, reasonRead)
    if (route === UNROUTED) return new InvalidTokenError({ reason: 'unrouted' })
    const { to } = route
    if (!route.jwtFirst) return to.verify(token, keyOf(token))
    let outcome: Verdict | InvalidTokenError | Promise<Verdict>
    try {
      outcome = jwt.verifyNow(token, true)
    } catch (error) {
      if (notOurs(error)) return to.verify(token, keyOf(token))
      throw error
    }
    if (outcome instanceof Promise) {
      return outcome.catch((error: unknown) => {
        if (!notOurs(error)) throw error
        return settle(to.verify(token, tokenKey(token)))
      })
    }
    return notOurs(outcome) ? to.verify(token, keyOf(token)) : outcome
  }

  return {
    verifier: {
      cached(token, nowMs) {
        const hit = jwt.cached(token, nowMs)
        if (hit !== undefined || token.length > maxTokenBytes) return hit
        const key = keyOf(token)
        for (const introspector of introspectors) {
          const verdict = introspector.cache.verdict(key, nowMs)
          if (verdict !== undefined) return verdict
        }
        return undefined
      },
      verifyNow,
      async verify(token) {
        return settle(verifyNow(token))
      },
    },
    async status() {
      return Promise.all(introspectors.map((introspector) => introspector.status()))
    },
    forgetWhere(matches) {
      for (const introspector of introspectors) introspector.forgetWhere(matches)
    },
    close() {
      for (const introspector of introspectors) introspector.close()
    },
  }
}

/** An opaque token no rule sends to an issuer. */
const UNROUTED = Symbol('unrouted')

const SEVERAL =
  "set it on each of them: 'all' on the one issuer whose opaque tokens carry no mark, { prefix } or a function where a provider marks its tokens, 'none' where all of its tokens are JWTs (an opaque token names no issuer; one sent to another provider reaches its operator with the gate's credentials)"

/**
 * The routing of opaque tokens, checked once: one introspecting issuer receives them unless it
 * says otherwise; several must each say which they receive, at most one `'all'`, and no prefix of
 * one may start another's. Returns the issuer of a token, or `undefined`: none may receive it.
 *
 * @throws TypeError naming the option to set.
 */
function opaqueRouting(
  introspectors: readonly Introspector[],
  paths: ReadonlyMap<string, string>,
): (token: string) => Introspector | undefined {
  const pathOf = (introspector: Introspector) => `${paths.get(introspector.issuer)}.opaqueTokens`
  const ruleOf = (introspector: Introspector): NormalizedOpaqueRule =>
    introspector.settings.opaqueTokens ??
    (introspectors.length === 1 ? { kind: 'all' } : fail(pathOf(introspector)))
  let all: Introspector | undefined
  const prefixes: [string, Introspector][] = []
  const matchers: [(token: string) => boolean, Introspector][] = []
  for (const introspector of introspectors) {
    const rule = ruleOf(introspector)
    if (rule.kind === 'all') {
      if (all !== undefined) {
        throw new TypeError(
          `createGate(options): "${pathOf(introspector)}" is 'all', as is "${pathOf(all)}": only one issuer may receive the opaque tokens no rule claims; give the others a { prefix }, a function or 'none'`,
        )
      }
      all = introspector
    } else if (rule.kind === 'prefix') {
      for (const prefix of rule.prefixes) prefixes.push([prefix, introspector])
    } else if (rule.kind === 'match') {
      matchers.push([rule.match, introspector])
    }
  }
  for (const [prefix, owner] of prefixes) {
    for (const [other, otherOwner] of prefixes) {
      if (owner !== otherOwner && other.startsWith(prefix)) {
        throw new TypeError(
          `createGate(options): "${pathOf(owner)}" and "${pathOf(otherOwner)}" have overlapping prefixes: a token of one would also match the other's; make them distinct`,
        )
      }
    }
  }
  if (prefixes.length === 0 && matchers.length === 0) return () => all
  return (token) => {
    let found: Introspector | undefined
    for (const [prefix, owner] of prefixes) {
      if (token.startsWith(prefix)) {
        found = owner
        break
      }
    }
    for (const [match, owner] of matchers) {
      if (match(token) !== true || owner === found) continue
      // Claimed by two issuers: neither can be known to be its issuer, so neither is asked.
      if (found !== undefined) return undefined
      found = owner
    }
    return found ?? all
  }
}

function fail(path: string): never {
  throw new TypeError(
    `createGate(options): "${path}" is required when several issuers introspect: ${SEVERAL}`,
  )
}

function settle(
  outcome: Verdict | InvalidTokenError | Promise<Verdict>,
): Verdict | Promise<Verdict> {
  if (outcome instanceof InvalidTokenError) throw outcome
  return outcome
}
