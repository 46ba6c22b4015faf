/**
 * DPoP at the resource server (RFC 9449 §7): after the access token is verified (or found in the
 * verified-token cache), decides whether the request is a valid use of it: a bound token
 * (`cnf.jkt`) only with the `DPoP` scheme and a fresh proof by its key, never as a bearer token;
 * an unbound one only as a bearer token, and not at all in `required` mode. Runs on every request:
 * a cached verdict about the token never stands in for the proof, which is new each time.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

import { repeatsField } from '../bearer.js'
import type { CredentialScheme } from '../challenge.js'
import { DpopNonceError, InvalidDpopProofError, InvalidTokenError } from '../errors.js'
import type { VerifiedToken } from '../token/verify.js'
import type { RequestLike } from '../types.js'
import type { NormalizedDpopOptions, TargetSource } from './options.js'
import { createProofChecker, normalizeHtu } from './proof.js'
import {
  capClaimsPerKey,
  createMemoryReplayCache,
  createRedisReplayCache,
  createSharedReplayCache,
} from './replay.js'

/** The DPoP step of one gate. */
export interface DpopStep {
  /**
   * Checks the use of a verified token. Resolves to response headers (a fresh `DPoP-Nonce` when
   * the proof used the previous one).
   *
   * @throws InvalidTokenError (`sender_constrained`, `dpop_binding`, `dpop_required`),
   * InvalidDpopProofError, DpopNonceError, or ServiceUnavailableError from the replay cache.
   */
  confirm(
    request: RequestLike,
    scheme: CredentialScheme,
    token: string,
    verified: VerifiedToken,
  ): Promise<Readonly<Record<string, string>>>
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
const JKT = /^[A-Za-z0-9_-]{43}$/
const NONCE_MAC_BYTES = 16
/**
 * Paths that routers take as they are but URL parsers (and so `htu` normalization) resolve: dot
 * segments, percent-encoded or not, and backslashes. `/a/%2e%2e/b` is routed to `/a/%2e%2e/b`'s
 * handler and normalizes to `/b`: a proof for `/b` must not open it.
 */
const AMBIGUOUS_PATH = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)|\\|%5c/i

/**
 * The token's `cnf.jkt` (RFC 9449 §6.1), `undefined` when it has none. A confirmation this gate
 * cannot check (mTLS `x5t#S256`, RFC 8705, without `mtls` on, or anything else) refuses the token;
 * with `mtls` on, the certificate step checks `x5t#S256`, and a token that has both needs both.
 */
function boundKeyOf(verified: VerifiedToken, certificateBound: boolean): string | undefined {
  const cnf = verified.claims.cnf
  if (cnf === undefined) return undefined
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf)) {
    throw new InvalidTokenError({ reason: 'sender_constrained' })
  }
  const members = Object.entries(cnf)
  // An empty `cnf` binds to nothing anyone could check: refused.
  if (members.length === 0) throw new InvalidTokenError({ reason: 'sender_constrained' })
  let jkt: string | undefined
  for (const [member, value] of members) {
    if (member === 'jkt' && typeof value === 'string' && JKT.test(value)) jkt = value
    else if (!(member === 'x5t#S256' && certificateBound)) {
      throw new InvalidTokenError({ reason: 'sender_constrained' })
    }
  }
  return jkt
}

/** The one `DPoP` field of the request (RFC 9449 §4.3 step 1). */
function proofOf(request: RequestLike): string {
  const value = request.headers.dpop
  if (value === undefined || value === '') {
    throw new InvalidDpopProofError({ detail: { check: 'missing' } })
  }
  // Node joins repeated DPoP fields with ", ", which no compact JWS contains; a host that keeps
  // one value of a repeated field leaves only the raw list to tell.
  if (
    typeof value !== 'string' ||
    value.includes(',') ||
    repeatsField(request.rawHeaders, 'dpop')
  ) {
    throw new InvalidDpopProofError({ detail: { check: 'repeated' } })
  }
  return value
}

function firstValue(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined || text === '') return undefined
  const comma = text.indexOf(',')
  return (comma === -1 ? text : text.slice(0, comma)).trim()
}

/**
 * The request's URL without query, normalized, as the client must have put it in `htu`. Behind a
 * proxy the configured public base URL says what clients see; `X-Forwarded-*` is read only when
 * configured, since any client can send it.
 */
