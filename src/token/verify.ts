/**
 * Token verification: compact JWS parse, header rules, issuer allow-list, key lookup, signature
 * (node:crypto, synchronous, with keys prepared at refresh), then claims. With one issuer whose
 * keys are at hand, the signature comes before the payload is parsed and its `iss` checked. Every refusal before the
 * signature is verified looks the same to the client, so answers reveal nothing about which check
 * failed on an unauthenticated token.
 *
 * @module
 */

import { isB64Token } from '../bearer.js'
import {
  InvalidRequestError,
  InvalidTokenError,
  type RefusalReason,
  type TollgateError,
} from '../errors.js'
import type { Admission, CheckResult, TokenClaims, TokenHeader } from '../types.js'
import { actorOf } from './actor.js'
import { type JWSAlgorithm, signatureMatches } from './algorithms.js'
import { VerdictCache } from './cache.js'
import { type ClaimReaders, type ClaimRules, checkClaims, DEFAULT_READERS } from './claims.js'
import type { IssuerKeys, PreparedKey } from './jwks.js'
import { type ParsedJWS, parsePayload, type SplitJWS, splitCompactJWS } from './jws.js'

/** A token after signature, issuer, audience and time checks passed. */
export interface VerifiedToken {
  readonly header: TokenHeader
  readonly claims: TokenClaims
  /** The configured issuer the token was verified against. */
  readonly issuer: string
  /** The Keycloak realm of the issuer (`…/realms/{realm}`), when it has one. */
  readonly realm: string | undefined
}

/** What verification yields: the token's facts and the admission built from them once. */
export interface Verdict {
  readonly verified: VerifiedToken
  readonly admission: Admission
  /** The gate's answer for this token when it has no tenants, built once and then reused. */
  answer: CheckResult | undefined
  /**
   * The last admission built with a tenant, so a token repeated by the same tenant does not
   * allocate a new admission per request.
   */
  withTenant: Admission | undefined
}

/** The verified-token cache and the forged-token memory of one gate. */
export interface VerdictCaches {
  readonly verdicts: VerdictCache<Verdict>
  readonly forgeries: VerdictCache<true>
  /** Drops what keys a refresh retired had verified: given to each issuer's key set. */
  readonly purgeRetired: () => void
}

/** The verification step of one gate. */
export interface Verifier {
  /** The cached verdict for this exact token, if still valid; never does I/O. */
  cached(token: string, nowMs: number): Verdict | undefined
  /** Full verification. Rejects with `InvalidTokenError`, `TokenExpiredError` or `ServiceUnavailableError`. */
  verify(token: string): Promise<Verdict>
  /**
   * `verify`, synchronously when the issuer's keys need no fetch: the verdict, or a promise of it
   * when they do. The refusals a flood repeats (a forged signature, remembered or not, and a kid
   * no key holds) are returned, not thrown (a throw caught in a server costs about 1 µs);
   * any other refusal known before the keys is thrown. `reasonRead: false` (default true) says
   * that nobody will read the refusal's `reason`: a kid no key holds is then refused without
   * reading the payload when no fetch was considered.
   */
  verifyNow(token: string, reasonRead?: boolean): Verdict | InvalidTokenError | Promise<Verdict>
}

/** Everything verification needs, built once by `createGate()`. */
export interface VerifierContext {
  readonly keys: ReadonlyMap<
    string,
    { readonly keys: IssuerKeys; readonly realm: string | undefined }
  >
  readonly algorithms: ReadonlySet<string>
  readonly rules: ClaimRules
  readonly maxTokenBytes: number
  readonly caches: VerdictCaches | undefined
  /** Makes `auth.tokenFor` of a verified token (the gate's `delegation.exchange`, or its absence). */
  readonly tokenFor: (token: string, claims: TokenClaims, issuer: string) => Admission['tokenFor']
}

const MAX_KID_LENGTH = 256
const ALWAYS = { validFrom: Number.NEGATIVE_INFINITY, validUntil: Number.POSITIVE_INFINITY }
/** Bound on remembered forgeries: enough for a repeated forged token, small enough to be cheap. */
const MAX_REMEMBERED_FORGERIES = 1000

