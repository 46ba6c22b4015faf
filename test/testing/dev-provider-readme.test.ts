/**
 * The development provider sample of docs/testing.md is `samples/dev-provider.ts` word for word: `tsc`
 * type-checks that file with the rest of the tests, and this test runs it as a user would (tsx,
 * the package's public names) and checks what it prints.
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'

import { describe, expect, it } from 'vitest'

const SAMPLE = 'test/testing/samples/dev-provider.ts'

describe('docs/testing.md: the development provider sample', () => {
  it('is the sample file, word for word', () => {
    const readme = readFileSync('docs/testing.md', 'utf8')
    const start = readme.indexOf(`<!-- sample: ${SAMPLE} `)
    expect(start).toBeGreaterThan(-1)
    const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(start))?.[1]
    expect(block).toBe(readFileSync(SAMPLE, 'utf8'))
  })

  it('runs and prints what its comment says', async () => {
    const { stdout } = await promisify(execFile)('node_modules/.bin/tsx', [SAMPLE], {
      timeout: 60_000,
    })
    expect(stdout).toBe("orders-job [ 'orders:read' ]\n")
  }, 60_000)
})
