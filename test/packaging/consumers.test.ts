/**
 * What the consumer check (scripts/check-consumers.ts, run by .ci/run on the built package) covers:
 * every entry point of package.json `exports`, the names the docs import from each, and the
 * versions `engines` promises. The check itself installs, compiles and runs; these tests keep its
 * table from falling behind the package and read the docs as it does.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import {
  CONSUMERS,
  docsImportFile,
  documentedImports,
  exportedEntries,
  specifierOf,
  TOOLCHAIN,
} from '../../scripts/check-consumers.js'

const ROOT = join(import.meta.dirname, '..', '..')

interface Manifest {
  readonly engines: { readonly node: string }
  readonly devDependencies: Readonly<Record<string, string>>
}

const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest

describe('the consumer check', () => {
  it('has a consumer for every entry point of package.json exports, and no other', () => {
    const checked = new Set(CONSUMERS.map((consumer) => consumer.entry))
    expect([...checked].sort()).toEqual(exportedEntries().sort())
  })

  it('finds names the docs import from every entry point', () => {
    const imports = documentedImports()
    for (const entry of exportedEntries()) {
      expect(imports.get(specifierOf(entry))?.length ?? 0, entry).toBeGreaterThan(0)
    }
  })

  it('runs the consumers on the lowest Node that engines allows, and on Node 24', () => {
    const toolchainNode = manifest(TOOLCHAIN).devDependencies['node']
    expect(manifest(ROOT).engines.node).toBe(`>=${toolchainNode}`)
    expect(manifest(ROOT).devDependencies['node']).toMatch(/^\^24\./)
  })

  it('compiles them with TypeScript 5.9 and TypeScript 7', () => {
    expect(manifest(ROOT).devDependencies['typescript']).toMatch(/^~5\.9\./)
    expect(manifest(TOOLCHAIN).devDependencies['typescript']).toMatch(/^7\./)
  })
})

describe('documentedImports', () => {
  const markdown = (code: string, info = 'ts') =>
    [['guide.md', `# A\n\n\`\`\`${info}\n${code}\`\`\`\n`]] as const

  it('collects the names imported from tollgate specifiers, types marked as types', () => {
    const found = documentedImports(
      markdown(
        "import express from 'express'\nimport { keycloak, type TollgateState, tollgate as gate } from 'tollgate/koa'\nimport type { SharedStore } from 'tollgate'\n",
      ),
    )
    expect(Object.fromEntries(found)).toEqual({
      'tollgate/koa': [
        { name: 'keycloak', typeOnly: false },
        { name: 'TollgateState', typeOnly: true },
        { name: 'tollgate', typeOnly: false },
      ],
      tollgate: [{ name: 'SharedStore', typeOnly: true }],
    })
  })

  it('checks a name as a value when any sample imports it as one, fragments included', () => {
    const found = documentedImports([
      ...markdown("import type { Admission } from 'tollgate/express'\n"),
      ...markdown("import { Admission } from 'tollgate/express'\n", 'ts fragment'),
    ])
    expect(found.get('tollgate/express')).toEqual([{ name: 'Admission', typeOnly: false }])
  })

  it('ignores other languages and other packages', () => {
    const found = documentedImports([
      ...markdown("import { tollgate } from 'tollgate/express'\n", 'js'),
      ...markdown("import { tollgate } from 'tollgate-other'\n"),
    ])
    expect(found.size).toBe(0)
  })
})

describe('docsImportFile', () => {
  it('imports the names and exports them again, so each must resolve', () => {
    const file = docsImportFile('tollgate/koa', [
      { name: 'keycloak', typeOnly: false },
      { name: 'TollgateState', typeOnly: true },
    ])
    expect(file).toContain("import { keycloak, type TollgateState } from 'tollgate/koa'\n")
    expect(file).toContain('export { keycloak, type TollgateState }\n')
  })
})
