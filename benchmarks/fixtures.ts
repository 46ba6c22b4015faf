/**
 * The identity provider every contender verifies against: RS256, ES256 and EdDSA signing keys, a
 * Keycloak-shaped issuer (`/realms/bench`) served by node:http on 127.0.0.1 with discovery and a
 * JWKS endpoint that counts its fetches, and Keycloak-like access tokens signed with node:crypto.
 * Self-contained, so the suite runs before tollgate is built; `issuer.ts` picks it or the kit.
 */

import crypto, { type JsonWebKey, type KeyObject } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Alg = 'RS256' | 'ES256' | 'EdDSA'
export const ALGS: readonly Alg[] = ['RS256', 'ES256', 'EdDSA']

export const REALM = 'bench'
export const AUDIENCE = 'gateway'
/** Tokens outlive the longest full run. */
const TOKEN_LIFETIME_S = 4 * 3600

export interface BenchKey {
  alg: Alg
  kid: string
  privateKey: KeyObject
  publicKey: KeyObject
  /** Public JWK as published in the JWKS. */
  jwk: JsonWebKey & { kid: string; alg: Alg; use: 'sig' }
}

export interface BenchIssuer {
  /** Who serves the JWKS: this file's server, or tollgate's testing kit. */
  kind: 'own' | 'tollgate/testing'
  /** Base URL (Keycloak's auth URL): `http://127.0.0.1:port`. */
  url: string
  /** `iss` of the tokens: `${url}/realms/bench`. */
  issuer: string
  jwksUri: string
  keys: Record<Alg, BenchKey>
  mint(claims?: Record<string, unknown>, alg?: Alg, kid?: string): string
  /** JWKS fetches served since start. */
  fetchCount(): number
  close(): Promise<void>
}

const b64u = (value: Buffer | string): string => Buffer.from(value).toString('base64url')

export function generateKey(alg: Alg, kid: string): BenchKey {
  const pair =
    alg === 'RS256'
      ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 })
      : alg === 'ES256'
        ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : crypto.generateKeyPairSync('ed25519')
  const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' as const }
  return { alg, kid, privateKey: pair.privateKey, publicKey: pair.publicKey, jwk }
}

/** Signs a compact JWS with node:crypto (ES256 in the JOSE r||s encoding). */
export function signJws(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  key: KeyObject,
  alg: Alg,
): string {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(payload))}`
  const data = Buffer.from(input)
  const signature =
    alg === 'RS256'
      ? crypto.sign('sha256', data, key)
      : alg === 'ES256'
        ? crypto.sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })
        : crypto.sign(null, data, key)
  return `${input}.${b64u(signature)}`
}

/** A Keycloak-shaped access token body (~900 bytes once signed with RS256). */
export function accessClaims(issuer: string, extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000)
  return {
    exp: now + TOKEN_LIFETIME_S,
    iat: now,
    jti: crypto.randomUUID(),
    iss: issuer,
    aud: AUDIENCE,
    sub: crypto.randomUUID(),
    typ: 'Bearer',
    azp: 'bench-client',
    sid: crypto.randomUUID(),
    scope: 'openid profile email',
    realm_access: { roles: ['default-roles-bench', 'offline_access', 'uma_authorization'] },
    resource_access: { gateway: { roles: ['read', 'write'] } },
    preferred_username: 'bench-user',
    tenant: 't1',
    ...extra,
  }
}

export async function startOwnIssuer(): Promise<BenchIssuer> {
  const keys: Record<Alg, BenchKey> = {
    RS256: generateKey('RS256', 'rs256-1'),
    ES256: generateKey('ES256', 'es256-1'),
    EdDSA: generateKey('EdDSA', 'eddsa-1'),
  }
  const jwksBody = JSON.stringify({ keys: ALGS.map((alg) => keys[alg].jwk) })
  let fetches = 0
  const realmPath = `/realms/${REALM}`
  const jwksPath = `${realmPath}/protocol/openid-connect/certs`
  let base = ''
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    if (path === jwksPath) {
      fetches++
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' })
      res.end(jwksBody)
    } else if (path === `${realmPath}/.well-known/openid-configuration`) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          issuer: `${base}${realmPath}`,
          jwks_uri: `${base}${jwksPath}`,
          token_endpoint: `${base}${realmPath}/protocol/openid-connect/token`,
          authorization_endpoint: `${base}${realmPath}/protocol/openid-connect/auth`,
          id_token_signing_alg_values_supported: ALGS,
        }),
      )
    } else {
      res.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const issuer = `${base}${realmPath}`
  return {
    kind: 'own',
    url: base,
    issuer,
    jwksUri: `${base}${jwksPath}`,
    keys,
    mint(claims = {}, alg = 'RS256', kid = keys[alg].kid) {
      return signJws(
        { alg, typ: 'JWT', kid },
        accessClaims(issuer, claims),
        keys[alg].privateKey,
        alg,
      )
    },
    fetchCount: () => fetches,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** `count` distinct valid tokens spread over `tenants` tenants (`t0`, `t1`, …). */
export function mintPool(issuer: BenchIssuer, count: number, alg: Alg, tenants = 100): string[] {
  const tokens: string[] = []
  for (let i = 0; i < count; i++) tokens.push(issuer.mint({ tenant: `t${i % tenants}` }, alg))
  return tokens
}

/**
 * Forgeries with a known kid: each token keeps its own header and payload but carries the
 * signature of the next token, so it is well-formed, the right length, and never verifies.
 */
export function forge(tokens: readonly string[]): string[] {
  if (tokens.length < 2) throw new Error('forge() needs at least two tokens')
  return tokens.map((token, i) => {
    const next = tokens[(i + 1) % tokens.length]!
    return `${token.slice(0, token.lastIndexOf('.'))}${next.slice(next.lastIndexOf('.'))}`
  })
}

/** Tokens whose `kid` is in no key set (`unknown-0`, `unknown-1`, …), otherwise well-formed. */
export function unknownKid(issuer: BenchIssuer, count: number, alg: Alg = 'RS256'): string[] {
  const stranger = generateKey(alg, 'stranger')
  const tokens: string[] = []
  for (let i = 0; i < count; i++) {
    const header = { alg, typ: 'JWT', kid: `unknown-${i}` }
    tokens.push(signJws(header, accessClaims(issuer.issuer), stranger.privateKey, alg))
  }
  return tokens
}

/** `Bearer …` request headers for `gate.check`. */
export const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
