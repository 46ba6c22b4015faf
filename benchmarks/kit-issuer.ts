/**
 * The bench issuer served by tollgate's own testing kit (`dist/src/testing`): the kit generates
 * the keys and serves discovery and the JWKS (and counts fetches); tokens are still signed here
 * with node:crypto from the kit's private keys, synchronously and with the same claims as the
 * self-contained issuer, so both issuers produce the same workload.
 */
import crypto from 'node:crypto'
import { pathToFileURL } from 'node:url'
import {
  ALGS,
  type Alg,
  AUDIENCE,
  accessClaims,
  type BenchIssuer,
  type BenchKey,
  REALM,
  signJws,
} from './fixtures.ts'
import { paths } from './tollgate.ts'

interface TestIssuer {
  url: string
  issuer(realm?: string): string
  jwksUri(realm?: string): string
  jwks(realm?: string): { keys: Record<string, unknown>[] }
  privateKey(kid: string): { jwk: Record<string, unknown> }
  fetchCount(realm?: string): number
  close(): Promise<void>
}

export async function startKitIssuer(): Promise<BenchIssuer> {
  const testing = (await import(pathToFileURL(paths.testing).href)) as {
    createTestIssuer(options: object): Promise<TestIssuer>
  }
  const kit = await testing.createTestIssuer({
    realms: [REALM],
    algorithms: ALGS,
    audience: AUDIENCE,
  })
  try {
    const published = kit.jwks(REALM).keys
    const keys = {} as Record<Alg, BenchKey>
    for (const alg of ALGS) {
      const jwk = published.find((key) => key.alg === alg)
      if (!jwk || typeof jwk.kid !== 'string')
        throw new Error(`the testing kit published no ${alg} key`)
      const privateKey = crypto.createPrivateKey({
        key: kit.privateKey(jwk.kid).jwk as crypto.JsonWebKey,
        format: 'jwk',
      })
      keys[alg] = {
        alg,
        kid: jwk.kid,
        privateKey,
        publicKey: crypto.createPublicKey(privateKey),
        jwk: { ...jwk, kid: jwk.kid, alg, use: 'sig' },
      }
    }
    const issuer = kit.issuer(REALM)
    return {
      kind: 'tollgate/testing',
      url: kit.url,
      issuer,
      jwksUri: kit.jwksUri(REALM),
      keys,
      mint(claims = {}, alg = 'RS256', kid = keys[alg].kid) {
        return signJws(
          { alg, typ: 'JWT', kid },
          accessClaims(issuer, claims),
          keys[alg].privateKey,
          alg,
        )
      },
      fetchCount: () => kit.fetchCount(REALM),
      close: () => kit.close(),
    }
  } catch (error) {
    await kit.close()
    throw error
  }
}