/** Creates the caches of one gate; `undefined` when caching is off. */
export function createVerdictCaches(
  options: { readonly maxEntries: number; readonly maxTtlSeconds: number } | undefined,
): VerdictCaches | undefined {
  if (options === undefined) return undefined
  const verdicts = new VerdictCache<Verdict>(options.maxEntries, options.maxTtlSeconds * 1000)
  // A forged token repeated costs one signature check, like a valid one repeated.
  const forgeries = new VerdictCache<true>(
    Math.min(options.maxEntries, MAX_REMEMBERED_FORGERIES),
    options.maxTtlSeconds * 1000,
  )
  return {
    verdicts,
    forgeries,
    purgeRetired() {
      verdicts.purgeRetired()
      forgeries.purgeRetired()
    },
  }
}

// No detail before the signature is verified: what an unauthenticated token says (its alg, iss,
// kid) is the sender's text, and must not reach operators' logs as if it were a fact.
const invalid = (reason: RefusalReason) => new InvalidTokenError({ reason })

/**
 * A JWS is always a b64token, so the charset is checked only for tokens refused before they could
 * be split (canonical segments are b64tokens): credentials that are not one token at all
 * (spaces, quotes, commas) are a malformed request (400), not a bad token.
 */
function unsplit(token: string, reason: 'malformed' | 'too_large'): TollgateError {
  return isB64Token(token)
    ? invalid(reason)
    : new InvalidRequestError({ reason: 'malformed_credentials' })
}

/** How much of an unverified `iss` operators see. */
const MAX_SHOWN_ISS = 200
// Controls (C0, C1), format characters (direction marks, zero-width), lone surrogates (a cut
// pair) and line separators: what could forge, hide or reorder a log line.
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu

/** Configured issuers an `unknown_issuer` refusal names at most, closest to the token's `iss` first. */
const MAX_SHOWN_ISSUERS = 5

/**
 * The one exception to "no detail before the signature": an `iss` that matches no configured
 * issuer is the usual sign of a misconfiguration (a doubled `/realms/`, a frontend URL), and
 * without it operators see nothing to compare. Named `unverifiedIss`, bounded and stripped of
 * control characters, beside how many issuers are configured and up to
 * {@link MAX_SHOWN_ISSUERS} of them, those sharing the longest prefix with it (listing all of
 * 1,000 issuers made 37 KB per refusal); in the `rejected` event only, never rendered.
 */
function unknownIssuer(iss: unknown, expected: readonly string[]): InvalidTokenError {
  const shown =
    typeof iss === 'string'
      ? iss
          .slice(0, MAX_SHOWN_ISS * 2)
          .replace(UNPRINTABLE, '')
          .slice(0, MAX_SHOWN_ISS)
      : iss === undefined
        ? undefined
        : `(${iss === null ? 'null' : typeof iss})`
  return new InvalidTokenError({
    reason: 'unknown_issuer',
    detail: {
      unverifiedIss: shown,
      configured: expected.length,
      expected: closestIssuers(typeof iss === 'string' ? shown : undefined, expected),
    },
  })
}

/** Each verifier's issuers in code-unit order, sorted once: a refusal costs O(log n). */
const sortedIssuers = new WeakMap<readonly string[], readonly string[]>()

/**
 * Up to {@link MAX_SHOWN_ISSUERS} of `expected`: all of them (in configured order) when there are
 * no more; else those sharing the longest prefix with `iss`, longest first (the first ones
 * configured when there is no `iss` to compare). In sorted order, the issuers sharing the longest
 * prefix with a string lie on either side of where it would be inserted, so a binary search and
 * a walk outwards find them.
 */
function closestIssuers(iss: string | undefined, expected: readonly string[]): readonly string[] {
  if (expected.length <= MAX_SHOWN_ISSUERS) return expected
  if (iss === undefined) return expected.slice(0, MAX_SHOWN_ISSUERS)
  let sorted = sortedIssuers.get(expected)
  if (sorted === undefined) {
    sorted = [...expected].sort()
    sortedIssuers.set(expected, sorted)
  }
  let high = sorted.length
  for (let low = 0; low < high; ) {
    const middle = (low + high) >>> 1
    if ((sorted[middle] as string) < iss) low = middle + 1
    else high = middle
  }
  let below = high - 1
  let above = high
  const closest: string[] = []
  while (closest.length < MAX_SHOWN_ISSUERS) {
    const down = below >= 0 ? commonPrefix(iss, sorted[below] as string) : -1
    const up = above < sorted.length ? commonPrefix(iss, sorted[above] as string) : -1
    if (up > down) closest.push(sorted[above++] as string)
    else closest.push(sorted[below--] as string)
  }
  return closest
}

