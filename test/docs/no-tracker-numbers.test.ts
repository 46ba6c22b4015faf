/**
 * Comments in the code say why in words, never by tracker number: a reader of `src/` or
 * `adapters/` has the code, not the project's tracker, so "(issue 24)" tells them nothing. Every
 * `.ts` file under those folders is read whole; a line that cites this project's tracker fails
 * the test, named with its file and line. References to other projects' trackers
 * (`nodejs/node#55428`) are fine: they name where to read.
 */
import { readdirSync, readFileSync } from 'node:fs'

import { describe, expect, it } from 'vitest'

/**
 * The forms a tracker citation takes: "(issue 24)", "Issue 14's", "issues 30 and 35", "(#123)",
 * "HTTP-07". Whitespace between the word and the number may be a line break in a comment.
 */
const CITATIONS: readonly RegExp[] = [
  /\b[Ii]ssues?\s+#?\d+/,
  /(?:^|[\s([{])#\d+\b/,
  /\bHTTP-\d{2}\b/,
]

function cites(line: string): boolean {
  return CITATIONS.some((pattern) => pattern.test(line))
}

/** The lines of `text` that start a citation, the next line's comment marker set aside. */
function citingLines(text: string): number[] {
  const lines = text.split('\n')
  return lines.flatMap((line, index) => {
    const next = (lines[index + 1] ?? '').replace(/^\s*(?:\*|\/\/)?\s*/, '')
    const joined = `${line} ${next}`
    return CITATIONS.some((pattern) => {
      const match = pattern.exec(joined)
      return match !== null && match.index < line.length
    })
      ? [index + 1]
      : []
  })
}

function sources(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `${root}/${name.replaceAll('\\', '/')}`)
    .sort()
}

describe('tracker numbers in src/ and adapters/', () => {
  it('recognises every form a citation takes, and not what only looks like one', () => {
    const citations = [
      '// one literal, no per-field growth (issue 24).',
      " * Issue 14's profile of a cached token",
      ' * (issue 30: one script over 300,000 entries held Redis for 1.2 s)',
      '// a token whose issuer is not configured (issue 19, item 17)',
      ' * Issues 30 and 35 through HTTP',
      '// see issue #12',
      '// fixed in (#123)',
      '// as reported in #45',
      "describe('a form body access_token by method (HTTP-07)'",
    ]
    const lookalikes = [
      '// Node drops the socket early (nodejs/node#55428).',
      '// base64url of the SHA-256 of its DER (RFC 8705 §3.1)',
      "['the PKCS#1 PEM', pkcs1Pem]",
      '// carries cnf x5t#S256',
      "'a payload in UTF-16'",
      '// an issue with the key set: none of its keys verifies',
      'this.#cache.get(key)',
    ]
    expect(citations.filter((line) => !cites(line))).toEqual([])
    expect(lookalikes.filter(cites)).toEqual([])
  })

  it('finds a citation split across two lines of a comment, at the line where it starts', () => {
    const text = [
      '/**',
      ' * The load outlasted the wait (see issue',
      ' * 30). The rest is words.',
      ' */',
      '// A tracker entry in words (issue',
      '// 24).',
    ].join('\n')
    expect(citingLines(text)).toEqual([2, 5])
  })

  it('finds none in any .ts file', () => {
    const files = [...sources('src'), ...sources('adapters')]
    expect(files.length).toBeGreaterThan(100)
    const found = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8')
      const lines = text.split('\n')
      return citingLines(text).map((line) => `${file}:${line}: ${lines[line - 1]?.trim()}`)
    })
    expect(found).toEqual([])
  })
})
