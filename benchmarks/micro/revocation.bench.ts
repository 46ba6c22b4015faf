/**
 * The revocation check on the verified-token cache hit path: one token repeated, tollgate's cache
 * on, without revocation, with revocation on and an empty list, and with 10,000 entries spread over
 * every kind (jti, sid, sub, clientId, and a realm not-before the token passes), so every lookup the
 * check can make is made. Target: at most 0.2 µs added to a hit.
 */
import { randomUUID } from 'node:crypto'
import { isMain } from '../config.ts'
import { bearer } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { closeGate, type Gate, gateOptions, isBuilt, loadCore } from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const REVOCATION_OFF = 'gate.check hit, revocation off'
export const REVOCATION_EMPTY = 'gate.check hit, revocation on (empty list)'
export const REVOCATION_FULL = 'gate.check hit, revocation on (10,000 entries)'
const ENTRIES_PER_KIND = 2500

type RevokingGate = Gate & { revoke(target: Record<string, unknown>): Promise<unknown> }

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-revocation')
  const issuer = await startIssuer()
  const gates: Gate[] = []
  try {
    if (!isBuilt()) {
      result.skipped.push({ what: 'revocation hit path', why: 'dist/ is not built' })
      return result
    }
    const core = await loadCore()
    const request = bearer(issuer.mint({}, 'RS256'))
    const base = gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'off' })
    const create = (revocation: boolean) => {
      const gate = core.createGate(
        (revocation ? { ...base, revocation: {} } : base) as typeof base,
      ) as RevokingGate
      gates.push(gate)
      return gate
    }
    const off = create(false)
    const empty = create(true)
    const full = create(true)
    if (typeof full.revoke !== 'function') {
      result.skipped.push({ what: 'revocation hit path', why: 'the built gate has no revoke()' })
      return result
    }
    for (let i = 0; i < ENTRIES_PER_KIND; i++) {
      await full.revoke({ jti: randomUUID() })
      await full.revoke({ sid: randomUUID() })
      await full.revoke({ sub: randomUUID() })
      await full.revoke({ clientId: `client-${i}` })
    }
    // A realm not-before the token passes (issued after it): the last lookup, made and passed.
    await full.revoke({ all: true, notBefore: Math.floor(Date.now() / 1000) - 3600 })
    for (const gate of gates) await gate.ready()
    const contenders: Contender[] = [
      [REVOCATION_OFF, () => off.check(request)],
      [REVOCATION_EMPTY, () => empty.check(request)],
      [REVOCATION_FULL, () => full.check(request)],
    ]
    result.rows.push(...(await measureCase('cache hit RS256 with revocation', contenders)))
  } finally {
    for (const gate of gates) await closeGate(gate)
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  const ns = (name: string) => result.rows.find((row) => row.contender === name)?.nsPerOp
  const offNs = ns(REVOCATION_OFF)
  for (const name of [REVOCATION_EMPTY, REVOCATION_FULL]) {
    const onNs = ns(name)
    if (offNs !== undefined && onNs !== undefined) {
      console.log(`  added by the revocation check (${name}): ${(onNs - offNs).toFixed(0)} ns`)
    }
  }
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
