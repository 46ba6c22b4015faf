/**
 * The documentation's code samples: every ```ts block of README.md and docs/**\/*.md (indented
 * ones inside list items too), each type-checked as a module of its own with the project's
 * compiler options and the package's public names (`tollgate/*`, mapped to the source as
 * tsconfig.json maps them), and run by test/docs/run-samples.test.ts (tsx, as a user would run
 * it). A block whose info string says `ts fragment` is shown as a fragment on purpose: it is
 * neither compiled nor run.
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
  /** Marked ```ts fragment: shown, neither compiled nor run. */
  readonly fragment: boolean
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

/**
 * The ```ts blocks of one Markdown text (```typescript too; other languages are not samples). A
 * fence may be indented (a block inside a list item): its indentation is removed from the code.
 */
export function extractSamples(file: string, text: string): DocSample[] {
  const samples: DocSample[] = []
  const lines = text.split('\n')
  let heading = ''
  for (let i = 0; i < lines.length; i++) {
    const title = /^#+ (.*)$/.exec(lines[i] ?? '')
    if (title) heading = title[1] ?? ''
    const fence = /^( *)```(\S*)(?:\s+(.*))?$/.exec(lines[i] ?? '')
    if (!fence) continue
    const indent = fence[1] ?? ''
    const start = i + 1
    let end = start
    while (end < lines.length && lines[end] !== `${indent}\`\`\``) end++
    // Any other block is skipped whole: a `# comment` in a shell block is not a heading.
    const open = /^(ts|typescript)$/.test(fence[2] ?? '') ? fence : undefined
    if (!open) {
      i = end
      continue
    }
    const words = (open[3] ?? '').split(/\s+/)
    const code = lines
      .slice(start, end)
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()))
    samples.push({
      file,
      line: start + 1,
      code: `${code.join('\n')}\n`,
      fragment: words.includes('fragment'),
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
 * The files a sample imports from its own directory (`import { AppModule } from './app.module.js'`
 * is `app.module.ts`): each is the sample printed before it on the same page ("the module
 * above"), by file name. Empty for a sample that imports only packages.
 */
export function companionsOf(
  sample: DocSample,
  samples: readonly DocSample[],
): Record<string, string> {
  const names = [...sample.code.matchAll(/from '\.\/([\w.-]+)\.js'/g)].map((match) => match[1])
  if (names.length === 0) return {}
  const before = samples.filter((other) => other.file === sample.file && other.line < sample.line)
  const above = before.at(-1)
  if (above === undefined) {
    throw new Error(
      `${sample.file}:${sample.line} imports ${names.join(', ')} but no sample is above it`,
    )
  }
  return Object.fromEntries(names.map((name) => [`${name}.ts`, above.code]))
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
    const byPath = new Map<string, DocSample>()
    samples.forEach((sample, index) => {
      // A directory each, with the samples it imports beside it (companionsOf).
      const sampleDir = join(dir, 'samples', String(index))
      mkdirSync(sampleDir, { recursive: true })
      const path = join(sampleDir, 'sample.ts')
      writeFileSync(path, sample.code)
      for (const [name, code] of Object.entries(companionsOf(sample, samples))) {
        writeFileSync(join(sampleDir, name), code)
      }
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

const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
    } catch {}
  }
})

/** A sample started as a program: its output so far, and a way to stop it. */
export interface RunningSample {
  readonly child: ChildProcess
  /** The temporary directory the sample runs in, as `sample.ts`. */
  readonly dir: string
  /** Resolves with the exit code (`null` when a signal ended it) once the program ended. */
  readonly exited: Promise<number | null>
  output(): string
  /**
   * SIGTERM, then SIGKILL when the program has not ended within `graceMs` (a sample may handle
   * SIGTERM itself); waits for the exit and removes the temporary directory.
   */
  stop(graceMs?: number): Promise<void>
}

/** How {@link startSample} runs a sample. */
export interface StartSampleOptions {
  /** Added to the environment. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Modules loaded before the program (`node --import`), absolute paths. */
  readonly imports?: readonly string[] | undefined
  /**
   * A program to run instead of the sample, which imports it: the sample is still written as
   * `sample.ts`, and `SAMPLE_MODULE` holds its absolute path. For samples that are modules (a
   * Next.js route handler, a NestJS module), as their framework would load them.
   */
  readonly host?: string | undefined
  /** Further files written beside the sample, by name: samples it imports, as the guide names them. */
  readonly files?: Readonly<Record<string, string>> | undefined
  /**
   * `'node'` (default): Node with tsx's loader (`node --import tsx`). `'bun'`: Bun runs the
   * TypeScript itself (`bun --preload …`). Either way the `tollgate/*` names resolve through the
   * directory's tsconfig.json, which extends the project's.
   */
  readonly runtime?: 'node' | 'bun' | undefined
}

/**
 * Runs a sample with tsx (`node --import tsx`) as its own ES module, as a user would run it with
 * the package installed (the `tollgate/*` names resolve through tsconfig.json's paths), in a
 * temporary directory whose `node_modules` is the project's.
 */
export function startSample(sample: DocSample, options: StartSampleOptions = {}): RunningSample {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-doc-run-'))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  const path = join(dir, 'sample.ts')
  writeFileSync(path, sample.code)
  for (const [name, text] of Object.entries(options.files ?? {})) {
    writeFileSync(join(dir, name), text)
  }
  const program = options.host ?? path
  const imports = options.imports ?? []
  // The project's compiler options (paths, experimentalDecorators), for the sample's directory
  // and for the project's files it runs with (a host program).
  const tsconfig = join(dir, 'tsconfig.json')
  const config = { extends: join(ROOT, 'tsconfig.json'), include: ['*.ts', join(ROOT, '**/*.ts')] }
  writeFileSync(tsconfig, `${JSON.stringify(config)}\n`)
  let command: string
  let args: string[]
  if (options.runtime === 'bun') {
    command = join(ROOT, 'node_modules/.bin/bun')
    args = [...imports.flatMap((module) => ['--preload', module]), program]
  } else {
    // `node --import tsx`: tsx's loader in the program's own process (the tsx command would start
    // a second Node to run it); it reads the directory's tsconfig.json.
    command = process.execPath
    args = ['--import', 'tsx', ...imports.flatMap((module) => ['--import', module]), program]
  }
  const child = spawn(command, args, {
    cwd: dir,
    env: { ...process.env, ...options.env, SAMPLE_MODULE: path },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A group of its own: a sample may fork (a Node cluster) and Bun may start helpers; signals
    // go to the whole group, so nothing is left behind.
    detached: true,
  })
  running.add(child)
  const signal = (name: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, name)
    } catch {
      // The group is gone already.
    }
  }
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<number | null>((resolveExit) => {
    child.on('exit', (code) => {
      running.delete(child)
      resolveExit(code)
    })
  })
  return {
    child,
    dir,
    exited,
    output: () => output,
    async stop(graceMs = 5000) {
      if (child.exitCode === null && child.signalCode === null) {
        signal('SIGTERM')
        const timer = setTimeout(() => signal('SIGKILL'), graceMs)
        await exited
        clearTimeout(timer)
      }
      // Whatever the program left in its group (a worker that outlived its primary).
      signal('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
