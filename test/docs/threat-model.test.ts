/**
 * docs/security.md's threat model is held by the suite: every test it names
 * (`test/path.test.ts › describe › test name`, nested describes joined with ›) must exist, found
 * by reading the test file's `describe`/`it`/`test` titles (with `.each` titles as written, `%s`
 * and all); every item of the threat model names at least one test, or is marked open; and every
 * capability and every standard the threat model promises to cover has its section or items.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')
const DOC = 'docs/security.md'
const SEPARATOR = ' › '
/** A reference to a test: a test file, then the titles down to the test or describe named. */
const REFERENCE = /`(test\/[^`]+?\.test\.ts)((?: › [^`]+)*)`/g
/** An item left open: named in the report, to be filled in (the only other form an item may take). */
const OPEN = '**Open**'

const CAPABILITIES = [
  'Bearer extraction',
  'JWT verification and keys',
  'Introspection',
  'DPoP',
  'mTLS binding',
  'Delegation and token exchange',
  'Step-up',
  'Revocation and back-channel logout',
  'Token Status Lists',
  'Shared Signals (SSF, CAEP, RISC)',
  'MCP endpoints (per-operation policy)',
  'The limiter and its stores',
  'Sign-in',
  'The token source',
  'The development provider',
] as const

const STANDARDS = [
  'RFC 6750 §5',
  'RFC 7662 §4',
  'RFC 8693 §5',
  'RFC 8705 §7',
  'RFC 9449 §11',
  'RFC 9470 §7',
  'RFC 9701 §6',
  'RFC 9728 §7',
  'Back-Channel Logout §4',
  'RFC 9700',
] as const

/**
 * Every title path of a test file: each `describe` and each test, as its titles joined with ›.
 * A `.each` title is kept as written (`%s` and all); when its table is an array written in the
 * file (inline, or a `const` of this file) whose rows are strings or start with one, each row's
 * title is added too, with the first `%s` replaced by that string.
 */
function titlePaths(source: string, fileName = 'test.ts'): Set<string> {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true)
  const paths = new Set<string>()
  const constants = new Map<string, ts.Expression>()
  const collect = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      constants.set(node.name.text, node.initializer)
    }
    ts.forEachChild(node, collect)
  }
  collect(file)
  const unwrap = (node: ts.Expression): ts.Expression => {
    let at = node
    while (
      ts.isAsExpression(at) ||
      ts.isSatisfiesExpression(at) ||
      ts.isParenthesizedExpression(at) ||
      ts.isTypeAssertionExpression(at)
    ) {
      at = at.expression
    }
    if (ts.isIdentifier(at)) {
      const bound = constants.get(at.text)
      if (bound !== undefined && bound !== node) return unwrap(bound)
    }
    return at
  }
  const textOf = (node: ts.Expression | undefined): string | undefined => {
    if (node === undefined) return undefined
    const at = unwrap(node)
    if (ts.isStringLiteral(at) || ts.isNoSubstitutionTemplateLiteral(at)) return at.text
    return undefined
  }
  /** The first string of each row of a `.each` table, when the table is written in the file. */
  const rowsOf = (table: ts.Expression | undefined): string[] => {
    if (table === undefined) return []
    const at = unwrap(table)
    if (!ts.isArrayLiteralExpression(at)) return []
    const rows: string[] = []
    for (const row of at.elements) {
      const inner = unwrap(row as ts.Expression)
      const first = ts.isArrayLiteralExpression(inner) ? inner.elements[0] : inner
      const text = textOf(first as ts.Expression | undefined)
      if (text !== undefined) rows.push(text)
    }
    return rows
  }
  /** What a callee is (describe or a test) and, for `.each(table)`, its table. */
  const kindOf = (
    callee: ts.Expression,
  ): { kind: 'describe' | 'test'; table: ts.Expression | undefined } | undefined => {
    // describe(…), describe.each(…)(…), it.concurrent(…), test.each`…`(…)
    let at: ts.Expression = callee
    let table: ts.Expression | undefined
    for (;;) {
      if (ts.isCallExpression(at)) {
        if (ts.isPropertyAccessExpression(at.expression) && at.expression.name.text === 'each') {
          table = at.arguments[0]
        }
        at = at.expression
      } else if (ts.isTaggedTemplateExpression(at)) at = at.tag
      else if (ts.isPropertyAccessExpression(at)) at = at.expression
      else break
    }
    if (!ts.isIdentifier(at)) return undefined
    if (at.text === 'describe') return { kind: 'describe', table }
    if (at.text === 'it' || at.text === 'test') return { kind: 'test', table }
    return undefined
  }
  const visit = (node: ts.Node, stacks: readonly (readonly string[])[]): void => {
    if (ts.isCallExpression(node)) {
      const callee = kindOf(node.expression)
      const title = textOf(node.arguments[0])
      if (callee !== undefined && title !== undefined) {
        const titles = [title]
        if (title.includes('%s')) {
          for (const row of rowsOf(callee.table)) titles.push(title.replace('%s', row))
        }
        const next = stacks.flatMap((stack) => titles.map((each) => [...stack, each]))
        for (const path of next) paths.add(path.join(SEPARATOR))
        for (const argument of node.arguments.slice(1)) visit(argument, next)
        return
      }
    }
    ts.forEachChild(node, (child) => visit(child, stacks))
  }
  visit(file, [[]])
  return paths
}

