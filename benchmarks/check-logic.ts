/**
 * What `bench:check` decides, apart from files and the console, so a unit test can feed it
 * synthetic runs (test/benchmarks/check.test.ts). No imports: the root `tsc` and vitest read it.
 */

/** `benchmarks/baseline.json`: the ratios the gate enforces, from one run of one mode. */
export interface Baseline {
  note?: string
  /** The run mode the ratios come from (`quick` or `full`): a run of another mode is not comparable. */
  mode: string
  /** The noise band: a ratio may fall this fraction below its baseline before it is a regression. */
  tolerance: number
  measuredOn?: string
  ratios: Record<string, number>
}

/** The part of `results/latest.json` the check reads. */
export interface LatestRun {
  startedAt: string
  mode: string
  machine: { cpu: string; cores: number; node: string }
  ratios: Record<string, number>
}

export interface CheckOptions {
  tolerance: number
  /** Also fail on a ratio missing from the run, on another mode, and on a baseline with no ratios. */
  strict: boolean
}

export interface RatioVerdict {
  key: string
  baseline: number
  /** `undefined`: not measured in this run. */
  actual: number | undefined
  /** The lowest ratio that passes: `baseline × (1 − tolerance)`. */
  floor: number
  status: 'ok' | 'regression' | 'missing'
}

export interface CheckReport {
  verdicts: RatioVerdict[]
  /** Why the check fails, one sentence each; empty when it passes. */
  failures: string[]
  /** What it notes without failing (missing ratios without `strict`). */
  notes: string[]
  ok: boolean
}

/**
 * The ratios the gate enforces: tollgate's against the floor contender (HTTP, by server CPU per
 * request), against node:crypto (micro verification), and its Redis limiter against its memory
 * limiter, each measured within one run. Ratios to the bare framework are reported in the table
 * but not enforced: they move with a contended host by more than any noise band.
 */
export function isEnforced(key: string): boolean {
  return (
    (key.startsWith('http.') && key.includes('-tollgate.') && key.endsWith('.vs-floor-cpu')) ||
    (key.startsWith('micro.') && key.includes('.tollgate-') && key.endsWith('.vs-crypto')) ||
    key.startsWith('http.tollgate-redis-vs-memory.')
  )
}

/** Reads a tolerance from the command line or the environment; throws a `RangeError` on a bad one. */
export function parseTolerance(raw: string | undefined, fallback: number): number {
  const tolerance = raw === undefined ? fallback : Number(raw)
  if (raw === '' || !Number.isFinite(tolerance) || tolerance < 0 || tolerance >= 1) {
    throw new RangeError(`bad tolerance ${JSON.stringify(raw ?? fallback)}: a fraction in [0, 1)`)
  }
  return tolerance
}

/** A baseline from a run: its enforced ratios, rounded to three decimals, sorted by name. */
export function baselineFrom(latest: LatestRun, tolerance: number, note: string): Baseline {
  const ratios = Object.fromEntries(
    Object.entries(latest.ratios)
      .filter(([key]) => isEnforced(key))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => [key, Math.round(value * 1000) / 1000]),
  )
  return {
    note,
    mode: latest.mode,
    tolerance,
    measuredOn: `${latest.mode} run ${latest.startedAt}, ${latest.machine.cpu}, ${latest.machine.cores} cores, Node ${latest.machine.node}`,
    ratios,
  }
}

/** Judges a run's ratios against the baseline. */
export function checkRun(
  baseline: Baseline,
  latest: LatestRun,
  options: CheckOptions,
): CheckReport {
  const { tolerance, strict } = options
  const verdicts: RatioVerdict[] = Object.entries(baseline.ratios).map(([key, expected]) => {
    const actual = latest.ratios[key]
    const floor = expected * (1 - tolerance)
    const status = actual === undefined ? 'missing' : actual >= floor ? 'ok' : 'regression'
    return { key, baseline: expected, actual, floor, status }
  })
  const failures: string[] = []
  const notes: string[] = []
  const regressions = verdicts.filter((v) => v.status === 'regression').length
  const missing = verdicts.filter((v) => v.status === 'missing').length
  if (regressions > 0) {
    failures.push(
      `${regressions} ratio(s) more than ${percent(tolerance)} below the baseline (regression)`,
    )
  }
  if (missing > 0) {
    const message = `${missing} baseline ratio(s) missing from this run`
    if (strict) failures.push(message)
    else notes.push(`${message} (fails with --strict)`)
  }
  if (latest.mode !== baseline.mode) {
    const message = `this is a ${latest.mode} run, the baseline is from a ${baseline.mode} run`
    if (strict) failures.push(message)
    else notes.push(`${message}: ratios are not comparable (fails with --strict)`)
  }
  if (verdicts.length === 0) {
    const message = 'the baseline has no ratios: nothing is enforced'
    if (strict) failures.push(message)
    else notes.push(message)
  }
  return { verdicts, failures, notes, ok: failures.length === 0 }
}

const percent = (fraction: number) => `${(fraction * 100).toFixed(0)}%`

/** The check's lines, as printed: one per baseline ratio, then notes and the verdict. */
export function renderCheck(report: CheckReport): string[] {
  const width = Math.max(10, ...report.verdicts.map((v) => v.key.length))
  const lines = report.verdicts.map((v) => {
    const head = `  ${v.key.padEnd(width)}  baseline ${v.baseline.toFixed(3)}`
    if (v.actual === undefined) return `${head}  MISSING from this run`
    const change = ((v.actual / v.baseline - 1) * 100).toFixed(1).replace(/^-0\.0$/, '0.0')
    const verdict = v.status === 'ok' ? 'ok' : `REGRESSION (floor ${v.floor.toFixed(3)})`
    return `${head}  now ${v.actual.toFixed(3)}  (${change.startsWith('-') ? '' : '+'}${change}%)  ${verdict}`
  })
  for (const note of report.notes) lines.push(`bench:check: note: ${note}`)
  lines.push(report.ok ? 'bench:check: ok' : `bench:check: FAILED: ${report.failures.join('; ')}`)
  return lines
}
