/**
 * `bench:check`: fails (exit 1) when a ratio of the latest run falls more than the tolerance below
 * the committed baseline. Ratios are relative to a baseline measured in the same run (bare
 * framework, node:crypto), so they travel between machines far better than req/s.
 *
 *   tsx check.ts                      tolerance from baseline.json, else 15%
 *   tsx check.ts --tolerance=0.2      or BENCH_TOLERANCE=0.2
 *   tsx check.ts --strict             a baseline ratio missing from the run also fails
 *   tsx check.ts --update             writes baseline.json from the latest run (tollgate's ratios)
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { benchDir, resultsDir } from './config.ts'

interface Baseline {
  note?: string
  tolerance?: number
  measuredOn?: string
  ratios: Record<string, number>
}

interface Latest {
  startedAt: string
  mode: string
  machine: { cpu: string; cores: number; node: string }
  ratios: Record<string, number>
}

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

const latest = read<Latest>(latestFile, 'run `npm run bench:quick` or `npm run bench` first')

if (flag('update')) {
  const ratios = Object.fromEntries(
    Object.entries(latest.ratios)
      .filter(([key]) => key.includes('tollgate'))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => [key, Math.round(value * 1000) / 1000]),
  )
  const baseline: Baseline = {
    note: 'Ratios (higher is better) from `npm run bench:quick`; refresh with `npm --prefix benchmarks run check -- --update`.',
    tolerance: 0.15,
    measuredOn: `${latest.mode} run ${latest.startedAt}, ${latest.machine.cpu}, ${latest.machine.cores} cores, Node ${latest.machine.node}`,
    ratios,
  }
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`)
  console.log(`bench:check: wrote ${Object.keys(ratios).length} ratios to ${baselineFile}`)
  process.exit(0)
}

const baseline = read<Baseline>(
  baselineFile,
  'commit one with `npm --prefix benchmarks run check -- --update`',
)
const toleranceRaw = arg('tolerance') ?? process.env.BENCH_TOLERANCE
const tolerance = toleranceRaw !== undefined ? Number(toleranceRaw) : (baseline.tolerance ?? 0.15)
if (!Number.isFinite(tolerance) || tolerance < 0 || tolerance >= 1) {
  console.error(`bench:check: bad tolerance ${toleranceRaw}`)
  process.exit(1)
}

let failures = 0
let missing = 0
const width = Math.max(...Object.keys(baseline.ratios).map((key) => key.length), 10)
console.log(
  `bench:check: ${latestFile} against ${baselineFile}, tolerance ${(tolerance * 100).toFixed(0)}%`,
)
for (const [key, expected] of Object.entries(baseline.ratios)) {
  const actual = latest.ratios[key]
  if (actual === undefined) {
    missing++
    console.log(`  ${key.padEnd(width)}  baseline ${expected.toFixed(3)}  MISSING from this run`)
    continue
  }
  const floor = expected * (1 - tolerance)
  const ok = actual >= floor
  if (!ok) failures++
  const change = ((actual / expected - 1) * 100).toFixed(1).replace(/^-0\.0$/, '0.0')
  console.log(
    `  ${key.padEnd(width)}  baseline ${expected.toFixed(3)}  now ${actual.toFixed(3)}  (${change.startsWith('-') ? '' : '+'}${change}%)  ${ok ? 'ok' : `REGRESSION (floor ${floor.toFixed(3)})`}`,
  )
}
if (Object.keys(baseline.ratios).length === 0) console.log('  (baseline has no ratios yet)')
const strictFail = flag('strict') && missing > 0
if (failures > 0 || strictFail) {
  console.error(`bench:check: ${failures} regression(s)${missing ? `, ${missing} missing` : ''}`)
  process.exit(1)
}
console.log(
  `bench:check: ok${missing ? ` (${missing} baseline ratio(s) not measured in this run)` : ''}`,
)
