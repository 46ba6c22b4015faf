/**
 * Every TypeScript sample of the README and the guides in docs/ compiles against the package's
 * public names, so that none can rot: a renamed option or export fails here with the Markdown
 * file and line of the sample. Running them is test/docs/run-samples.test.ts's.
 */
import { describe, expect, it } from 'vitest'

import {
  allSamples,
  companionsOf,
  extractSamples,
  typeCheckSamples,
} from '../helpers/doc-samples.js'

describe('the documentation samples', () => {
  const samples = allSamples()
  const compiled = samples.filter(({ fragment }) => !fragment)

  it('are found in the README and in the guides', () => {
    const files = new Set(samples.map(({ file }) => file))
    expect(files).toContain('README.md')
    expect([...files].filter((file) => file.startsWith('docs/')).length).toBeGreaterThanOrEqual(8)
  })

  it('are nearly all complete modules: fragments are fewer than one in eight', () => {
    const fragments = samples.filter(({ fragment }) => fragment)
    expect(fragments.length * 8).toBeLessThan(samples.length)
  })

  it('type-check, each as its own module, with the project compiler options', () => {
    expect(typeCheckSamples(compiled)).toEqual([])
  }, 120_000)

  it('report a broken sample by its Markdown file and line', () => {
    const broken = extractSamples(
      'docs/example.md',
      [
        '# Example',
        '',
        '```ts',
        "import { tollgate } from 'tollgate/express'",
        '',
        'tollgate({ audience: 1 })',
        '```',
        '',
      ].join('\n'),
    )
    expect(broken).toHaveLength(1)
    const [first] = typeCheckSamples(broken)
    expect(first).toMatch(/^docs\/example\.md:6:\d+ TS\d+ /)
  }, 120_000)

  it('skip only blocks marked as fragments', () => {
    const found = extractSamples(
      'x.md',
      ['```ts', 'a', '```', '```ts fragment', 'b', '```', '```json', '{}', '```'].join('\n'),
    )
    expect(found.map(({ code, fragment }) => [code, fragment])).toEqual([
      ['a\n', false],
      ['b\n', true],
    ])
  })

  it('are found inside list items too, their indentation removed', () => {
    const found = extractSamples(
      'x.md',
      ['- a step:', '', '  ```ts', '  const a = 1', '    + 1', '  ```', ''].join('\n'),
    )
    expect(found.map(({ code, line }) => [code, line])).toEqual([['const a = 1\n  + 1\n', 4]])
  })

  it('import the sample above them by the file name they give it', () => {
    const page = extractSamples(
      'x.md',
      [
        '```ts',
        'export class AppModule {}',
        '```',
        '```ts',
        "import { AppModule } from './app.module.js' // the module above",
        'void AppModule',
        '```',
      ].join('\n'),
    )
    const [above, below] = page
    expect(companionsOf(below!, page)).toEqual({ 'app.module.ts': 'export class AppModule {}\n' })
    expect(companionsOf(above!, page)).toEqual({})
    expect(typeCheckSamples(page)).toEqual([])
  }, 120_000)

  it('stand under the nearest heading, never a comment line of another block', () => {
    const found = extractSamples(
      'x.md',
      ['## Keys', '', '```sh', '# One variable', 'X=1', '```', '', '```ts', 'a', '```'].join('\n'),
    )
    expect(found.map(({ heading }) => heading)).toEqual(['Keys'])
  })
})
