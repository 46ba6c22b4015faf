/**
 * The verified-token cache hit path: one token repeated, tollgate's cache on, against fast-jwt's
 * cache hit and the node:crypto limit (which has no cache) for scale. Target: a hit under 1 µs.
 */
import { createVerifier } from 'fast-jwt'
import { isMain } from '../config.ts'
import { AUDIENCE, bearer } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { closeGate, type Gate, gateOptions, isBuilt, loadCore } from '../tollgate.ts'
import { rawVerifier } from './crypto-limit.ts'
import { type Contender, measureCase } from './measure.ts'

export const TOLLGATE_HIT = 'tollgate gate.check (cache hit)'
const CRYPTO = 'node:crypto (no cache)'

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-cache')
  const issuer = await startIssuer()
  let gate: Gate | undefined
  try {
    const key = issuer.keys.RS256
    const token = issuer.mint({}, 'RS256')
    const request = bearer(token)
    const pem = key.publicKey.export({ type: 'spki', format: 'pem' }).toString()
    const fastCache = createVerifier({
      key: pem,
      algorithms: ['RS256'],
      allowedIss: issuer.issuer,
      allowedAud: AUDIENCE,
      cache: true,
    })
    const raw = rawVerifier('RS256', key.publicKey)
    const contenders: Contender[] = [[CRYPTO, () => raw(token)]]
    if (isBuilt()) {
      const core = await loadCore()
      gate = core.createGate(
        gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'off' }),
      )
      await gate.ready()
      const hit = gate
      contenders.push([TOLLGATE_HIT, () => hit.check(request)])
    } else {
      result.skipped.push({ what: TOLLGATE_HIT, why: 'dist/ is not built' })
    }
    contenders.push(['fast-jwt (cache hit)', () => fastCache(token)])
    result.rows.push(
      ...(await measureCase('cache hit RS256 (one token repeated)', contenders, CRYPTO)),
    )
  } finally {
    await closeGate(gate)
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
