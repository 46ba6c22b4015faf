/**
 * The closing lines of a test run, and the rules CI holds every run to: `vitest run` writes
 * `test-results.json` (vitest.config.ts, always, so `npm test` and CI agree) and the samples
 * runner (test/docs/run-samples.test.ts) writes `test-artifacts/samples.json`; this prints
 * `tests: N passed, N failed, N skipped` and then `samples: N run, N failed, N fragments (N
 * found)` as the last lines, and exits 1 when a test failed, a test file failed to run, any test
 * was skipped or left todo, fewer tests ran than the floor, a sample failed, or fewer samples ran
 * than the README and docs/ hold (counted here, from the Markdown, not taken from the runner).
 *
 *   tsx scripts/test-summary.ts [results.json] [floor.json] [samples.json]
 *
 * Defaults: `test-results.json`, `test/floor.json` (`{ "minimumTests": N }`) and
 * `test-artifacts/samples.json`. Raise the floor when a change adds tests; lowering it is a
 * deliberate, reviewed change, never a fix for a run.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

/** The part of vitest's JSON report (Jest's format) this script reads. */
export interface TestResults {
  readonly numPassedTests: number
  readonly numFailedTests: number
  /** Tests that did not run: `.skip`, `skipIf`, `ctx.skip()`, or never finished. */
  readonly numPendingTests: number
  readonly numTodoTests: number
  /** Files and `describe` blocks that failed, a failed test's included. */
  readonly numFailedTestSuites?: number
  readonly success?: boolean
}

/** What the repository holds to: at least this many tests must run (pass or fail). */
export interface TestFloor {
  readonly minimumTests: number
}

export interface TestSummary {
  /** `tests: N passed, N failed, N skipped` (skipped counts todo tests too: neither ran). */
  readonly line: string
  /** Why the run fails CI, one sentence each; empty when it passes. */
  readonly problems: readonly string[]
}

const COUNTS = ['numPassedTests', 'numFailedTests', 'numPendingTests', 'numTodoTests'] as const

/** Judges one run's results against the floor. Throws a `TypeError` on a report it cannot read. */
export function summarize(results: TestResults, floor: TestFloor): TestSummary {
  for (const name of COUNTS) {
    const value: unknown = results?.[name]
    if (!Number.isInteger(value) || (value as number) < 0) {
      throw new TypeError(`test results: ${name} is ${JSON.stringify(value)}, not a count`)
    }
  }
  if (!Number.isInteger(floor?.minimumTests) || floor.minimumTests < 1) {
    throw new TypeError(
      `test floor: minimumTests is ${JSON.stringify(floor?.minimumTests)}, not a positive integer`,
    )
  }
  const passed = results.numPassedTests
  const failed = results.numFailedTests
  const skipped = results.numPendingTests
  const todo = results.numTodoTests
  const ran = passed + failed
  const problems: string[] = []
  if (failed > 0) problems.push(`${failed} test(s) failed`)
  // A file that cannot load (syntax error, failing import) or a failing hook fails a suite
  // without failing any single test, so suites are read too (a failed test fails its suites).
  const failedSuites = results.numFailedTestSuites ?? 0
  if (failed === 0 && (failedSuites > 0 || results.success === false)) {
    problems.push(
      `${failedSuites || 'some'} test file(s) or suite(s) failed outside any test (a file that did not load, a failing hook)`,
    )
  }
  if (skipped > 0) problems.push(`${skipped} test(s) skipped: CI runs every test`)
  if (todo > 0) problems.push(`${todo} test(s) left todo: CI runs every test`)
  if (ran < floor.minimumTests) {
    problems.push(
      `${ran} test(s) ran, fewer than the ${floor.minimumTests} the suite holds (test/floor.json)`,
    )
  }
  return { line: `tests: ${passed} passed, ${failed} failed, ${skipped + todo} skipped`, problems }
}

/** What the samples runner writes when it ends (test/docs/run-samples.test.ts). */
export interface SampleResults {
  /** Samples whose scenario ran and held. */
  readonly run: number
  /** `file:line` of each sample whose scenario failed. */
  readonly failed: readonly string[]
}

/** The samples of README.md and docs/: those that must run, and the fragments that are not run. */
export interface SamplesFound {
  readonly runnable: number
  readonly fragments: number
}

/**
 * Judges the samples runner's results against the samples the documentation holds. Throws a
 * `TypeError` on results it cannot read.
 */
export function summarizeSamples(results: SampleResults, found: SamplesFound): TestSummary {
  const run: unknown = results?.run
  if (!Number.isInteger(run) || (run as number) < 0) {
    throw new TypeError(`samples results: run is ${JSON.stringify(run)}, not a count`)
  }
  const failed: unknown = results.failed
  if (!Array.isArray(failed) || !failed.every((where) => typeof where === 'string')) {
    throw new TypeError('samples results: failed is not a list of file:line')
  }
  const problems: string[] = []
  if (failed.length > 0) problems.push(`${failed.length} sample(s) failed: ${failed.join(', ')}`)
  if ((run as number) < found.runnable) {
    problems.push(
      `${run} sample(s) ran, fewer than the ${found.runnable} README.md and docs/ hold: every sample runs (test/docs/run-samples.test.ts)`,
    )
  }
  const fragments = `${found.fragments} fragment${found.fragments === 1 ? '' : 's'}`
  return {
    line: `samples: ${run} run, ${failed.length} failed, ${fragments} (${found.runnable + found.fragments} found)`,
    problems,
  }
}

/** Counts the samples of README.md and docs/ as the runner finds them. */
async function countSamples(): Promise<SamplesFound> {
  const { allSamples } = await import('../test/helpers/doc-samples.js')
  const samples = allSamples()
  const fragments = samples.filter(({ fragment }) => fragment).length
  return { runnable: samples.length - fragments, fragments }
}

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new Error(`cannot read the ${what} ${file}: ${(error as Error).message}`)
  }
}

/** Prints the problems, then the closing lines last; returns the exit code. */
export async function main(
  argv: readonly string[],
  log = console.log,
  found: () => Promise<SamplesFound> = countSamples,
): Promise<number> {
  const [
    resultsFile = 'test-results.json',
    floorFile = 'test/floor.json',
    samplesFile = 'test-artifacts/samples.json',
  ] = argv
  const lines: string[] = []
  const problems: string[] = []
  try {
    const summary = summarize(
      readJson(resultsFile, 'test results') as TestResults,
      readJson(floorFile, 'test floor') as TestFloor,
    )
    problems.push(...summary.problems)
    lines.push(summary.line)
  } catch (error) {
    problems.push((error as Error).message)
  }
  try {
    const samples = summarizeSamples(
      readJson(samplesFile, 'samples results') as SampleResults,
      await found(),
    )
    problems.push(...samples.problems)
    lines.push(samples.line)
  } catch (error) {
    problems.push((error as Error).message)
  }
  for (const problem of problems) log(`test-summary: ${problem}`)
  for (const line of lines) log(line)
  return problems.length === 0 ? 0 : 1
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2))
}
