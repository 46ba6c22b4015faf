/**
 * Runs every suite (or those named with `--only=micro,http,memory`), writes each one's
 * `results/<suite>-<timestamp>.json`, then `results/latest.json` (targets and ratios, read by
 * `check.ts`) and `results/latest.md` (the table), and prints the table.
 *
 *   tsx run.ts            full run (~10 s per HTTP case)
 *   tsx run.ts --quick    a few minutes
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { resultsDir, settings } from './config.ts'
import { runSuite as runHttp } from './http/run-http.ts'
import { stopAll } from './http/spawn.ts'
import { runSuite as runMemory } from './memory.bench.ts'
import { runSuite as runCache } from './micro/cache.bench.ts'
import { runSuite as runDpop } from './micro/dpop.bench.ts'
import { runSuite as runIntrospection } from './micro/introspection.bench.ts'
import { runSuite as runMcp } from './micro/mcp.bench.ts'
import { runSuite as runRateLimit } from './micro/rate-limit.bench.ts'
import { runSuite as runRevocation } from './micro/revocation.bench.ts'
import { runSuite as runStores } from './micro/stores.bench.ts'
import { runSuite as runTokenExchange } from './micro/token-exchange.bench.ts'
import { runSuite as runTokenSource } from './micro/token-source.bench.ts'
import { runSuite as runVerify } from './micro/verify.bench.ts'
import { renderReport } from './report.ts'
import { busyShare, machine, type SuiteResult, writeResult } from './results.ts'
import { evaluateIssue14Targets, evaluateTargets, ratios, type Suites } from './targets.ts'

const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',')
const wanted = (name: string) => !only || only.includes(name)
// `--skip=dpop,stores`: leaves micro suites out (the DPoP suite can exhaust its replay cache on a
// fast machine; the stores suite starts redis-server, PostgreSQL and memcached of its own).
const skipped = (name: string) =>
  (process.argv.find((arg) => arg.startsWith('--skip='))?.slice('--skip='.length) ?? '')
    .split(',')
    .includes(name)

async function main(): Promise<void> {
  const startedAt = new Date().toISOString()
  const busy = await busyShare()
  console.log(`tollgate benchmarks, ${settings.mode} run`)
  if (busy !== undefined && busy > 0.1) {
    console.warn(
      `warning: other processes use ${(busy * 100).toFixed(0)}% of the CPU; numbers will be noisy`,
    )
  }
  const suites: Suites = {}
  const files: string[] = []
  const keep = <T>(result: SuiteResult<T>): SuiteResult<T> => {
    files.push(writeResult(result as SuiteResult))
    return result
  }
  if (wanted('micro')) {
    suites.verify = keep(await runVerify())
    suites.cache = keep(await runCache())
    suites.rateLimit = keep(await runRateLimit())
    suites.tokenSource = keep(await runTokenSource())
    suites.tokenExchange = keep(await runTokenExchange())
    suites.revocation = keep(await runRevocation())
    suites.mcp = keep(await runMcp())
    if (!skipped('introspection')) suites.introspection = keep(await runIntrospection())
    if (!skipped('dpop')) suites.dpop = keep(await runDpop())
    if (!skipped('stores')) suites.stores = keep(await runStores())
  }
  if (wanted('memory')) suites.memory = keep(await runMemory())
  if (wanted('http')) suites.http = keep(await runHttp())

  const markdown = renderReport(suites, busy)
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, 'latest.md'), markdown)
  const latest = {
    startedAt,
    mode: settings.mode,
    machine: machine(),
    busy,
    targets: [...evaluateIssue14Targets(suites), ...evaluateTargets(suites)],
    ratios: ratios(suites),
    files,
  }
  writeFileSync(join(resultsDir, 'latest.json'), `${JSON.stringify(latest, null, 2)}\n`)
  console.log(`\n${markdown}`)
  console.log(`results: ${files.join(', ')}\nreport: ${join(resultsDir, 'latest.md')}`)
}

// A run that hangs (a child that never answers, a stuck fetch) must still end, and end its children.
const WATCHDOG_MS = (settings.mode === 'quick' ? 15 : 45) * 60_000
setTimeout(() => {
  console.error(`\nbenchmark run aborted: still running after ${WATCHDOG_MS / 60_000} min`)
  void stopAll().finally(() => process.exit(1))
}, WATCHDOG_MS).unref()

try {
  await main()
  process.exit(0)
} catch (error) {
  console.error(
    `\nbenchmark run aborted: ${error instanceof Error ? error.message : String(error)}`,
  )
  await stopAll()
  process.exit(1)
}
