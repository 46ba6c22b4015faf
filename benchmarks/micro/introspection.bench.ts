/**
 * The introspection verdict cache hit (issue 32): one opaque token repeated through `gate.check`,
 * its verdict held after one call to an introspection endpoint on loopback, next to a JWT cache
 * hit of the same gate options. The difference is what a hit costs beyond a JWT hit: hashing the
 * token (SHA-256, the cache never holds the token) and the lookup. Target: within 2 µs.
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isMain } from '../config.ts'
import { AUDIENCE, bearer } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { closeGate, type Gate, gateOptions, isBuilt, loadCore } from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const JWT_HIT = 'gate.check, JWT cache hit'
export const INTROSPECTION_HIT = 'gate.check, introspection cache hit'

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-introspection')
  const issuer = await startIssuer()
  let calls = 0
  // An RFC 7662 endpoint that vouches for every token: only its first answer matters here.
  const endpoint = createServer((req, res) => {
    calls++
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          active: true,
          iss: issuer.issuer,
          aud: AUDIENCE,
          client_id: 'bench',
          scope: 'billing:read',
          exp: Math.floor(Date.now() / 1000) + 4 * 3600,
        }),
      )
    })
  })
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/introspect`
  const gates: Gate[] = []
  try {
    if (!isBuilt()) {
      result.skipped.push({ what: 'introspection hit path', why: 'dist/ is not built' })
      return result
    }
    const core = await loadCore()
    const base = gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'off' })
    const jwtGate = core.createGate(base)
    const introspecting = core.createGate({
      ...base,
      issuers: (base.issuers as Record<string, unknown>[]).map((entry) => ({
        ...entry,
        introspection: { endpoint: url, clientId: 'bench', clientSecret: 'bench-secret' },
      })),
    })
    gates.push(jwtGate, introspecting)
    await jwtGate.ready()
    const jwtRequest = bearer(issuer.mint({}, 'RS256'))
    const opaqueRequest = bearer(randomBytes(32).toString('base64url'))
    const contenders: Contender[] = [
      [JWT_HIT, () => jwtGate.check(jwtRequest)],
      [INTROSPECTION_HIT, () => introspecting.check(opaqueRequest)],
    ]
    result.rows.push(...(await measureCase('cache hit (one token repeated)', contenders, JWT_HIT)))
    result.notes.push(
      `introspection calls made: ${calls} (one for the token, plus readiness probes)`,
    )
  } finally {
    for (const gate of gates) await closeGate(gate)
    endpoint.closeAllConnections()
    await new Promise((resolve) => endpoint.close(resolve))
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
