/**
 * The floor: the least any caching bearer middleware must do, written inline for one RS256 issuer.
 * A hit is a `Map` lookup, an `exp` check and a per-tenant counter; a miss is what the raw verify
 * of `micro/crypto-limit.ts` does (split, decode, parse, `crypto.verify` with a KeyObject prepared
 * once) plus `iss`/`aud`/`exp`. No events, no refusal reasons, no b64token or canonical-encoding
 * checks: what it costs over the bare framework is what the framework, the kernel and the garbage
 * collector charge any middleware that verifies and caches tokens, so it says how close to issue
 * 14's targets a middleware can get on the same run, and what is tollgate's own.
 *
 * Issue 24 asks the floor to do what tollgate's answers promise and a client sees, and only that
 * (fifth pass): its counter sends the draft-10 `RateLimit-Policy` and `RateLimit` fields of a
 * fixed window, the claims it keeps are frozen (shared by every request presenting the token),
 * and a refusal is tollgate's documented 401 (RFC 6750 challenge, `Cache-Control: no-store`, the
 * JSON body), one constant. `BENCH_FLOOR=bare` keeps the floor of the third and fourth passes
 * (no fields, nothing frozen, `401 {"ok":false}`), to compare with their figures.
 */
import crypto, { type KeyObject } from 'node:crypto'
import type { ServerConfig } from '../protocol.ts'

export interface FloorClaims {
  readonly sub?: string
  readonly exp: number
  readonly tenant?: string
}

/** The third and fourth passes' floor: no rate-limit fields, nothing frozen, a bare 401. */
export const BARE_FLOOR = process.env.BENCH_FLOOR === 'bare'

/** tollgate's documented 401 for any token problem (the bare floor answers `{"ok":false}`). */
export const FLOOR_REFUSAL = {
  headers: {
    'WWW-Authenticate':
      'Bearer realm="api", error="invalid_token", error_description="invalid token"',
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
  } as Readonly<Record<string, string>>,
  body: '{"error":"invalid_token","error_description":"invalid token"}',
}

/** What an admitted request carries on: the token's claims and the rate-limit fields to send. */
export interface FloorAdmission {
  readonly claims: FloorClaims
  readonly headers: Record<string, string> | undefined
}

/** The bench's one window (tollgate.ts `UNREACHABLE_LIMIT`), named as tollgate names it. */
const POINTS = 1_000_000_000
const WINDOW_MS = 60_000
const POLICY = `"default";q=${POINTS};w=${WINDOW_MS / 1000}`

/** One retry: a kept-alive connection the issuer closed meanwhile fails the first attempt. */
async function fetchJwks(uri: string): Promise<unknown> {
  try {
    return await (await fetch(uri)).json()
  } catch {
    return await (await fetch(uri)).json()
  }
}

/** Builds the check: the claims of a valid token, `undefined` for anything else. */
export async function floorVerifier(
  server: ServerConfig,
): Promise<(authorization: string | undefined) => FloorAdmission | undefined> {
  const { keys } = (await fetchJwks(server.jwksUri)) as {
    keys: (crypto.JsonWebKey & { kid: string })[]
  }
  const byKid = new Map<string, KeyObject>()
  for (const jwk of keys) {
    if (jwk.kty === 'RSA') byKid.set(jwk.kid, crypto.createPublicKey({ key: jwk, format: 'jwk' }))
  }
  // Bounded like tollgate's cache (oldest out first), so the 10,000-token pool misses here too.
  const cache = new Map<string, FloorClaims>()
  const perTenant = new Map<string, { count: number; resetAt: number }>()
  const { issuer, audience, cacheEntries } = server

  function verify(token: string): FloorClaims | undefined {
    const first = token.indexOf('.')
    const second = token.indexOf('.', first + 1)
    if (first < 0 || second < 0) return undefined
    const header = JSON.parse(Buffer.from(token.slice(0, first), 'base64url').toString()) as {
      alg?: string
      kid?: string
    }
    const key = header.alg === 'RS256' ? byKid.get(header.kid ?? '') : undefined
    if (key === undefined) return undefined
    const signed = crypto.verify(
      'sha256',
      Buffer.from(token.slice(0, second), 'latin1'),
      key,
      Buffer.from(token.slice(second + 1), 'base64url'),
    )
    if (!signed) return undefined
    const claims = JSON.parse(
      Buffer.from(token.slice(first + 1, second), 'base64url').toString(),
    ) as FloorClaims & { iss?: string; aud?: string | string[] }
    const aud = claims.aud
    const audienceOk = Array.isArray(aud) ? aud.includes(audience) : aud === audience
    if (claims.iss !== issuer || !audienceOk || !(claims.exp * 1000 > Date.now())) return undefined
    if (cache.size >= cacheEntries) cache.delete(cache.keys().next().value as string)
    cache.set(token, BARE_FLOOR ? claims : deepFreeze(claims))
    return claims
  }

  return (authorization) => {
    if (authorization === undefined || !authorization.startsWith('Bearer ')) return undefined
    const token = authorization.slice(7)
    const now = Date.now()
    let claims = cache.get(token)
    if (claims === undefined || !(claims.exp * 1000 > now)) claims = verify(token)
    if (claims === undefined) return undefined
    const tenant = claims.tenant ?? ''
    let window = perTenant.get(tenant)
    if (window === undefined || now >= window.resetAt) {
      window = { count: 0, resetAt: now + WINDOW_MS }
      perTenant.set(tenant, window)
    }
    window.count++
    if (BARE_FLOOR) return { claims, headers: undefined }
    const t = Math.ceil((window.resetAt - now) / 1000)
    return {
      claims,
      headers: {
        'RateLimit-Policy': POLICY,
        RateLimit: `"default";r=${POINTS - window.count};t=${t}`,
      },
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}
