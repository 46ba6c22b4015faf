/**
 * What a DPoP request costs over a plain bearer request (issue 13): `gate.check` with the token's
 * verdict cached in both, so the difference is the proof: parse, RFC 7638 thumbprint, ES256
 * signature, htm/htu/iat/ath, and the in-memory replay cache. A cache-off bearer check (a full
 * RS256 token verification) is measured alongside for scale.
 *
 * Every proof must be new (a replayed one is refused, and cheaper), so proofs are signed before
 * measuring, a pool larger than the run needs; a pool used up moves on to a fresh gate.
 */
import crypto from 'node:crypto'
import { isMain, settings } from '../config.ts'
import { bearer, signJws } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import {
  type CoreModule,
  closeGate,
  type Gate,
  type GateOptions,
  gateOptions,
  isBuilt,
  loadCore,
} from '../tollgate.ts'
import { rawVerifier } from './crypto-limit.ts'
import { type Contender, formatNs, measureCase } from './measure.ts'

export const BEARER = 'tollgate gate.check, Bearer (verdict cached)'
export const DPOP = 'tollgate gate.check, DPoP ES256 proof (verdict cached)'
const FULL = 'tollgate gate.check, Bearer (cache off, RS256 verified)'
const PROOF_LIMIT = 'node:crypto ES256 check of one proof (limit)'
const BASE = 'https://api.example.test'
const PATH = '/orders'
/** Distinct proofs signed before measuring: ES256 verification is ≥ 20 µs, so a run needs fewer. */
const POOL = Math.ceil(settings.microCpuTimeNs / 20_000) + 5000
const SPARE_GATES = 3

function dpopClient() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = publicKey.export({ format: 'jwk' }) as Record<string, string>
  const publicJwk = { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
  // RFC 7638: the required members in lexicographic order, no whitespace.
  const jkt = crypto.createHash('sha256').update(JSON.stringify(publicJwk)).digest('base64url')
  return { privateKey, publicKey, publicJwk, jkt }
}

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-dpop')
  const issuer = await startIssuer()
  const gates: Gate[] = []
  try {
    if (!isBuilt()) {
      result.skipped.push({ what: DPOP, why: 'dist/ is not built' })
      return result
    }
    const core: CoreModule = await loadCore()
    const client = dpopClient()
    const token = issuer.mint({ cnf: { jkt: client.jkt } }, 'RS256')
    const plain = issuer.mint({}, 'RS256')
    const ath = crypto.createHash('sha256').update(token).digest('base64url')
    const iat = Math.floor(Date.now() / 1000)
    const header = { typ: 'dpop+jwt', alg: 'ES256', jwk: client.publicJwk }
    const proofs = Array.from({ length: POOL }, () =>
      signJws(
        header,
        { jti: crypto.randomUUID(), htm: 'GET', htu: `${BASE}${PATH}`, iat, ath },
        client.privateKey,
        'ES256',
      ),
    )
    const base = gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'off' })
    const dpopOptions = {
      ...base,
      dpop: {
        mode: 'allowed',
        publicBaseUrl: BASE,
        maxProofAgeSeconds: 600,
        // One client signs every proof: its per-key share (a tenth by default) must hold the pool too.
        replay: { maxEntries: POOL, maxEntriesPerKey: POOL },
      },
    } as GateOptions
    const readyGate = async (options: GateOptions) => {
      const gate = core.createGate(options)
      gates.push(gate)
      await gate.ready()
      return gate
    }
    const bearerGate = await readyGate(base)
    const fullGate = await readyGate(
      gateOptions(core, { authUrl: issuer.url, cacheEntries: false, limiter: 'off' }),
    )
    const dpopGates = await Promise.all(
      Array.from({ length: SPARE_GATES }, () => readyGate(dpopOptions)),
    )
    let next = 0
    let gateIndex = 0
    const dpopRequest = () => {
      if (next === proofs.length) {
        next = 0
        gateIndex++
        if (gateIndex === dpopGates.length) throw new Error('proof pool used up: raise POOL')
      }
      const request = {
        method: 'GET',
        url: PATH,
        headers: { authorization: `DPoP ${token}`, dpop: proofs[next++] as string },
      }
      return (dpopGates[gateIndex] as Gate).check(request as never)
    }
    const plainRequest = bearer(plain)
    const rawProof = rawVerifier('ES256', client.publicKey)
    const oneProof = proofs[0] as string
    const contenders: Contender[] = [
      [BEARER, () => bearerGate.check(plainRequest)],
      [DPOP, dpopRequest],
      [PROOF_LIMIT, () => rawProof(oneProof)],
      [FULL, () => fullGate.check(plainRequest)],
    ]
    const rows = await measureCase('DPoP request vs bearer request (gate.check)', contenders)
    result.rows.push(...rows)
    const bearerRow = rows.find((row) => row.contender === BEARER) as MicroRow
    for (const row of rows) {
      if (row === bearerRow) continue
      row.note = `+${formatNs(row.nsPerOp - bearerRow.nsPerOp)} over ${BEARER}`
    }
    const dpopRow = rows.find((row) => row.contender === DPOP) as MicroRow
    console.log(`  DPoP costs ${dpopRow.note}`)
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
