/**
 * The token source's hot path: `get()` answered from a warm cache, the call every outgoing request
 * makes. The token comes once from the testing kit's Client Credentials endpoint on loopback; then
 * nothing but the cache is measured. For scale: `Promise.resolve()` of a string, the floor of any
 * promise-returning API. Target: under 1 µs.
 */
import { pathToFileURL } from 'node:url'
import { isMain } from '../config.ts'
import { REALM } from '../fixtures.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { isBuilt, loadClient, loadCore, paths } from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const TOKEN_SOURCE_WARM = 'tollgate tokenSource.get() (warm cache)'
const FLOOR = 'Promise.resolve(token) (floor)'

interface KitIssuer {
  url: string
  close(): Promise<void>
}

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-token-source')
  if (!isBuilt()) {
    result.skipped.push({ what: TOKEN_SOURCE_WARM, why: 'dist/ is not built' })
    return result
  }
  const testing = (await import(pathToFileURL(paths.testing).href)) as {
    createTestIssuer(options: object): Promise<KitIssuer>
  }
  const client = { clientId: 'bench-client', clientSecret: 'bench-only-secret' }
  const issuer = await testing.createTestIssuer({
    realms: [REALM],
    audience: 'office',
    clients: [client],
  })
  const core = await loadCore()
  const { createTokenSource } = await loadClient()
  const source = createTokenSource({
    issuer: core.keycloak({ authUrl: issuer.url, realms: [REALM] }),
    ...client,
  })
  try {
    const token = await source.get()
    const contenders: Contender[] = [
      [TOKEN_SOURCE_WARM, () => source.get()],
      [FLOOR, () => Promise.resolve(token)],
    ]
    result.rows.push(...(await measureCase('token source get(), warm cache', contenders)))
  } finally {
    source.close()
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