function commonPrefix(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  let index = 0
  while (index < length && a.charCodeAt(index) === b.charCodeAt(index)) index++
  return index
}

/** Creates the verification step of one gate. */
export function createVerifier(context: VerifierContext): Verifier {
  const { rules, algorithms, maxTokenBytes } = context
  const verdicts = context.caches?.verdicts
  const forgeries = context.caches?.forgeries
  // With one issuer its keys are known before the payload is read: when they are at hand and hold
  // the token's kid, the signature is checked first and the payload parsed only once it is
  // authentic (a forged token costs no JSON parse). Before a key fetch, or for an unknown kid,
  // the payload is read first, so another issuer's token never makes the gate fetch keys.
  const [onlyIssuer] = context.keys.size === 1 ? context.keys : []
  const expectedIssuers: readonly string[] = Object.freeze([...context.keys.keys()])
  // Each issuer's rules and read-outs are settled here, once: a request looks them up by the
  // issuer it already found, and never asks which provider the issuer is.
  const issuerRules = new Map<string, { rules: ClaimRules; readers: ClaimReaders }>()
  for (const iss of expectedIssuers) {
    const own = rules.byIssuer?.get(iss)
    const merged: ClaimRules =
      own === undefined
        ? rules
        : { ...own, confirmationChecked: rules.confirmationChecked === true }
    issuerRules.set(iss, { rules: merged, readers: merged.readers ?? DEFAULT_READERS })
  }

  type Claimed = ReturnType<typeof readPayload>

  /** The payload as a JSON object, and the configured issuer its `iss` names. */
  function readPayload(split: SplitJWS) {
    const payload = parsePayload(split.payloadBytes)
    if (payload === undefined) throw invalid('malformed')
    const iss = payload.iss
    const issuer = typeof iss === 'string' ? context.keys.get(iss) : undefined
    if (issuer === undefined) throw unknownIssuer(iss, expectedIssuers)
    return { payload, iss: iss as string, issuer }
  }

  /**
   * Everything before the keys: size, split, header rules, and with several
   * issuers the payload and its issuer (with one, {@link claimedIssuer} reads them later).
   */
  function prepare(token: string) {
    if (token.length > maxTokenBytes) throw unsplit(token, 'too_large')
    const split = splitCompactJWS(token)
    if (split === undefined) throw unsplit(token, 'malformed')
    const header = split.header
    const alg = header.alg
    // RFC 8725 §3.1: the allow-list decides, the token does not. `none` and HS* are never listed.
    if (typeof alg !== 'string' || !algorithms.has(alg)) throw invalid('algorithm')
    // RFC 7515 §4.1.11: refuse extensions we do not understand; `b64: false` (RFC 7797) too.
    if (header.crit !== undefined || header.b64 !== undefined) throw invalid('header')
    const kid = header.kid
    if (
      kid !== undefined &&
      (typeof kid !== 'string' || kid.length === 0 || kid.length > MAX_KID_LENGTH)
    ) {
      throw invalid('header')
    }
    // `jwk`, `jku`, `x5u` and `x5c` are ignored: keys come only from the configured issuer.
    const claimed: Claimed | undefined = onlyIssuer === undefined ? readPayload(split) : undefined
    const issuer = claimed?.issuer ?? (onlyIssuer?.[1] as Claimed['issuer'])
    return { split, alg: alg as JWSAlgorithm, kid: kid as string | undefined, claimed, issuer }
  }

  /**
   * The claimed issuer, read before the key set is fetched or a fetch awaited: a token of another
   * issuer is refused for what it is, and never makes the gate fetch its keys.
   */
  function claimedIssuer(prepared: ReturnType<typeof prepare>) {
    prepared.claimed ??= readPayload(prepared.split)
    return prepared.claimed
  }

  /**
   * A kid no key holds. The payload is read first, when a fetch was considered or not: a token of
   * another issuer is refused as `unknown_issuer` (with what it claimed), a payload that is no JSON
   * object as `malformed`. Unless nobody can read the reason (`reasonRead` false: an adapter
   * answering refusals itself, no event listener) and no fetch was considered: the read then
   * changes nothing anyone sees, and is the largest part of refusing a flood of unknown kids
   * (settling the reason lazily, when first read, was tried: the per-refusal getters and closures
   * cost more over HTTP than the read).
   */
  function unknownKid(
    prepared: ReturnType<typeof prepare>,
    reasonRead: boolean,
  ): InvalidTokenError {
    if (reasonRead || prepared.claimed !== undefined) claimedIssuer(prepared)
    return invalid('unknown_kid')
  }

  /** The signature against the candidate keys, then the claims; caches the outcome. */
  function conclude(
    token: string,
    prepared: ReturnType<typeof prepare>,
    candidates: readonly PreparedKey[],
    now: number,
    reasonRead: boolean,
  ): Verdict | InvalidTokenError {
    const { split, alg } = prepared
    if (candidates.length === 0) return unknownKid(prepared, reasonRead)
    const key = findSigner(split, candidates, alg)
    if (key === undefined) {
      forgeries?.set(token, true, candidates, ALWAYS, now)
      return invalid('signature')
    }
    const { payload, iss } = claimedIssuer(prepared)
    const own = issuerRules.get(iss) as { rules: ClaimRules; readers: ClaimReaders }
    const validity = checkClaims(split.header as TokenHeader, payload, own.rules, Date.now())
    const verdict = buildVerdict(
      token,
      split.header,
      payload,
      iss,
      prepared.issuer.realm,
      own.readers,
      context.tokenFor,
    )
    // A lone candidate is the key set's own array for that kid, never mutated (a refresh builds new
    // ones): the verdict can depend on it without a new array per miss.
    verdicts?.set(token, verdict, candidates.length === 1 ? candidates : [key], validity, now)
    return verdict
  }

  function verifyNow(
    token: string,
    reasonRead = true,
  ): Verdict | InvalidTokenError | Promise<Verdict> {
    const now = Date.now()
    // A remembered forgery is never longer than maxTokenBytes: the size check can come after.
    if (forgeries?.get(token, now) !== undefined) return invalid('signature')
    const prepared = prepare(token)
    const keys = prepared.issuer.keys
    const candidates = keys.resolveNow(prepared.kid, prepared.alg)
    if (candidates !== undefined) return conclude(token, prepared, candidates, now, reasonRead)
    return keys
      .resolve(prepared.kid, prepared.alg, () => claimedIssuer(prepared))
      .then((resolved) => verdictOf(conclude(token, prepared, resolved, now, true)))
  }

  async function verifyToken(token: string): Promise<Verdict> {
    const verdict = verifyNow(token)
    return verdict instanceof Promise ? verdict : verdictOf(verdict)
  }

  return {
    // A hit is still within exp and max age (the cache checks both); nbf had already passed.
    cached:
      verdicts === undefined
        ? () => undefined
        : (token, nowMs) => {
            const verdict = verdicts.get(token, nowMs)
            // A verdict never outlives the keys that made it: past the stale bound, verify again (503).
            const issuer = verdict && context.keys.get(verdict.verified.issuer)
            return issuer?.keys.stillUsable(nowMs) ? verdict : undefined
          },
    verify: verifyToken,
    verifyNow,
  }
}

