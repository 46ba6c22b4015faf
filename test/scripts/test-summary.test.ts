import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import {
  main,
  type SampleResults,
  summarize,
  summarizeSamples,
  type TestResults,
} from '../../scripts/test-summary.js'

const FLOOR = { minimumTests: 100 }

/** A clean run of `passed` tests, with any counts overridden. */
function results(passed: number, overrides: Partial<TestResults> = {}): TestResults {
  return {
    numPassedTests: passed,
    numFailedTests: 0,
    numPendingTests: 0,
    numTodoTests: 0,
    numFailedTestSuites: 0,
    success: true,
    ...overrides,
  }
}

describe('summarize', () => {
  it('passes a clean run at or above the floor, with the closing line', () => {
    for (const passed of [100, 2770]) {
      expect(summarize(results(passed), FLOOR)).toEqual({
        line: `tests: ${passed} passed, 0 failed, 0 skipped`,
        problems: [],
      })
    }
  })

  it('fails a run with a failed test and counts it in the line', () => {
    const summary = summarize(
      results(120, { numFailedTests: 2, numFailedTestSuites: 3, success: false }),
      FLOOR,
    )
    expect(summary.line).toBe('tests: 120 passed, 2 failed, 0 skipped')
    expect(summary.problems).toEqual(['2 test(s) failed'])
  })

  it('fails a run with one skipped test, and prints it as skipped', () => {
    const summary = summarize(results(150, { numPendingTests: 1 }), FLOOR)
    expect(summary.line).toBe('tests: 150 passed, 0 failed, 1 skipped')
    expect(summary.problems).toEqual(['1 test(s) skipped: CI runs every test'])
  })

  it('fails a run with a todo test, counted among the skipped in the line', () => {
    const summary = summarize(results(150, { numPendingTests: 2, numTodoTests: 1 }), FLOOR)
    expect(summary.line).toBe('tests: 150 passed, 0 failed, 3 skipped')
    expect(summary.problems).toEqual([
      '2 test(s) skipped: CI runs every test',
      '1 test(s) left todo: CI runs every test',
    ])
  })

  it('fails a clean run of fewer tests than the floor (a file that quietly stopped collecting)', () => {
    const summary = summarize(results(99), FLOOR)
    expect(summary.line).toBe('tests: 99 passed, 0 failed, 0 skipped')
    expect(summary.problems).toEqual([
      '99 test(s) ran, fewer than the 100 the suite holds (test/floor.json)',
    ])
  })

  it('counts failed tests as run for the floor', () => {
    const summary = summarize(results(90, { numFailedTests: 10, success: false }), FLOOR)
    expect(summary.problems).toEqual(['10 test(s) failed'])
  })

  it('fails a run whose only failure is outside any test (a file that did not load)', () => {
    const summary = summarize(results(150, { numFailedTestSuites: 1, success: false }), FLOOR)
    expect(summary.line).toBe('tests: 150 passed, 0 failed, 0 skipped')
    expect(summary.problems).toEqual([
      '1 test file(s) or suite(s) failed outside any test (a file that did not load, a failing hook)',
    ])
  })

  it.each([
    ['a missing count', { numPassedTests: 3 }],
    ['a count that is not an integer', { ...results(1), numTodoTests: '0' }],
    ['a negative count', { ...results(1), numFailedTests: -1 }],
  ])('refuses a report with %s', (_what, report) => {
    expect(() => summarize(report as unknown as TestResults, FLOOR)).toThrow(TypeError)
  })

  it.each([
    ['missing', {}],
    ['zero', { minimumTests: 0 }],
    ['a string', { minimumTests: '2770' }],
  ])('refuses a floor that is %s', (_what, floor) => {
    expect(() => summarize(results(100), floor as never)).toThrow(TypeError)
  })
})

