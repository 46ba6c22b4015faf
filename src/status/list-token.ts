/**
 * A Status List Token in JWT form (Token Status List §5.1), verified as the draft's validation
 * rules say (§8.3): the signature with the keys of the issuer of the token that referenced the
 * list (the gate's own key set for that issuer, under its algorithm allow-list), `typ`
 * `statuslist+jwt`, `sub` equal to the URI the referenced token named, `iat` not in the future,
 * `exp` not past, `iss` (when present) the referenced token's issuer; then the `status_list`
 * member decoded. Nothing here fetches: `lists.ts` owns the fetch and the cache.
 *
 * @module
 */
import type { StatusListProblem } from '../events.js'
import type { JWSAlgorithm } from '../token/algorithms.js'
import type { IssuerKeys } from '../token/jwks.js'
import { parseCompactJWS } from '../token/jws.js'
import { findSigner } from '../token/verify.js'
import { decodeStatusList, isStatusBits, type StatusBitList } from './bits.js'

/** Why a fetched list was not used; for operators (events), never sent to a client. */
export type ListProblem = StatusListProblem

/** A list that failed one of the checks. */
export class ListRefusal extends Error {
  readonly problem: ListProblem
  constructor(problem: ListProblem, cause?: unknown) {
    super(`status list refused: ${problem}`, cause === undefined ? undefined : { cause })
    this.name = 'ListRefusal'
    this.problem = problem
  }
}

/** A verified list and the times it is good for. */
export interface VerifiedList {
  readonly list: StatusBitList
  /** `iat`, in seconds. */
  readonly issuedAt: number
  /** `exp`, in seconds, when the list has one. */
  readonly expiresAt: number | undefined
  /** `ttl`, in seconds, when the list has one (§5.1: how long it may be cached). */
  readonly ttl: number | undefined
}

export interface ListTokenRules {
  readonly algorithms: ReadonlySet<string>
  readonly clockToleranceSeconds: number
  /** Bound on the decompressed list. */
  readonly maxListBytes: number
}

const MEDIA_TYPES = new Set(['statuslist+jwt', 'application/statuslist+jwt'])
const isNumericDate = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0

/**
 * Verifies a Status List Token for the list at `uri`, referenced by a token of `issuer`.
 *
 * @throws ListRefusal for every refusal; `keys` when the issuer's keys could not be had (the
 *   list was not judged).
 */
export async function verifyListToken(
  jwt: string,
  uri: string,
  issuer: string,
  keys: IssuerKeys,
  rules: ListTokenRules,
  nowMs: number,
): Promise<VerifiedList> {
  const parsed = parseCompactJWS(jwt.trim())
  if (parsed === undefined) throw new ListRefusal('malformed')
  const { header, payload } = parsed
  const alg = header.alg
  if (typeof alg !== 'string' || !rules.algorithms.has(alg)) throw new ListRefusal('algorithm')
  if (header.crit !== undefined || header.b64 !== undefined) throw new ListRefusal('malformed')
  // §5.1: the typ header MUST be statuslist+jwt (RFC 8725 §3.11: a token typed for another use,
  // an access token among them, is never taken for a list).
  const typ = header.typ
  if (typeof typ !== 'string' || !MEDIA_TYPES.has(typ.toLowerCase())) {
    throw new ListRefusal('token_type')
  }
  const kid = header.kid
  if (kid !== undefined && (typeof kid !== 'string' || kid === '' || kid.length > 256)) {
    throw new ListRefusal('malformed')
  }
  let candidates: Awaited<ReturnType<IssuerKeys['resolve']>>
  try {
    candidates = await keys.resolve(kid as string | undefined, alg as JWSAlgorithm)
  } catch (error) {
    throw new ListRefusal('keys', error)
  }
  if (findSigner(parsed, candidates, alg as JWSAlgorithm) === undefined) {
    throw new ListRefusal(candidates.length === 0 ? 'keys' : 'signature')
  }
  // §5.1 / §8.3: the list names itself; a list served at another URI is not this one.
  if (payload.sub !== uri) throw new ListRefusal('subject')
  if (payload.iss !== undefined && payload.iss !== issuer) throw new ListRefusal('issuer')
  const now = nowMs / 1000
  const tolerance = rules.clockToleranceSeconds
  const { iat, exp, ttl } = payload
  if (!isNumericDate(iat)) throw new ListRefusal('malformed')
  if (iat > now + tolerance) throw new ListRefusal('issued_in_future')
  if (exp !== undefined && !isNumericDate(exp)) throw new ListRefusal('malformed')
  if (exp !== undefined && exp + tolerance <= now) throw new ListRefusal('expired')
  if (ttl !== undefined && !(isNumericDate(ttl) && ttl > 0)) throw new ListRefusal('malformed')
  const member = payload.status_list
  if (typeof member !== 'object' || member === null || Array.isArray(member)) {
    throw new ListRefusal('malformed')
  }
  const { bits, lst } = member as Record<string, unknown>
  if (!isStatusBits(bits) || typeof lst !== 'string') throw new ListRefusal('malformed')
  const list = await decodeStatusList(lst, bits, rules.maxListBytes)
  if (typeof list === 'string') throw new ListRefusal(list === 'too_large' ? 'too_large' : list)
  return { list, issuedAt: iat, expiresAt: exp, ttl }
}
