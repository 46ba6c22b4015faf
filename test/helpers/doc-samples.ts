/**
 * The documentation's code samples: every ```ts block of README.md and docs/**\/*.md, each
 * type-checked as a module of its own with the project's compiler options and the package's public
 * names (`tollgate/*`, mapped to the source as tsconfig.json maps them). A block whose info string
 * says `ts fragment` is shown as a fragment on purpose and is not compiled; `ts run` marks a
 * complete program that runs on loopback (tsx, as a user would run it).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'

import ts from 'typescript'

const ROOT = resolve(import.meta.dirname, '../..')

export interface DocSample {
  /** The Markdown file, relative to the repository. */
  readonly file: string
  /** The 1-based line of the block's first code line in that file. */
  readonly line: number
  readonly code: string
  /** Marked ```ts fragment: shown, not compiled. */
  readonly fragment: boolean
  /** Marked ```ts run: a complete program that runs against loopback servers. */
  readonly run: boolean
  /** The nearest heading above the block, without its `#`s. */
  readonly heading: string
}

/** README.md and every Markdown file under docs/, in a stable order. */
export function documentationFiles(): string[] {
  const files = ['README.md']
  const walk = (dir: string): void => {
    let entries: string[]
    try {
      entries = readdirSync(join(ROOT, dir))
    } catch {
      return
    }
    for (const name of entries.sort()) {
      const path = `${dir}/${name}`
      if (name.endsWith('.md')) files.push(path)
      else if (!name.includes('.')) walk(path)
    }
  }
  walk('docs')
  return files
}

/** The ```ts blocks of one Markdown text (```typescript too; other languages are not samples). */
export function extractSamples(file: string, text: string): DocSample[] {
  const samples: DocSample[] = []
  const lines = text.split('\n')
  let heading = ''
  for (let i = 0; i < lines.length; i++) {
    const title = /^#+ (.*)$/.exec(lines[i] ?? '')
    if (title) heading = title[1] ?? ''
    const open = /^```(ts|typescript)(?:\s+(.*))?$/.exec(lines[i] ?? '')
    if (!open) continue
    const start = i + 1
    let end = start
    while (end < lines.length && lines[end] !== '```') end++
    const words = (open[2] ?? '').split(/\s+/)
    samples.push({
      file,
      line: start + 1,
      code: `${lines.slice(start, end).join('\n')}\n`,
      fragment: words.includes('fragment'),
      run: words.includes('run'),
      heading,
    })
    i = end
  }
  return samples
}

export function allSamples(): DocSample[] {
  return documentationFiles().flatMap((file) =>
    extractSamples(file, readFileSync(join(ROOT, file), 'utf8')),
  )
}

/**
 * Type-checks the samples, each as its own ES module in a temporary directory (whose
 * `node_modules` is the project's), and returns one line per diagnostic:
 * `docs/gateway.md:42:7 TS2304 Cannot find name 'app'.`, pointing into the Markdown file.
 */
export function typeCheckSamples(samples: readonly DocSample[]): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
      },
    },
  )
  if (!parsed) throw new Error('tsconfig.json could not be read')
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-doc-samples-'))
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
    mkdirSync(join(dir, 'samples'))
    const byPath = new Map<string, DocSample>()
    samples.forEach((sample, index) => {
      const path = join(dir, 'samples', `sample-${index}.ts`)
      writeFileSync(path, sample.code)
      byPath.set(path, sample)
    })
    const program = ts.createProgram({
      // Ambient declarations the samples rely on: Bun's and Deno's globals (docs/runtimes.md), and
      // the types of two packages that ship none.
      rootNames: [
        ...byPath.keys(),
        join(ROOT, 'test/helpers/oidc-provider-module.d.ts'),
        join(ROOT, 'test/helpers/memcached-module.d.ts'),
        join(ROOT, 'test/runtimes/samples/globals.d.ts'),
      ],
      options: {
        ...parsed.options,
        // A sample shows one thing: a name it declares and leaves unused is not a mistake there.
        noUnusedLocals: false,
        noUnusedParameters: false,
        noEmit: true,
      },
    })
    const diagnostics = ts.getPreEmitDiagnostics(program)
    return diagnostics.map((diagnostic) => {
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
      const sample = diagnostic.file && byPath.get(diagnostic.file.fileName)
      if (!diagnostic.file || diagnostic.start === undefined) return `TS${diagnostic.code} ${text}`
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
      if (!sample) {
        return `${relative(ROOT, diagnostic.file.fileName)}:${line + 1}:${character + 1} TS${diagnostic.code} ${text}`
      }
      return `${sample.file}:${sample.line + line}:${character + 1} TS${diagnostic.code} ${text}`
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A sample started as a program: its output so far, and a way to stop it. */
export interface RunningSample {
  readonly child: ChildProcess
  /** Resolves with the exit code (`null` when a signal ended it) once the program ended. */
  readonly exited: Promise<number | null>
  output(): string
  /** SIGTERM, then waits for the exit; removes the temporary directory. */
  stop(): Promise<void>
}

/**
 * Runs a sample with tsx as its own ES module, as a user would run it with the package installed
 * (the `tollgate/*` names resolve through tsconfig.json's paths), with `env` added to the
 * environment.
 */
export function startSample(sample: DocSample, env: Record<string, string> = {}): RunningSample {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-doc-run-'))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  const path = join(dir, 'sample.ts')
  writeFileSync(path, sample.code)
  const child = spawn(
    join(ROOT, 'node_modules/.bin/tsx'),
    ['--tsconfig', join(ROOT, 'tsconfig.json'), path],
    { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<number | null>((resolveExit) => {
    child.on('exit', (code) => resolveExit(code))
  })
  return {
    child,
    exited,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
