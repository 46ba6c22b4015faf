/**
 * The closing line of a test run, and the rules CI holds every run to: `vitest run` writes
 * `test-results.json` (vitest.config.ts, always, so `npm test` and CI agree); this prints
 * `tests: N passed, N failed, N skipped` as the last line and exits 1 when a test failed, a test
 * file failed to run, any test was skipped or left todo, or fewer tests ran than the floor.
 *
 *   tsx scripts/test-summary.ts [results.json] [floor.json]
 *
 * Defaults: `test-results.json` and `test/floor.json` (`{ "minimumTests": N }`). Raise the floor
 * when a change adds tests; lowering it is a deliberate, reviewed change, never a fix for a run.
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

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new Error(`cannot read the ${what} ${file}: ${(error as Error).message}`)
  }
}

/** Prints the problems, then the closing line last; returns the exit code. */
export function main(argv: readonly string[], log = console.log): number {
  const [resultsFile = 'test-results.json', floorFile = 'test/floor.json'] = argv
  try {
    const summary = summarize(
      readJson(resultsFile, 'test results') as TestResults,
      readJson(floorFile, 'test floor') as TestFloor,
    )
    for (const problem of summary.problems) log(`test-summary: ${problem}`)
    log(summary.line)
    return summary.problems.length === 0 ? 0 : 1
  } catch (error) {
    log(`test-summary: ${(error as Error).message}`)
    return 1
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main(process.argv.slice(2))
}
