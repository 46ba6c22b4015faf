/**
 * The package ships `dist/` only: no source maps, whose sources (inlined, they were over half of
 * `dist/`) or whose links to `src/` files the package does not contain would add weight and
 * nothing a stack trace into tsc's type-stripped output lacks. Why: docs/design-notes.md.
 */
import { fileURLToPath } from 'node:url'

import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

function buildOptions(): ts.ParsedCommandLine {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    `${ROOT}tsconfig.build.json`,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
      },
    },
  )
  if (!parsed) throw new Error('tsconfig.build.json could not be read')
  return parsed
}

describe('the build (tsconfig.build.json)', () => {
  it('emits JavaScript and declarations with no source map and no link to one', () => {
    const parsed = buildOptions()
    const entry = `${ROOT}src/index.ts`
    const program = ts.createProgram({ rootNames: [entry], options: parsed.options })
    const written = new Map<string, string>()
    program.emit(program.getSourceFile(entry), (name, text) => {
      written.set(name.slice(ROOT.length), text)
    })
    expect([...written.keys()].sort()).toEqual(['dist/src/index.d.ts', 'dist/src/index.js'])
    for (const text of written.values()) expect(text).not.toContain('sourceMappingURL')
  })
})
