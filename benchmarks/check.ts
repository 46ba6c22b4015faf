/**
 * `bench:check`: judges the latest run's ratios against the committed baseline (`baseline.json`).
 * Ratios are relative to contenders measured in the same run (the floor contender, node:crypto,
 * the memory limiter), so they travel between machines and load far better than req/s. The
 * decisions live in `check-logic.ts`, unit-tested on synthetic runs.
 *
 *   tsx check.ts                      noise band from baseline.json (`tolerance`)
 *   tsx check.ts --tolerance=0.2      or BENCH_TOLERANCE=0.2
 *   tsx check.ts --strict             what CI runs: a baseline ratio missing from the run, a run
 *                                     of another mode or an empty baseline also fail
 *   tsx check.ts --update             writes baseline.json from the latest run (enforced ratios)
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  type Baseline,
  baselineFrom,
  checkRun,
  type LatestRun,
  parseTolerance,
  renderCheck,
} from './check-logic.ts'
import { benchDir, resultsDir } from './config.ts'

/** The noise band a new baseline states, unless `--tolerance` says otherwise. */
const DEFAULT_TOLERANCE = 0.15

const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const flag = (name: string) => process.argv.includes(`--${name}`)

const baselineFile = arg('baseline') ?? join(benchDir, 'baseline.json')
const latestFile = arg('results') ?? join(resultsDir, 'latest.json')

function read<T>(file: string, hint: string): T {
  if (!existsSync(file)) {
    console.error(`bench:check: ${file} not found (${hint})`)
    process.exit(1)
  }
  return JSON.parse(readFileSync(file, 'utf8')) as T
}

function tolerance(fallback: number): number {
  try {
    return parseTolerance(arg('tolerance') ?? process.env.BENCH_TOLERANCE, fallback)
  } catch (error) {
    console.error(`bench:check: ${(error as Error).message}`)
    process.exit(1)
  }
}

const latest = read<LatestRun>(latestFile, 'run `npm run bench:quick` first')

if (flag('update')) {
  const baseline = baselineFrom(
    latest,
    tolerance(DEFAULT_TOLERANCE),
    `Enforced ratios (higher is better) of one \`npm run bench:${latest.mode === 'quick' ? 'quick' : 'bench'}\` run, the mode CI runs; \`tolerance\` is the noise band. Refresh with \`npm --prefix benchmarks run check -- --update\` after that run (benchmarks/README.md).`,
  )
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`)
  console.log(
    `bench:check: wrote ${Object.keys(baseline.ratios).length} ratios (${latest.mode} run) to ${baselineFile}`,
  )
  process.exit(0)
}

const baseline = read<Baseline>(
  baselineFile,
  'commit one with `npm --prefix benchmarks run check -- --update`',
)
const band = tolerance(baseline.tolerance ?? DEFAULT_TOLERANCE)
const report = checkRun(baseline, latest, { tolerance: band, strict: flag('strict') })
console.log(
  `bench:check: ${latestFile} (${latest.mode} run) against ${baselineFile} (${baseline.mode} run), noise band ${(band * 100).toFixed(0)}%${flag('strict') ? ', strict' : ''}`,
)
for (const line of renderCheck(report)) console.log(line)
process.exit(report.ok ? 0 : 1)