/** A verdict, or the refusal thrown: for the paths that answer with a promise. */
function verdictOf(outcome: Verdict | InvalidTokenError): Verdict {
  if (outcome instanceof InvalidTokenError) throw outcome
  return outcome
}

/** The first candidate key whose signature over the token verifies (also used for logout tokens). */
export function findSigner(
  parsed: Pick<ParsedJWS, 'signingInput' | 'signature'>,
  candidates: readonly PreparedKey[],
  alg: JWSAlgorithm,
): PreparedKey | undefined {
  const data = Buffer.from(parsed.signingInput, 'latin1')
  for (const key of candidates) {
    const verifier = key.verifiers[alg]
    if (verifier !== undefined && signatureMatches(data, parsed.signature, verifier)) return key
  }
  return undefined
}

// Parsed JSON only (plain objects and arrays): an index loop over arrays, `for…in` over objects.
// `for…in` reads V8's enumeration cache of the object's shape, where `Object.keys` allocates an
// array per object (a third of the cost of freezing a Keycloak token's claims, counted). Besides
// the object's own keys it walks only enumerable keys added to Object.prototype (a polluted
// prototype): their values are frozen too, which changes nothing the claims hold.
function deepFreeze<T extends object>(value: T): T {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i]
      if (typeof child === 'object' && child !== null) deepFreeze(child)
    }
  } else {
    const record = value as Record<string, unknown>
    for (const key in record) {
      const child = record[key]
      if (typeof child === 'object' && child !== null) deepFreeze(child)
    }
  }
  return Object.freeze(value)
}