function targetOf(request: RequestLike, source: TargetSource): string | undefined {
  const url = request.url
  // Origin-form only (RFC 9112 §3.2.1): an absolute-form target would name its own host.
  if (url === undefined || url.charCodeAt(0) !== 47) return undefined
  const query = url.search(/[?#]/)
  const path = query === -1 ? url : url.slice(0, query)
  if (AMBIGUOUS_PATH.test(path)) return undefined
  if (source.kind === 'base') return normalizeHtu(`${source.origin}${source.pathPrefix}${path}`)
  const forwarded = source.kind === 'forwarded'
  const proto =
    (forwarded ? firstValue(request.headers['x-forwarded-proto'])?.toLowerCase() : undefined) ??
    (request.secure ? 'https' : 'http')
  const host =
    (forwarded ? firstValue(request.headers['x-forwarded-host']) : undefined) ??
    firstValue(request.headers.host)
  if (host === undefined || (proto !== 'http' && proto !== 'https')) return undefined
  // The host is the client's text: only one the operator listed can name this service.
  if (!source.hosts.has(host.toLowerCase())) return undefined
  return normalizeHtu(`${proto}://${host}${path}`)
}

/**
 * Server nonces (RFC 9449 §9), stateless: the time slot and a MAC of it under the gate's secret,
 * so any instance sharing the secret accepts them. The current and the previous slot are valid.
 */
function createNonces(secret: Buffer, lifetimeSeconds: number) {
  const periodMs = lifetimeSeconds * 1000
  let cachedSlot = -1
  let cachedNonce = ''
  const macOf = (slot: Buffer) =>
    createHmac('sha256', secret).update(slot).digest().subarray(0, NONCE_MAC_BYTES)
  const slotBytes = (slot: number) => {
    const bytes = Buffer.alloc(8)
    bytes.writeBigUInt64BE(BigInt(slot))
    return bytes
  }
  function current(nowMs: number): string {
    const slot = Math.floor(nowMs / periodMs)
    if (slot !== cachedSlot) {
      const bytes = slotBytes(slot)
      cachedNonce = Buffer.concat([bytes, macOf(bytes)]).toString('base64url')
      cachedSlot = slot
    }
    return cachedNonce
  }
  /** `'current'`, `'previous'` or `undefined` for a nonce that is neither. */
  function judge(nonce: string | undefined, nowMs: number): 'current' | 'previous' | undefined {
    if (nonce === undefined || nonce.length !== 32) return undefined
    const bytes = Buffer.from(nonce, 'base64url')
    if (bytes.length !== 8 + NONCE_MAC_BYTES || bytes.toString('base64url') !== nonce) {
      return undefined
    }
    const slot = Number(bytes.readBigUInt64BE(0))
    const now = Math.floor(nowMs / periodMs)
    if (slot !== now && slot !== now - 1) return undefined
    if (!timingSafeEqual(bytes.subarray(8), macOf(bytes.subarray(0, 8)))) return undefined
    return slot === now ? 'current' : 'previous'
  }
  return { current, judge }
}

/** Creates the DPoP step of a gate whose DPoP mode is `allowed` or `required`. */
export function createDpopStep(
  options: NormalizedDpopOptions,
  context: { readonly clockToleranceSeconds: number; readonly certificateBound?: boolean },
): DpopStep {
  const { mode, target, replay } = options
  const proofs = createProofChecker({
    algorithms: options.algorithms,
    maxProofAgeSeconds: options.maxProofAgeSeconds,
    clockToleranceSeconds: context.clockToleranceSeconds,
  })
  const nonces = options.nonce && createNonces(options.nonce.secret, options.nonce.lifetimeSeconds)
  const shared =
    replay.redis !== undefined
      ? createRedisReplayCache(replay.redis, replay)
      : replay.shared !== undefined
        ? createSharedReplayCache(replay.shared, replay)
        : undefined
  const cache =
    shared === undefined
      ? createMemoryReplayCache(replay.maxEntries, replay.maxEntriesPerKey)
      : capClaimsPerKey(shared, replay.maxEntries, replay.maxEntriesPerKey)
  // A proof stays acceptable from iat − tolerance to iat + max age + tolerance: remember it as long.
  const replayTtlMs = (options.maxProofAgeSeconds + 2 * context.clockToleranceSeconds) * 1000

  return {
    async confirm(request, scheme, token, verified) {
      const jkt = boundKeyOf(verified, context.certificateBound === true)
      if (scheme === 'Bearer') {
        // RFC 9449 §7.2: a bound token sent as a bearer token is a stolen token being tried.
        if (jkt !== undefined) throw new InvalidTokenError({ reason: 'dpop_binding' })
        if (mode === 'required') throw new InvalidTokenError({ reason: 'dpop_required' })
        return NO_HEADERS
      }
      if (jkt === undefined) throw new InvalidTokenError({ reason: 'dpop_binding' })
      const now = Date.now()
      const proof = proofs.check(
        proofOf(request),
        { method: request.method, htu: targetOf(request, target), token, jkt },
        now,
      )
      let headers = NO_HEADERS
      if (nonces) {
        const state = nonces.judge(proof.nonce, now)
        if (state === undefined) throw new DpopNonceError({ nonce: nonces.current(now) })
        if (state === 'previous') headers = { 'DPoP-Nonce': nonces.current(now) }
      }
      // Last, so that only proofs that passed every other check take a place in the cache.
      await cache.claim(jkt, proof.jti, replayTtlMs, now)
      return headers
    },
  }
}