/** The threat model: from its heading to the next heading of the same level. */
function threatModel(text: string): string {
  const start = text.indexOf('\n## Threat model')
  if (start === -1) throw new Error(`${DOC} has no "## Threat model" section`)
  const next = text.indexOf('\n## ', start + 1)
  return text.slice(start, next === -1 ? undefined : next)
}

/** The items of the threat model: its bullets, each with its continuation lines. */
function items(section: string): string[] {
  const found: string[] = []
  for (const line of section.split('\n')) {
    if (line.startsWith('- ')) found.push(line)
    else if (line.startsWith('  ') && found.length > 0) found[found.length - 1] += ` ${line.trim()}`
    else if (line.trim() === '' || line.startsWith('#')) found.push('')
  }
  return found.filter((item) => item !== '')
}

function referencesIn(text: string): { file: string; titles: string }[] {
  return [...text.matchAll(REFERENCE)].map((match) => ({
    file: match[1] as string,
    titles: (match[2] ?? '').slice(SEPARATOR.length),
  }))
}

const text = readFileSync(join(ROOT, DOC), 'utf8')
const section = threatModel(text)

describe('the threat model in docs/security.md', () => {
  it('names only tests that exist', () => {
    const missing: string[] = []
    const byFile = new Map<string, Set<string> | undefined>()
    const references = referencesIn(text)
    expect(references.length).toBeGreaterThan(0)
    for (const { file, titles } of references) {
      if (!byFile.has(file)) {
        let source: string | undefined
        try {
          source = readFileSync(join(ROOT, file), 'utf8')
        } catch {
          source = undefined
        }
        byFile.set(file, source === undefined ? undefined : titlePaths(source, file))
      }
      const paths = byFile.get(file)
      if (paths === undefined) missing.push(`${file} (no such file)`)
      else if (titles !== '' && !paths.has(titles)) missing.push(`${file} › ${titles}`)
    }
    expect(missing).toEqual([])
  })

  it('has each item name a test, or say it is open', () => {
    const unproved = items(section).filter(
      (item) => referencesIn(item).length === 0 && !item.includes(OPEN),
    )
    expect(unproved).toEqual([])
  })

  it('has a section for each capability', () => {
    const headings = section
      .split('\n')
      .filter((line) => line.startsWith('### '))
      .map((line) => line.slice(4).trim())
    expect(headings).toEqual([...CAPABILITIES])
  })

  it('goes through the security considerations of each standard the gate implements', () => {
    const missing = STANDARDS.filter(
      (standard) => !items(section).some((item) => item.includes(standard)),
    )
    expect(missing).toEqual([])
  })
})

describe('titlePaths (how a named test is found)', () => {
  it('joins nested describes and tests with ›, .each titles as written and with each row of a table written in the file', () => {
    const source = `
      describe('outer', () => {
        describe.each(APPS)('%s adapter', (name) => {
          it('answers', () => {})
          it.each([1])('case %s', () => {})
        })
        test('plain', async () => {})
      })
      it(\`top\`, () => {})
      other('not a test', () => {})
      const ROWS = [['first', 1], ['second', 2]] as const
      describe.each(ROWS)('table %s', () => {
        it.each(['x', 'y'])('row %s', () => {})
      })
    `
    expect([...titlePaths(source)].sort()).toEqual(
      [
        'outer',
        'outer › %s adapter',
        'outer › %s adapter › answers',
        'outer › %s adapter › case %s',
        'outer › plain',
        'top',
        'table %s',
        'table first',
        'table second',
        ...['table %s', 'table first', 'table second'].flatMap((outer) =>
          ['row %s', 'row x', 'row y'].map((inner) => `${outer} › ${inner}`),
        ),
      ].sort(),
    )
  })
})