/**
 * An admission: `fields` as its own enumerable properties, and `token` and `tokenFor` readable
 * (`auth.token`) but not its own: the compact JWS is a bearer secret, and `JSON.stringify(auth)`,
 * `util.inspect(auth)` (what loggers print, `showHidden` included), spreads and `Object.keys`
 * only see own properties. Kept in private fields behind getters rather than defined as
 * non-enumerable properties: `Object.defineProperty` goes through V8's runtime and cost a miss
 * about 5,000 instructions per admission (a miss with tenants builds two). The prototype has no
 * `constructor` of its own, so an admission prints and compares as the plain object it was.
 * Frozen. A copy of an admission must be made with {@link admissionWith}: a spread drops the
 * token.
 */
class SealedAdmission {
  readonly #token: string
  readonly #tokenFor: Admission['tokenFor']
  readonly header: TokenHeader
  readonly claims: TokenClaims
  readonly issuer: string
  readonly realm: string | undefined
  readonly subject: string | undefined
  readonly clientId: string | undefined
  readonly scopes: readonly string[]
  readonly roles: Admission['roles']
  readonly tenant: string | undefined
  readonly plan: string | undefined
  readonly actor: Admission['actor']

  constructor(
    token: string,
    fields: Omit<Admission, 'token' | 'tokenFor'>,
    tokenFor: Admission['tokenFor'],
    tenant: string | undefined,
    plan: string | undefined,
  ) {
    this.header = fields.header
    this.claims = fields.claims
    this.issuer = fields.issuer
    this.realm = fields.realm
    this.subject = fields.subject
    this.clientId = fields.clientId
    this.scopes = fields.scopes
    this.roles = fields.roles
    this.tenant = tenant
    this.plan = plan
    this.actor = fields.actor
    this.#token = token
    this.#tokenFor = tokenFor
    Object.freeze(this)
  }

  get token(): string {
    return this.#token
  }

  get tokenFor(): Admission['tokenFor'] {
    return this.#tokenFor
  }
}
delete (SealedAdmission.prototype as { constructor?: unknown }).constructor

/** A frozen admission with `fields`, its `token` and `tokenFor` readable but hidden (see above). */
export function admissionWith(
  token: string,
  fields: Omit<Admission, 'token' | 'tokenFor'>,
  tokenFor: Admission['tokenFor'],
): Admission {
  return new SealedAdmission(token, fields, tokenFor, fields.tenant, fields.plan)
}

/** A copy of `admission` with its tenant and plan (a spread would drop the token). */
export function admissionOfTenant(
  admission: Admission,
  tenant: string | undefined,
  plan: string | undefined,
): Admission {
  return new SealedAdmission(admission.token, admission, admission.tokenFor, tenant, plan)
}

function buildVerdict(
  token: string,
  parsedHeader: Record<string, unknown>,
  payload: Record<string, unknown>,
  issuer: string,
  realm: string | undefined,
  readers: ClaimReaders,
  tokenFor: VerifierContext['tokenFor'],
): Verdict {
  // Verdicts are shared by every request that presents the same token: nothing may mutate them.
  const header = deepFreeze(parsedHeader) as TokenHeader
  const claims = deepFreeze(payload) as TokenClaims
  const verified: VerifiedToken = Object.freeze({ header, claims, issuer, realm })
  const admission = new SealedAdmission(
    token,
    {
      header,
      claims,
      issuer,
      realm,
      subject: claims.sub,
      clientId: readers.clientId(claims),
      scopes: readers.scopes(claims),
      roles: readers.roles(claims),
      tenant: undefined,
      plan: undefined,
      // A malformed chain (`null`) is no actor: the gate's delegation step refuses it.
      actor: actorOf(claims) ?? undefined,
    },
    tokenFor(token, claims, issuer),
    undefined,
    undefined,
  )
  return { verified, admission, answer: undefined, withTenant: undefined }
}
