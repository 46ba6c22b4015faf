/**
 * The layout's two rules about imports (docs/design-notes.md, house style): no file imports
 * itself back through others, and no two folders of `src/` import each other, so that a
 * capability can be read, and moved, on its own. Type imports count: they shape the layout too.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '../..')
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : []
  })
}

/** Every file of src/ and adapters/ with the files it imports (relative specifiers only). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'adapters'))]) {
    const targets: string[] = []
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? ''
      if (!specifier.startsWith('.')) continue
      const base = resolve(dirname(file), specifier)
      const target = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find(
        (candidate) => existsSync(candidate) && statSync(candidate).isFile(),
      )
      if (target === undefined) throw new Error(`${relative(ROOT, file)}: ${specifier} not found`)
      targets.push(target)
    }
    graph.set(file, targets)
  }
  return graph
}

/** One cycle of files, as relative paths, or `undefined` (depth-first search). */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file]
    state.set(file, 'open')
    path.push(file)
    for (const target of graph.get(file) ?? []) {
      const cycle = visit(target)
      if (cycle !== undefined) return cycle
    }
    path.pop()
    state.set(file, 'done')
    return undefined
  }
  for (const file of graph.keys()) {
    const cycle = visit(file)
    if (cycle !== undefined) return cycle.map((f) => relative(ROOT, f))
  }
  return undefined
}

describe('the import graph of src/ and adapters/', () => {
  const graph = importGraph()

  it('has no cycle', () => {
    expect(findCycle(graph)).toBeUndefined()
  })

  it('finds a cycle when there is one (the check itself)', () => {
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual(['a', 'b', 'c', 'a'].map((f) => relative(ROOT, f)))
  })

  it('has no two folders of src/ importing each other', () => {
    const folderOf = (file: string) => dirname(relative(join(ROOT, 'src'), file))
    const pairs = new Set<string>()
    for (const [file, targets] of graph) {
      if (!file.startsWith(join(ROOT, 'src'))) continue
      for (const target of targets) {
        const [from, to] = [folderOf(file), folderOf(target)]
        if (from !== to && from !== '.' && to !== '.') pairs.add(`${from} -> ${to}`)
      }
    }
    const mutual = [...pairs].filter((pair) => pairs.has(pair.split(' -> ').reverse().join(' -> ')))
    expect(mutual).toEqual([])
  })
})
