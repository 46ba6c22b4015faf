/**
 * The package as its users get it: for each entry point of package.json `exports`, a consumer
 * project in a temporary directory with the packed tarball (`npm pack` of the built `dist/`) and
 * only the peers that entry's guide tells its users to install, then:
 *
 * - `tsc` strict, **without `skipLibCheck`**, with TypeScript 5.9 (`typescript`) and TypeScript 7
 *   (`typescript7`, the native compiler), over a small program of the consumer's and a file
 *   importing every name README.md and docs/ import from that entry: a declaration that needs a
 *   package the user did not install (an optional peer of another entry) fails here;
 * - the program, compiled by TypeScript 5.9, runs on every Node version package.json `engines`
 *   promises (the `node` and `node22` devDependencies), so does the file of documented names
 *   (each value must exist at run time): a gate, its guards and the testing kit, asked on
 *   loopback.
 *
 *   npm run build && tsx scripts/check-consumers.ts [name…]
 *
 * The programs are test/packaging/consumers/<name>.ts (the repository type-checks them against the
 * sources as well). Peers install with `npm install --prefer-offline` at the versions
 * package-lock.json holds, so they come from npm's cache after `npm ci`; consumers with the same
 * peers share one install. Exits 1 naming each failed step with its output.
 *
 * @module
 */
import { execFile } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

import ts from 'typescript'

import { documentationFiles, extractSamples } from '../test/helpers/doc-samples.js'

const ROOT = resolve(import.meta.dirname, '..')

/** A package a consumer installs, at the version the repository's lockfile holds. */
export interface Peer {
  /** The name the consumer installs it under. */
  readonly name: string
  /**
   * The folder under the repository's node_modules whose version is installed, when it is not
   * `name` (an alias devDependency: `fastify4` for Fastify 4).
   */
  readonly from?: string
}

/** One consumer project: an entry point, the peers its guide names, and its program. */
export interface Consumer {
  /** Its program: test/packaging/consumers/<program>.ts. */
  readonly name: string
  readonly program: string
  /** The `exports` key it checks: `'.'`, `'./express'`… */
  readonly entry: string
  /** What the consumer installs besides the tarball and `@types/node`. */
  readonly peers: readonly Peer[]
  /** Where the docs tell users to install these peers (and nothing else). */
  readonly documented: string
  /** NestJS's decorators are TypeScript's legacy ones (docs/frameworks/nestjs.md). */
  readonly experimentalDecorators?: boolean
}

const NEST = [
  { name: '@nestjs/common' },
  { name: '@nestjs/core' },
  { name: 'reflect-metadata' },
  { name: 'rxjs' },
] as const

/** Every entry point, with the peers its users are told to install. */
export const CONSUMERS: readonly Consumer[] = [
  {
    name: 'core',
    program: 'core',
    entry: '.',
    peers: [],
    documented: 'docs/gateway.md (the core on node:http): no peer',
  },
  {
    name: 'express',
    program: 'express',
    entry: './express',
    peers: [{ name: 'express' }, { name: '@types/express' }],
    documented: 'README.md: `npm install tollgate express` (and `@types/express`)',
  },
  {
    name: 'koa',
    program: 'koa',
    entry: './koa',
    peers: [{ name: 'koa' }, { name: '@types/koa' }],
    documented: 'docs/frameworks/koa.md: Koa, and `@types/koa` for `TollgateState`',
  },
  {
    name: 'fastify',
    program: 'fastify',
    entry: './fastify',
    peers: [{ name: 'fastify' }, { name: 'fastify-plugin' }],
    documented: 'docs/frameworks/fastify.md: Fastify 4 or 5, `fastify-plugin` beside it',
  },
  {
    name: 'fastify-4',
    program: 'fastify',
    entry: './fastify',
    peers: [{ name: 'fastify', from: 'fastify4' }, { name: 'fastify-plugin' }],
    documented: 'docs/frameworks/fastify.md: Fastify 4 or 5, `fastify-plugin` beside it',
  },
  {
    name: 'hono',
    program: 'hono',
    entry: './hono',
    peers: [{ name: 'hono' }],
    documented: 'docs/frameworks/hono.md: Hono',
  },
  {
    name: 'fetch',
    program: 'fetch',
    entry: './fetch',
    peers: [],
    documented: 'docs/frameworks/fetch.md: no peer',
  },
  {
    name: 'nestjs',
    program: 'nestjs',
    entry: './nestjs',
    peers: [...NEST, { name: '@nestjs/platform-express' }],
    documented: 'docs/frameworks/nestjs.md: its `npm install` line (Express platform)',
    experimentalDecorators: true,
  },
  {
    name: 'nestjs-fastify',
    program: 'nestjs-fastify',
    entry: './nestjs',
    peers: [...NEST, { name: '@nestjs/platform-fastify' }],
    documented: 'docs/frameworks/nestjs.md: its `npm install` line, Fastify platform',
    experimentalDecorators: true,
  },
  {
    name: 'testing',
    program: 'testing',
    entry: './testing',
    peers: [],
    documented:
      'docs/testing.md: createTestIssuer() needs nothing (oidc-provider is for createDevProvider())',
  },
  {
    name: 'client',
    program: 'client',
    entry: './client',
    peers: [],
    documented: 'docs/clients.md: no peer',
  },
  {
    name: 'signin',
    program: 'signin',
    entry: './signin',
    peers: [],
    documented: 'docs/signin.md: no peer (Redis sessions take your own ioredis client)',
  },
  {
    name: 'otel',
    program: 'otel',
    entry: './otel',
    peers: [{ name: '@opentelemetry/api' }],
    documented: 'docs/operating.md: `npm install @opentelemetry/api`',
  },
]

