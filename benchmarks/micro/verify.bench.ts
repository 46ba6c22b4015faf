/**
 * Cache-miss verification, per algorithm: node:crypto's raw check (the limit) vs tollgate's
 * `gate.check` with its cache off vs jose `jwtVerify` with a local key set vs fast-jwt with and
 * without its cache. Every contender rotates through the same pool of distinct tokens, larger than
 * fast-jwt's 1,000-entry cache, so nothing is served from memory.
 */
import { createVerifier } from 'fast-jwt'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { isMain, settings } from '../config.ts'
import { ALGS, AUDIENCE, bearer, mintPool } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { closeGate, type Gate, gateOptions, isBuilt, loadCore } from '../tollgate.ts'
import { rawVerifier } from './crypto-limit.ts'
import { type Contender, measureCase } from './measure.ts'

export const CRYPTO = 'node:crypto (limit)'
export const TOLLGATE = 'tollgate gate.check (cache off)'

const rotate = (tokens: readonly string[]) => {
  let i = 0
  return () => tokens[i++ % tokens.length]!
}

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-verify')
  const issuer = await startIssuer()
  const gates: Gate[] = []
  try {
    let core: Awaited<ReturnType<typeof loadCore>> | undefined
    if (isBuilt()) core = await loadCore()
    else result.skipped.push({ what: TOLLGATE, why: 'dist/ is not built' })
    const jwks = createLocalJWKSet({ keys: Object.values(issuer.keys).map((key) => key.jwk) })

    for (const alg of ALGS) {
      const key = issuer.keys[alg]
      const tokens = mintPool(issuer, settings.microPool, alg)
      const pem = key.publicKey.export({ type: 'spki', format: 'pem' }).toString()
      const fastOptions = {
        key: pem,
        algorithms: [alg],
        allowedIss: issuer.issuer,
        allowedAud: AUDIENCE,
      }
      const fastNoCache = createVerifier(fastOptions)
      const fastCache = createVerifier({ ...fastOptions, cache: true })
      const raw = rawVerifier(alg, key.publicKey)
      const joseOptions = { issuer: issuer.issuer, audience: AUDIENCE, algorithms: [alg] }

      const contenders: Contender[] = []
      const next = [rotate(tokens), rotate(tokens), rotate(tokens), rotate(tokens), rotate(tokens)]
      contenders.push([CRYPTO, () => raw(next[0]!())])
      if (core) {
        const gate = core.createGate(
          gateOptions(core, { authUrl: issuer.url, cacheEntries: false, limiter: 'off' }),
        )
        gates.push(gate)
        await gate.ready()
        contenders.push([TOLLGATE, () => gate.check(bearer(next[1]!()))])
      }
      contenders.push([
        'jose jwtVerify (local JWKS)',
        () => jwtVerify(next[2]!(), jwks, joseOptions),
      ])
      contenders.push(['fast-jwt (no cache)', () => fastNoCache(next[3]!())])
      contenders.push(['fast-jwt (cache, all misses)', () => fastCache(next[4]!())])
      result.rows.push(...(await measureCase(`verify ${alg} (cache miss)`, contenders, CRYPTO)))
    }
  } finally {
    for (const gate of gates) await closeGate(gate)
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
