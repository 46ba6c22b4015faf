/**
 * A gate's verification step when issuers introspect: routes each token to local JWT
 * verification or to its issuer's introspection, and answers with the same {@link Verifier}
 * interface, so the admission pipeline (revocation, DPoP, tenant, rate limits, guards) runs
 * unchanged after it.
 *
 * Routing: a JWT whose payload names a configured issuer goes to that issuer (`jwt`: verified
 * locally; `introspection`: introspected; `jwt-then-introspection`: verified locally, and
 * introspected when the issuer's keys do not verify it). A JWT naming another issuer is refused
 * as today (`unknown_issuer`): it is never sent to a provider. Any other token (opaque) goes to
 * the first issuer entry that introspects.
 *
 * @module
 */
import { InvalidTokenError } from '../errors.js'
import type { Emit } from '../events.js'
import type { ClaimRules } from '../token/claims.js'
import { parsePayload, splitCompactJWS } from '../token/jws.js'
import type { Verdict, Verifier, VerifierContext } from '../token/verify.js'
import { tokenKey } from './cache.js'
import { type IntrospectionStatus, Introspector } from './introspector.js'
import type { NormalizedIntrospection } from './options.js'

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
}

/** The introspecting verification of one gate. */
export interface IntrospectionStep {
  readonly verifier: Verifier
  /** What `gate.ready()` reports of each introspecting issuer. */
  status(): Promise<readonly IntrospectionStatus[]>
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
  for (const { issuer, realm, introspection } of context.issuers) {
    if (introspection === undefined) continue
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
      }),
    )
  }
  if (byIssuer.size === 0) return undefined
  const introspectors = [...byIssuer.values()]
  const forOpaque = introspectors[0] as Introspector

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

  /** Where a token goes: an introspector (first trying the JWT when `jwtFirst`), or the JWT verifier. */
  function routeOf(token: string): { to: Introspector; jwtFirst: boolean } | undefined {
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
    return { to: forOpaque, jwtFirst: false }
  }

  function verifyNow(
    token: string,
    reasonRead = true,
  ): Verdict | InvalidTokenError | Promise<Verdict> {
    // Size first, before any hashing or parsing: the JWT path refuses it as too_large.
    if (token.length > maxTokenBytes) return jwt.verifyNow(token, reasonRead)
    const route = routeOf(token)
    if (route === undefined) return jwt.verifyNow(token, reasonRead)
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
    close() {
      for (const introspector of introspectors) introspector.close()
    },
  }
}

function settle(
  outcome: Verdict | InvalidTokenError | Promise<Verdict>,
): Verdict | Promise<Verdict> {
  if (outcome instanceof InvalidTokenError) throw outcome
  return outcome
}
