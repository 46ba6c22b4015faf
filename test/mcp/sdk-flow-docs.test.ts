/**
 * docs/mcp.md's "The MCP authorization spec, rule by rule" is held by the suite: every test title
 * its table names is a test of the MCP flow files (test/mcp/sdk-flow*.test.ts), and every test
 * of those files is named in the table.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')
const SECTION = '## The MCP authorization spec, rule by rule'

/** The test column of the section's table: each row's last cell, a backticked title. */
function tableTitles(): string[] {
  const text = readFileSync(join(ROOT, 'docs/mcp.md'), 'utf8')
  const start = text.indexOf(SECTION)
  expect(start).toBeGreaterThan(-1)
  const next = text.indexOf('\n## ', start + SECTION.length)
  const section = text.slice(start, next === -1 ? undefined : next)
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !/^\| (rule|---) \|/.test(line))
  return rows.map((row) => {
    const title = /\| `([^`]+)` \|$/.exec(row)?.[1]
    if (title === undefined) throw new Error(`a row of the table names no test: ${row}`)
    return title
  })
}

/** The titles of the tests (`it(…)`) of the flow files, as written. */
function flowTestTitles(): string[] {
  const directory = join(ROOT, 'test/mcp')
  return readdirSync(directory)
    .filter((name) => /^sdk-flow.*\.test\.ts$/.test(name) && name !== 'sdk-flow-docs.test.ts')
    .flatMap((name) => {
      const source = readFileSync(join(directory, name), 'utf8')
      return [...source.matchAll(/\bit\(\s*'([^']+)'/g)].map((match) => match[1] as string)
    })
}

describe("docs/mcp.md's rule-by-rule table", () => {
  it('names only tests of the MCP flow files, and every one of them', () => {
    const named = tableTitles()
    const tests = flowTestTitles()
    expect(named.length).toBeGreaterThan(0)
    expect(named.filter((title) => !tests.includes(title))).toEqual([])
    expect(tests.filter((title) => !named.includes(title))).toEqual([])
  })
})
