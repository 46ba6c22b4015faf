/** Links between the README and the guides: a guide moved or renamed must not leave a dead link. */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'

import { describe, expect, it } from 'vitest'

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? markdownFiles(join(dir, entry.name))
      : entry.name.endsWith('.md')
        ? [join(dir, entry.name)]
        : [],
  )
}

const FILES = ['README.md', ...markdownFiles('docs')]

describe('the documentation links', () => {
  it.each(FILES)('%s links only to files that exist', (file) => {
    const text = readFileSync(file, 'utf8')
    const dead = [...text.matchAll(/\]\(([^)#\s:]+)(#[^)]*)?\)/g)]
      .map((match) => match[1] as string)
      .filter((target) => !existsSync(normalize(join(dirname(file), target))))
    expect(dead).toEqual([])
  })
})