describe('summarizeSamples', () => {
  const FOUND = { runnable: 59, fragments: 1 }
  const ran = (run: number, failed: string[] = []): SampleResults => ({ run, failed })

  it('passes when every sample found ran, with the closing line', () => {
    expect(summarizeSamples(ran(59), FOUND)).toEqual({
      line: 'samples: 59 run, 0 failed, 1 fragment (60 found)',
      problems: [],
    })
  })

  it('fails when the runner ran fewer samples than the docs hold', () => {
    const summary = summarizeSamples(ran(57), FOUND)
    expect(summary.line).toBe('samples: 57 run, 0 failed, 1 fragment (60 found)')
    expect(summary.problems).toEqual([
      '57 sample(s) ran, fewer than the 59 README.md and docs/ hold: every sample runs (test/docs/run-samples.test.ts)',
    ])
  })

  it('fails naming each sample that failed', () => {
    const summary = summarizeSamples(ran(58, ['docs/providers/auth0.md:21']), FOUND)
    expect(summary.line).toBe('samples: 58 run, 1 failed, 1 fragment (60 found)')
    expect(summary.problems).toEqual([
      '1 sample(s) failed: docs/providers/auth0.md:21',
      '58 sample(s) ran, fewer than the 59 README.md and docs/ hold: every sample runs (test/docs/run-samples.test.ts)',
    ])
  })

  it.each([
    ['no run count', { failed: [] }],
    ['a run count that is not an integer', { run: '59', failed: [] }],
    ['failures that are not a list', { run: 59, failed: 'x' }],
  ])('refuses results with %s', (_what, results) => {
    expect(() => summarizeSamples(results as never, FOUND)).toThrow(TypeError)
  })
})

describe('main', () => {
  const dir = mkdtempSync(join(tmpdir(), 'test-summary-'))
  const write = (name: string, value: unknown) => {
    const file = join(dir, name)
    writeFileSync(file, JSON.stringify(value))
    return file
  }
  const found = async () => ({ runnable: 3, fragments: 0 })
  const samples = write('samples.json', { found: 3, run: 3, failed: [] })
  const run = async (...argv: string[]) => {
    const lines: string[] = []
    const code = await main(argv, (line) => lines.push(line), found)
    return { code, lines }
  }

  it('prints the closing lines last and exits 0 for a clean run', async () => {
    const floor = write('floor.json', { note: 'why', minimumTests: 2 })
    expect(await run(write('clean.json', results(2)), floor, samples)).toEqual({
      code: 0,
      lines: [
        'tests: 2 passed, 0 failed, 0 skipped',
        'samples: 3 run, 0 failed, 0 fragments (3 found)',
      ],
    })
  })

  it('prints each problem before the closing lines and exits 1', async () => {
    const floor = write('floor.json', { minimumTests: 5 })
    const skipped = write('skipped.json', results(4, { numPendingTests: 1 }))
    const fewer = write('fewer.json', { run: 2, failed: [] })
    expect(await run(skipped, floor, fewer)).toEqual({
      code: 1,
      lines: [
        'test-summary: 1 test(s) skipped: CI runs every test',
        'test-summary: 4 test(s) ran, fewer than the 5 the suite holds (test/floor.json)',
        'test-summary: 2 sample(s) ran, fewer than the 3 README.md and docs/ hold: every sample runs (test/docs/run-samples.test.ts)',
        'tests: 4 passed, 0 failed, 1 skipped',
        'samples: 2 run, 0 failed, 0 fragments (3 found)',
      ],
    })
  })

  it('exits 1 without a tests line when there are no results (vitest never wrote them)', async () => {
    const floor = write('floor.json', { minimumTests: 5 })
    const { code, lines } = await run(join(dir, 'absent.json'), floor, samples)
    expect(code).toBe(1)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^test-summary: cannot read the test results .*absent\.json/)
    expect(lines[1]).toBe('samples: 3 run, 0 failed, 0 fragments (3 found)')
  })

  it('exits 1 when the samples runner left no results (it did not run)', async () => {
    const floor = write('floor.json', { minimumTests: 2 })
    const { code, lines } = await run(write('ok.json', results(2)), floor, join(dir, 'none.json'))
    expect(code).toBe(1)
    expect(lines[0]).toMatch(/^test-summary: cannot read the samples results .*none\.json/)
    expect(lines.at(-1)).toBe('tests: 2 passed, 0 failed, 0 skipped')
  })

  it('counts the samples of README.md and docs/ itself, fragments apart', async () => {
    const { allSamples } = await import('../helpers/doc-samples.js')
    const all = allSamples()
    const fragments = all.filter(({ fragment }) => fragment).length
    const lines: string[] = []
    const floor = write('floor.json', { minimumTests: 2 })
    const everyOne = write('all.json', { run: all.length - fragments, failed: [] })
    expect(await main([write('ok.json', results(2)), floor, everyOne], (l) => lines.push(l))).toBe(
      0,
    )
    expect(lines.at(-1)).toBe(
      `samples: ${all.length - fragments} run, 0 failed, ${fragments} fragment${fragments === 1 ? '' : 's'} (${all.length} found)`,
    )
  })
})

describe('the repository floor', () => {
  it('is a positive count the summary accepts', async () => {
    const { default: floor } = await import('../floor.json', { with: { type: 'json' } })
    expect(summarize(results(floor.minimumTests), floor).problems).toEqual([])
  })
})
