/**
 * A green run is quiet: with the repository's vitest configuration, a test that makes
 * tollgate warn without asserting it fails, naming the warning; one that asserts it passes; none
 * of tollgate's warnings is printed; what is not tollgate's (another library's warning,
 * oidc-provider's lines) still is. Runs vitest on the fixtures of
 * test/setup/fixtures/ through the same configuration (test/setup/fixtures/vitest.config.ts).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { beforeAll, describe, expect, it } from 'vitest'

import { PENDING } from '../setup/warnings.js'

const ROOT = join(import.meta.dirname, '../..')
const VITEST = join(ROOT, 'node_modules/vitest/vitest.mjs')

interface FileResult {
  readonly name: string
  readonly status: string
  readonly assertionResults: ReadonlyArray<{
    readonly title: string
    readonly status: string
    readonly failureMessages: readonly string[]
  }>
}

describe('a run of the suite', () => {
  let output: string
  let exitCode: number | null
  let files: Map<string, FileResult>

  beforeAll(() => {
    const results = join(mkdtempSync(join(tmpdir(), 'tollgate-quiet-run-')), 'results.json')
    const run = spawnSync(
      process.execPath,
      [VITEST, 'run', '--config', 'test/setup/fixtures/vitest.config.ts'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, QUIET_RUN_RESULTS: results, NO_COLOR: '1', FORCE_COLOR: '0' },
        timeout: 180_000,
      },
    )
    output = `${run.stdout}\n${run.stderr}`
    exitCode = run.status
    const report = JSON.parse(readFileSync(results, 'utf8')) as { testResults: FileResult[] }
    files = new Map(
      report.testResults.map((file) => [file.name.slice(file.name.lastIndexOf('/') + 1), file]),
    )
  }, 200_000)

  it('fails a test that makes tollgate warn without asserting it, naming the warning', () => {
    expect(exitCode).toBe(1)
    const tests = files.get('unasserted.fixture.ts')?.assertionResults ?? []
    expect(tests.map(({ title, status }) => [title, status])).toEqual([
      ['warns without asserting it', 'failed'],
      ['emits a plain Warning with a code of tollgate without asserting it', 'failed'],
    ])
    expect(tests[0]?.failureMessages.join('\n')).toContain(
      '[TOLLGATE_QUIET_RUN_UNASSERTED] unasserted fixture warning (in "warns without asserting it")',
    )
    expect(tests[1]?.failureMessages.join('\n')).toContain(
      '[TOLLGATE_INSECURE_KEY_URL] plain fixture warning',
    )
  })

  it('passes a test that asserts the warning it causes', () => {
    expect(files.get('asserted.fixture.ts')?.status).toBe('passed')
  })

  it('prints none of tollgate’s warnings', () => {
    expect(output).not.toMatch(/TollgateWarning|\] Warning: plain fixture warning/)
    expect(output).not.toContain('a warning the fixture asserts')
  })

  it('prints the warnings that are not tollgate’s', () => {
    expect(files.get('others.fixture.ts')?.status).toBe('passed')
    expect(output).toContain(
      '[OTHER_LIBRARY] Warning: quiet-run fixture, a warning of another library',
    )
    expect(output).toContain('oidc-provider WARNING: quiet-run fixture, another notice')
  })
})

describe('test/setup/warnings.ts', () => {
  it('tolerates warnings only of test files that exist', () => {
    for (const { file } of PENDING) expect(existsSync(join(ROOT, file)), file).toBe(true)
  })
})
