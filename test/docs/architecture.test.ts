/**
 * docs/architecture.md is the map a newcomer reads first: it must name every folder of `src/` and
 * `adapters/`, and every file it names must exist, so that it cannot silently fall behind the code.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'

import { describe, expect, it } from 'vitest'

const MAP = readFileSync('docs/architecture.md', 'utf8')

function folders(root: string): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `${root}/${entry.name}/`)
}

describe('docs/architecture.md', () => {
  it.each([...folders('src'), ...folders('adapters')])('names the folder %s', (folder) => {
    expect(MAP).toContain(`\`${folder}`)
  })

  it('names only source files that exist', () => {
    const named = [...MAP.matchAll(/`((?:src|adapters|test|scripts)\/[\w./-]+\.ts)`/g)].map(
      (match) => match[1] as string,
    )
    expect(named.length).toBeGreaterThan(40)
    expect(named.filter((path) => !existsSync(path))).toEqual([])
  })

  it('lists every refusal reason of the gate in the request path', () => {
    const errors = readFileSync('src/errors.ts', 'utf8')
    const union = errors.slice(
      errors.indexOf('export type RefusalReason'),
      errors.indexOf('/** What every error constructor accepts. */'),
    )
    const reasons = [...union.matchAll(/\| '([a-z_]+)'/g)].map((match) => match[1] as string)
    expect(reasons.length).toBeGreaterThan(30)
    expect(reasons.filter((reason) => !MAP.includes(`\`${reason}\``))).toEqual([])
  })
})

describe('CONTRIBUTING.md', () => {
  const guide = readFileSync('CONTRIBUTING.md', 'utf8')
  const commands = [...guide.matchAll(/^(npx|npm|bash) ([^#\n]+?)\s*(?:#.*)?$/gm)].map((match) =>
    `${match[1]} ${match[2]}`.trim(),
  )

  it('links to the map of the code', () => {
    expect(guide).toContain('](docs/architecture.md)')
  })

  it('names only npm scripts that exist', () => {
    const scripts = JSON.parse(readFileSync('package.json', 'utf8')).scripts as Record<
      string,
      string
    >
    const named = commands
      .filter((command) => command.startsWith('npm run '))
      .map((command) => command.split(' ')[2] as string)
    expect(named.length).toBeGreaterThan(1)
    expect(named.filter((name) => scripts[name] === undefined)).toEqual([])
  })

  it('runs tests from paths that exist, and a name filter that matches a test there', () => {
    const vitest = commands.filter((command) => command.startsWith('npx vitest run '))
    expect(vitest.length).toBeGreaterThan(2)
    for (const command of vitest) {
      const [, path, filter] = /^npx vitest run (\S+)(?: -t '([^']+)')?/.exec(command) ?? []
      expect(existsSync(path as string), command).toBe(true)
      if (filter !== undefined) expect(readFileSync(path as string, 'utf8')).toContain(filter)
    }
  })
})
