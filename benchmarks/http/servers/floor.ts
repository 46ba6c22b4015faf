/**
 * The floor: the least any caching bearer middleware must do, written inline for one RS256 issuer.
 * A hit is a `Map` lookup, an `exp` check and a per-tenant counter; a miss is what the raw verify
 * of `micro/crypto-limit.ts` does (split, decode, parse, `crypto.verify` with a KeyObject prepared
 * once) plus `iss`/`aud`/`exp`. No limiter headers, no frozen verdicts, no events, no refusal
 * details: what it costs over the bare framework is what the framework, the kernel and the garbage
 * collector charge any middleware that verifies and caches tokens, so it says how close to issue
 * 14's targets a middleware can get on the same run, and what is tollgate's own.
 */
import crypto, { type KeyObject } from 'node:crypto'
import type { ServerConfig } from '../protocol.ts'

export interface FloorClaims {
  readonly sub?: string
  readonly exp: number
  readonly tenant?: string
}

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
): Promise<(authorization: string | undefined) => FloorClaims | undefined> {
  const { keys } = (await fetchJwks(server.jwksUri)) as {
    keys: (crypto.JsonWebKey & { kid: string })[]
  }
  const byKid = new Map<string, KeyObject>()
  for (const jwk of keys) {
    if (jwk.kty === 'RSA') byKid.set(jwk.kid, crypto.createPublicKey({ key: jwk, format: 'jwk' }))
  }
  // Bounded like tollgate's cache (oldest out first), so the 10,000-token pool misses here too.
  const cache = new Map<string, FloorClaims>()
  const perTenant = new Map<string, number>()
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
    cache.set(token, claims)
    return claims
  }

  return (authorization) => {
    if (authorization === undefined || !authorization.startsWith('Bearer ')) return undefined
    const token = authorization.slice(7)
    let claims = cache.get(token)
    if (claims === undefined || !(claims.exp * 1000 > Date.now())) claims = verify(token)
    if (claims === undefined) return undefined
    const tenant = claims.tenant ?? ''
    perTenant.set(tenant, (perTenant.get(tenant) ?? 0) + 1)
    return claims
  }
}