/** The import specifier of an `exports` key: `'.'` → `tollgate`, `'./koa'` → `tollgate/koa`. */
export function specifierOf(entry: string): string {
  return entry === '.' ? 'tollgate' : `tollgate/${entry.slice(2)}`
}

/** The entry points of package.json `exports` that code imports (`./package.json` is not one). */
export function exportedEntries(root = ROOT): string[] {
  const { exports } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, unknown>
  }
  return Object.keys(exports).filter((key) => !key.endsWith('.json'))
}

/** One name a Markdown sample imports from a tollgate entry point. */
export interface DocImport {
  readonly name: string
  /** `import type { … }` or `import { type … }`. */
  readonly typeOnly: boolean
}

/**
 * Every name the ```ts samples of README.md and docs/ import from each `tollgate` specifier, in
 * the order first seen (fragments included: what a guide shows is what a user copies).
 */
export function documentedImports(
  markdown: ReadonlyArray<readonly [file: string, text: string]> = documentationFiles().map(
    (file) => [file, readFileSync(join(ROOT, file), 'utf8')],
  ),
): Map<string, DocImport[]> {
  const found = new Map<string, Map<string, DocImport>>()
  for (const [file, text] of markdown) {
    for (const sample of extractSamples(file, text)) {
      const source = ts.createSourceFile('sample.ts', sample.code, ts.ScriptTarget.Latest)
      for (const statement of source.statements) {
        if (!ts.isImportDeclaration(statement)) continue
        const from = (statement.moduleSpecifier as ts.StringLiteral).text
        const clause = statement.importClause
        const named = clause?.namedBindings
        if (!/^tollgate(?:\/|$)/.test(from) || named === undefined || !ts.isNamedImports(named)) {
          continue
        }
        const names = found.get(from) ?? new Map<string, DocImport>()
        found.set(from, names)
        for (const element of named.elements) {
          const name = (element.propertyName ?? element.name).text
          const typeOnly = clause?.isTypeOnly === true || element.isTypeOnly
          // A name imported as a value anywhere is checked as one.
          if (!names.has(name) || names.get(name)?.typeOnly) names.set(name, { name, typeOnly })
        }
      }
    }
  }
  return new Map([...found].map(([from, names]) => [from, [...names.values()]]))
}

/**
 * The file that imports `names` from `specifier` and exports them again (so each must resolve),
 * written into the consumer: its values are imported at run time too.
 */
export function docsImportFile(specifier: string, names: readonly DocImport[]): string {
  const list = names.map(({ name, typeOnly }) => (typeOnly ? `type ${name}` : name)).join(', ')
  return [
    `// Every name README.md and docs/ import from '${specifier}' (scripts/check-consumers.ts).`,
    `import { ${list} } from '${specifier}'`,
    `export { ${list} }`,
    '',
  ].join('\n')
}

/**
 * TypeScript 7 and Node 22 come from a project of their own, test/packaging/toolchain/ (see its
 * package.json), installed into the work directory: TypeScript 5.9 and Node 24 are the
 * repository's.
 */
export const TOOLCHAIN = join(ROOT, 'test', 'packaging', 'toolchain')

/** A compiler or a runtime the consumers are checked with. */
export interface Tool {
  /** `tsc` or `node` to run. */
  readonly binary: string
  readonly version: string
}

function installedVersion(folder: string, root = ROOT): string {
  const manifest = join(root, 'node_modules', folder, 'package.json')
  if (!existsSync(manifest)) {
    throw new Error(`${manifest} is missing: run "npm ci" (the "${folder}" dependency)`)
  }
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version
}

