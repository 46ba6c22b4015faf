/**
 * `npm pack` (and `npm publish`, which packs) builds first: without `prepack`, a tree that was
 * never built packs into a package of three files (package.json, README, LICENSE) with no `dist/`,
 * which installs and then fails on every import. These tests follow the scripts as npm runs them,
 * without building (a build takes a minute; the consumer check builds and installs the package).
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')

interface Manifest {
  readonly scripts: Readonly<Record<string, string>>
  readonly files: readonly string[]
  readonly exports: Readonly<Record<string, string | Readonly<Record<string, string>>>>
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest

/** The commands `npm run <name>` runs, `npm run <other>` followed (npm's own expansion). */
function commandsOf(name: string, seen = new Set<string>()): string[] {
  const script = manifest.scripts[name]
  if (script === undefined || seen.has(name)) return []
  seen.add(name)
  return script.split('&&').flatMap((part) => {
    const command = part.trim()
    const run = /^npm run ([\w:-]+)$/.exec(command)
    return run === null ? [command] : commandsOf(run[1] as string, seen)
  })
}

describe('packing the package', () => {
  it('builds dist/ before npm pack and npm publish pack it (prepack runs the build)', () => {
    const commands = commandsOf('prepack')
    expect(commands).toContain('rm -rf dist')
    expect(commands).toContain('tsc -p tsconfig.build.json')
    // The clean comes before the compile, so no file of an older build is packed.
    expect(commands.indexOf('rm -rf dist')).toBeLessThan(
      commands.indexOf('tsc -p tsconfig.build.json'),
    )
  })

  it('packs only dist/, and the build makes every file the exports point to', () => {
    expect(manifest.files).toEqual(['dist'])
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
      readonly compilerOptions: { readonly outDir: string; readonly rootDir: string }
      readonly include: readonly string[]
    }
    expect(build.compilerOptions).toMatchObject({ outDir: 'dist', rootDir: '.' })
    for (const [entry, target] of Object.entries(manifest.exports)) {
      if (typeof target === 'string') continue
      for (const file of Object.values(target)) {
        // ./dist/<dir>/<path>.js (or .d.ts) is compiled from ./<dir>/<path>.ts, in an included dir.
        const source = file.replace(/^\.\/dist\//, '').replace(/(\.d)?\.ts$|\.js$/, '.ts')
        expect(
          build.include.some((dir) => source.startsWith(`${dir}/`)),
          entry,
        ).toBe(true)
        expect(existsSync(join(ROOT, source)), `${entry}: ${source}`).toBe(true)
      }
    }
  })
})
