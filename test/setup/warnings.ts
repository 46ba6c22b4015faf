/**
 * A green run is quiet: tollgate's own warnings never reach the run's output, and a
 * test file that makes tollgate warn without asserting it fails.
 *
 * vitest.config.ts starts the workers with `--disable-warning=TollgateWarning` (and the codes of
 * the two warnings tollgate emits as plain Warnings), which stops Node printing those only;
 * `process.on('warning')` listeners still receive them. A warning of tollgate's is then either
 * one a test asserts, or a failure of the test that caused it:
 *
 * - a test that expects a warning listens for it (`process.on('warning', …)`, as
 *   test/security/config.test.ts does) and asserts it: a warning received while a listener of the
 *   test file is registered is the test's to assert;
 * - any other TollgateWarning fails the test it was emitted in (or, outside a test, the file),
 *   with its code and whole message: nothing a user would need to see is hidden, it is only
 *   moved from the log to the test that has to say it is expected.
 *
 * Node's other warnings (deprecations, experimental features, listener leaks) are printed as
 * before.
 */
import { afterAll, afterEach, expect } from 'vitest'

/** What a warning of Node's `process.emitWarning` carries. */
interface EmittedWarning extends Error {
  readonly code?: string
}

interface Unexpected {
  readonly code: string | undefined
  readonly message: string
  /** The test running when it was emitted, or `undefined` between tests. */
  readonly test: string | undefined
}

/**
 * Test files whose warnings are known and not yet asserted: each is tolerated (and, like every
 * TollgateWarning, not printed) until its test asserts it or avoids it. Remove an entry once
 * its file is fixed; test/scripts/quiet-run.test.ts checks that every entry names a file that
 * exists.
 */
export const PENDING: ReadonlyArray<{ readonly file: string; readonly code: string }> = []

/** tollgate's: its TollgateWarning type, or a plain Warning with one of its `TOLLGATE_…` codes. */
const isTollgates = (warning: EmittedWarning): boolean =>
  warning.name === 'TollgateWarning' || (warning.code?.startsWith('TOLLGATE_') ?? false)

interface Watch {
  /** The listeners present before any test file's code (Node's printer, vitest's, this one's). */
  readonly own: Set<unknown>
  readonly unexpected: Unexpected[]
}

// Once per process, even if the worker runs several files: one listener, one list.
const WATCH = Symbol.for('tollgate.test.warnings')
const holder = globalThis as { [WATCH]?: Watch }
holder[WATCH] ??= startWatching()
const watch: Watch = holder[WATCH]

function startWatching(): Watch {
  const own = new Set<unknown>(process.listeners('warning'))
  const unexpected: Unexpected[] = []
  const record = (warning: EmittedWarning) => {
    if (!isTollgates(warning)) return
    // Any listener not present at start is the test file's own: it asserts what it receives.
    if (process.listeners('warning').some((listener) => !own.has(listener))) return
    const state = expect.getState()
    const file = state.testPath ?? ''
    if (PENDING.some((entry) => file.endsWith(entry.file) && entry.code === warning.code)) return
    unexpected.push({ code: warning.code, message: warning.message, test: state.currentTestName })
  }
  own.add(record)
  process.on('warning', record)
  return { own, unexpected }
}

function failOnUnexpected(where: string): void {
  if (watch.unexpected.length === 0) return
  const lines = watch.unexpected
    .splice(0)
    .map(
      ({ code, message, test }) =>
        `- [${code}] ${message}${test === undefined ? '' : ` (in "${test}")`}`,
    )
  throw new Error(
    `${where} made tollgate warn without asserting it (test/setup/warnings.ts): listen with process.on('warning') and assert the warning, or give the gate an onEvent listener so that it does not warn:\n${lines.join('\n')}`,
  )
}

afterEach(() => failOnUnexpected('This test'))
afterAll(() => failOnUnexpected('This file'))