/** The compilers, then the runtimes, of the repository (`root`) and the toolchain. */
export function toolsOf(roots: readonly string[]): { typescripts: Tool[]; nodes: Tool[] } {
  return {
    typescripts: roots.map((root) => ({
      binary: join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
      version: installedVersion('typescript', root),
    })),
    nodes: roots.map((root) => ({
      binary: join(root, 'node_modules', 'node', 'bin', 'node'),
      version: installedVersion('node', root),
    })),
  }
}

interface Step {
  readonly label: string
  readonly ok: boolean
  /** Standard output and error, for the report of a failure. */
  readonly output: string
  readonly stdout: string
  readonly ms: number
}

/** How long one command may take before it counts as hung (a start, not a measured time). */
const COMMAND_TIMEOUT_MS = 240_000

/** The environment of the commands: none of the running npm script's project settings. */
function childEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (
      /^(npm_package_|npm_lifecycle_|npm_config_local_prefix$|INIT_CWD$|NODE_OPTIONS$)/.test(name)
    ) {
      continue
    }
    env[name] = value
  }
  return env
}

function run(label: string, command: string, args: readonly string[], cwd: string): Promise<Step> {
  const started = performance.now()
  return new Promise((done) => {
    execFile(
      command,
      args,
      { cwd, env: childEnvironment(), timeout: COMMAND_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`.trim()
        const why = error === null ? '' : `\n(${error.killed ? 'timed out' : `exit ${error.code}`})`
        done({
          label,
          ok: error === null,
          output: output + why,
          stdout,
          ms: performance.now() - started,
        })
      },
    )
  })
}

/** Refuses a directory under which Node or tsc would find packages of another project. */
function assertNoOuterPackages(directory: string): void {
  for (let dir = dirname(directory); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules'))) {
      throw new Error(
        `${join(dir, 'node_modules')} exists: a consumer under ${directory} would resolve packages there. Set TMPDIR to another directory.`,
      )
    }
    if (dirname(dir) === dir) return
  }
}

/** Fails when `dist/` is missing or older than a source file: the check is of the build. */
function assertFreshBuild(): void {
  const built = join(ROOT, 'dist', 'src', 'index.js')
  if (!existsSync(built)) throw new Error('dist/ is missing: run "npm run build" first')
  const builtAt = statSync(built).mtimeMs
  const newer = (dir: string): string | undefined => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) {
        const found = newer(path)
        if (found !== undefined) return found
      } else if (name.endsWith('.ts') && statSync(path).mtimeMs > builtAt) return path
    }
    return undefined
  }
  const stale = newer(join(ROOT, 'src')) ?? newer(join(ROOT, 'adapters'))
  if (stale !== undefined) {
    throw new Error(`${stale} is newer than dist/: run "npm run build" first`)
  }
}

function peerSpecs(consumer: Consumer): string[] {
  return [
    ...consumer.peers.map(({ name, from }) => `${name}@${installedVersion(from ?? name)}`),
    `@types/node@${installedVersion('@types/node')}`,
  ]
}

function tsconfig(consumer: Consumer, file: string, docs: boolean): string {
  return `${JSON.stringify(
    {
      compilerOptions: {
        // A Node project's settings (no DOM library: fetch's types come from @types/node),
        // strict, with every declaration checked.
        lib: ['es2024'],
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        esModuleInterop: true,
        skipLibCheck: false,
        types: ['node'],
        ...(consumer.experimentalDecorators ? { experimentalDecorators: true } : {}),
        rootDir: '.',
        outDir: `out/${file}`,
      },
      files: [`${file}.ts`, ...(docs ? [`${file}.docs.ts`] : [])],
    },
    null,
    2,
  )}\n`
}

interface Result {
  readonly consumer: Consumer
  readonly steps: readonly Step[]
}

async function checkConsumers(selected: readonly Consumer[]): Promise<boolean> {
  const started = performance.now()
  assertFreshBuild()
  const work = mkdtempSync(join(tmpdir(), 'tollgate-consumers-'))
  assertNoOuterPackages(work)
  try {
    const toolchain = join(work, 'toolchain')
    mkdirSync(toolchain)
    for (const file of ['package.json', 'package-lock.json']) {
      copyFileSync(join(TOOLCHAIN, file), join(toolchain, file))
    }
    const [packed, tooled] = await Promise.all([
      run('npm pack', 'npm', ['pack', '--ignore-scripts', '--pack-destination', work], ROOT),
      // Scripts run here: the `node` package's preinstall puts the binary in place.
      run('npm ci', 'npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], toolchain),
    ])
    if (!packed.ok) throw new Error(`npm pack failed:\n${packed.output}`)
    if (!tooled.ok) throw new Error(`npm ci of test/packaging/toolchain failed:\n${tooled.output}`)
    const { typescripts, nodes } = toolsOf([ROOT, toolchain])
    const node = nodes[0] as Tool
    const tarball = join(work, packed.stdout.trim().split('\n').at(-1) ?? '')
    const imports = documentedImports()

    // Consumers with the same peers share one install: the peers, not the entry, make it.
    const installs = new Map<string, Promise<{ dir: string; step: Step }>>()
    const installFor = (consumer: Consumer) => {
      const specs = peerSpecs(consumer).sort()
      const key = specs.join(' ')
      let install = installs.get(key)
      if (install === undefined) {
        const dir = join(work, `install-${installs.size + 1}`)
        mkdirSync(dir)
        const manifest = {
          name: `tollgate-consumer-${installs.size + 1}`,
          private: true,
          type: 'module',
        }
        writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
        install = run(
          `npm install ${specs.join(' ')}`,
          'npm',
          [
            'install',
            '--prefer-offline',
            '--no-audit',
            '--no-fund',
            '--ignore-scripts',
            tarball,
            ...specs,
          ],
          dir,
        ).then((step) => ({ dir, step }))
        installs.set(key, install)
      }
      return install
    }

    const checkOne = async (consumer: Consumer): Promise<Result> => {
      const steps: Step[] = []
      const { dir, step } = await installFor(consumer)
      steps.push(step)
      if (!step.ok) return { consumer, steps }
      const file = consumer.name
      const specifier = specifierOf(consumer.entry)
      const documented = imports.get(specifier) ?? []
      copyFileSync(
        join(ROOT, 'test', 'packaging', 'consumers', `${consumer.program}.ts`),
        join(dir, `${file}.ts`),
      )
      if (documented.length > 0) {
        writeFileSync(join(dir, `${file}.docs.ts`), docsImportFile(specifier, documented))
      }
      writeFileSync(
        join(dir, `tsconfig.${file}.json`),
        tsconfig(consumer, file, documented.length > 0),
      )
      // The first compiler emits what the runtimes run; the others only check.
      for (const [index, { binary, version }] of typescripts.entries()) {
        const args = [binary, '-p', `tsconfig.${file}.json`, ...(index === 0 ? [] : ['--noEmit'])]
        steps.push(await run(`tsc ${version}`, node.binary, args, dir))
      }
      if (!steps.every((s) => s.ok)) return { consumer, steps }
      // The documented names load first (`--import`): each value must exist at run time too.
      const preload = documented.length > 0 ? ['--import', `./out/${file}/${file}.docs.js`] : []
      for (const runtime of nodes) {
        const args = [...preload, `out/${file}/${file}.js`]
        steps.push(await run(`node ${runtime.version}`, runtime.binary, args, dir))
      }
      return { consumer, steps }
    }

    // Consumers in parallel, one per core; each one's steps in order.
    const queue = [...selected]
    const results: Result[] = []
    const worker = async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        const result = await checkOne(next)
        results.push(result)
        const failed = result.steps.filter((s) => !s.ok).map((s) => s.label)
        // The install's time counts for the first consumer that waited on it.
        const times = result.steps
          .map((s) => `${s.label.split(' ', 2).join(' ')} ${(s.ms / 1000).toFixed(1)} s`)
          .join(', ')
        console.log(
          `consumer ${next.name} (${specifierOf(next.entry)}): ${failed.length === 0 ? 'ok' : `FAILED ${failed.join('; ')}`} [${times}]`,
        )
      }
    }
    await Promise.all(
      Array.from({ length: Math.min(availableParallelism(), queue.length) }, worker),
    )

    const failures = results.flatMap(({ consumer, steps }) =>
      steps.filter((s) => !s.ok).map((s) => ({ consumer, step: s })),
    )
    for (const { consumer, step } of failures) {
      console.log(`\n--- ${consumer.name} (${consumer.documented}): ${step.label}\n${step.output}`)
    }
    const wall = ((performance.now() - started) / 1000).toFixed(1)
    console.log(
      `consumers: ${results.length - new Set(failures.map((f) => f.consumer)).size} of ${results.length} entry-point consumers type-checked (TypeScript ${typescripts.map((t) => t.version).join(', ')}, no skipLibCheck) and run (Node ${nodes.map((n) => n.version).join(', ')}) in ${wall} s`,
    )
    return failures.length === 0
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const names = process.argv.slice(2)
  const unknown = names.filter((name) => !CONSUMERS.some((c) => c.name === name))
  if (unknown.length > 0) {
    console.error(
      `unknown consumer ${unknown.join(', ')}; they are: ${CONSUMERS.map((c) => c.name).join(', ')}`,
    )
    process.exit(2)
  }
  const selected = names.length === 0 ? CONSUMERS : CONSUMERS.filter((c) => names.includes(c.name))
  process.exitCode = (await checkConsumers(selected)) ? 0 : 1
}
