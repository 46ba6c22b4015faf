/**
 * Starts the bench issuer: tollgate's testing kit once dist/ has it, else the self-contained one
 * (`BENCH_ISSUER=own` forces it). Every contender, competitors included, verifies against it.
 */
import { existsSync } from 'node:fs'
import { type BenchIssuer, startOwnIssuer } from './fixtures.ts'
import { startKitIssuer } from './kit-issuer.ts'
import { paths } from './tollgate.ts'

export async function startIssuer(): Promise<BenchIssuer> {
  if (process.env.BENCH_ISSUER !== 'own' && existsSync(paths.testing)) return startKitIssuer()
  return startOwnIssuer()
}
