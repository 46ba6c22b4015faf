/**
 * The Fetch adapter on other JavaScript runtimes: bundles the runtime app of test/runtimes/ and
 * the samples of docs/runtimes.md once with esbuild, then starts one on Bun (`Bun.serve`), Deno
 * (`Deno.serve`) or workerd (a module worker with `nodejs_compat`) on a free loopback port, waits
 * until it answers, and stops it.
 * The binaries come from the `bun`, `deno` and `workerd` devDependencies; a missing one is an
 * error naming what to install, never a skipped test. Nothing is downloaded at run time.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { READY_PATH, type RuntimeAppConfig } from '../runtimes/app.js'
import type { HonoRuntimeConfig } from '../runtimes/hono-app.js'
import { freePort } from './redis.js'

export type RuntimeName = 'bun' | 'deno' | 'workerd' | 'workerd 2024-09-23'
export const RUNTIMES: readonly RuntimeName[] = ['bun', 'deno', 'workerd', 'workerd 2024-09-23']

/**
 * The Workers compatibility settings the tests pin (docs/runtimes.md names them): a current date,
 * and the first date of `nodejs_compat` v2 (the `Buffer` and `process` globals), which also needs
 * `enable_nodejs_perf_hooks_module` (`node:perf_hooks` is missing before 2026 without it).
 */
export const WORKERD_COMPATIBILITY: Readonly<
  Record<'workerd' | 'workerd 2024-09-23', { readonly date: string; readonly flags: string[] }>
> = {
  workerd: { date: '2026-11-01', flags: ['nodejs_compat'] },
  'workerd 2024-09-23': {
    date: '2024-09-23',
    flags: ['nodejs_compat', 'enable_nodejs_perf_hooks_module'],
  },
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** How long a runtime may take to answer its first request (a start, not a measured time). */
const START_DEADLINE_MS = 20_000

/** A runtime serving the runtime app or a sample. */
export interface RuntimeServer {
  readonly name: RuntimeName
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  readonly port: number
  /** What the runtime printed so far (stdout and stderr), for failure messages. */
  output(): string
  stop(): Promise<void>
}

const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL')
})

function binaryName(name: RuntimeName): 'bun' | 'deno' | 'workerd' {
  return name.startsWith('workerd') ? 'workerd' : (name as 'bun' | 'deno')
}

/** The runtime's binary from node_modules/.bin; throws naming the package when it is missing. */
export function runtimeBinary(name: RuntimeName, root = ROOT): string {
  const binary = join(root, 'node_modules', '.bin', binaryName(name))
  if (!existsSync(binary)) {
    throw new Error(
      `${binary} is missing. The runtime tests run the Fetch adapter on Bun, Deno and workerd and ` +
        `are never skipped: run "npm ci" (the "${binaryName(name)}" devDependency installs the binary ` +
        'for this platform).',
    )
  }
  return binary
}

/**
 * The runtime app's entry points, the samples of docs/runtimes.md and the Hono runtime app's
 * entry points, by runtime family.
 */
const ENTRIES = {
  app: { bun: 'bun-server', deno: 'deno-server', workerd: 'workerd-worker' },
  sample: { bun: 'samples/bun', deno: 'samples/deno', workerd: 'samples/worker' },
  hono: { bun: 'hono-bun-server', deno: 'hono-deno-server', workerd: 'hono-workerd-worker' },
} as const

/** The samples of docs/runtimes.md, as files under test/runtimes/samples/. */
export const SAMPLE_FILES = {
  bun: 'test/runtimes/samples/bun.ts',
  deno: 'test/runtimes/samples/deno.ts',
  workerd: 'test/runtimes/samples/worker.ts',
} as const

/**
 * Bundles the runtime apps' entry points and the samples into `directory` (ESM, `node:` built-ins
 * left to the runtime, Workers export conditions first, `tollgate/fetch` from the sources, Hono
 * from node_modules), so no runtime resolves or fetches a package.
 */
export async function bundleRuntimeApps(directory: string): Promise<void> {
  const entries = [
    ...Object.values(ENTRIES.app),
    ...Object.values(ENTRIES.sample),
    ...Object.values(ENTRIES.hono),
  ]
  await build({
    entryPoints: entries.map((entry) => ({
      in: join(ROOT, 'test', 'runtimes', `${entry}.ts`),
      out: entry,
    })),
    outdir: directory,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['node:*'],
    alias: { 'tollgate/fetch': join(ROOT, 'adapters', 'fetch', 'index.ts') },
    logLevel: 'warning',
  })
}

type Compatibility = { readonly date: string; readonly flags: readonly string[] }

/**
 * A workerd config: the worker module on `port`, `vars` as text bindings, and loopback fetches
 * allowed (the default "internet" service reaches public addresses only; the test issuer is on
 * 127.0.0.1).
 */
function workerdConfig(
  port: number,
  module: string,
  vars: Readonly<Record<string, string>>,
  compatibility: Compatibility,
): string {
  const bindings = Object.entries(vars)
    .map(([name, value]) => `(name = "${name}", text = ${JSON.stringify(value)})`)
    .join(', ')
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [(name = "worker", esModule = embed "${module}.js")],
  compatibilityDate = "${compatibility.date}",
  compatibilityFlags = ${JSON.stringify(compatibility.flags).replaceAll(',', ', ')},
  bindings = [${bindings}],
  globalOutbound = "loopback",
);
`
}

function command(
  name: RuntimeName,
  directory: string,
  entry: keyof typeof ENTRIES,
  port: number,
  vars: Readonly<Record<string, string>>,
): string[] {
  const family = binaryName(name)
  const module = ENTRIES[entry][family]
  switch (name) {
    case 'bun':
      // --no-install: the bundle imports nothing but built-ins, and nothing may be fetched.
      return ['--no-install', join(directory, `${module}.js`)]
    case 'deno':
      return [
        'run',
        '--no-remote',
        '--cached-only',
        '--no-config',
        '--no-prompt',
        '--allow-net=127.0.0.1',
        // Only the launcher's variables: tollgate itself reads no environment.
        `--allow-env=${Object.keys(vars).join(',')}`,
        join(directory, `${module}.js`),
      ]
    case 'workerd':
    case 'workerd 2024-09-23': {
      const file = join(directory, `workerd-${port}.capnp`)
      writeFileSync(file, workerdConfig(port, module, vars, WORKERD_COMPATIBILITY[name]))
      return ['serve', file]
    }
  }
}

/**
 * Starts `name` on a free loopback port serving the `entry` bundled in `directory`, with `vars`
 * (environment variables; text bindings on workerd) plus `PORT`; resolves once it answers HTTP.
 */
async function launch(
  name: RuntimeName,
  directory: string,
  entry: keyof typeof ENTRIES,
  variables: Readonly<Record<string, string>>,
): Promise<RuntimeServer> {
  const binary = runtimeBinary(name)
  const port = await freePort()
  const vars = { ...variables, PORT: String(port) }
  const args = command(name, directory, entry, port, vars)
  const env = {
    ...process.env,
    ...vars,
    // A cache of its own: proves that nothing Deno cached elsewhere is needed.
    DENO_DIR: join(directory, 'deno-cache'),
    DENO_NO_UPDATE_CHECK: '1',
  }
  const child = spawn(binary, args, { cwd: directory, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((done) => child.once('exit', () => done()))
  const origin = `http://127.0.0.1:${port}`
  const server: RuntimeServer = {
    name,
    origin,
    port,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
      children.delete(child)
    },
  }
  const deadline = Date.now() + START_DEADLINE_MS
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited before answering (${binary} ${args.join(' ')}):\n${output}`)
    }
    try {
      // Any answer will do: the server is listening.
      await (await fetch(`${origin}${READY_PATH}`)).arrayBuffer()
      return server
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await server.stop()
      throw new Error(`${name} did not answer within ${START_DEADLINE_MS} ms:\n${output}`)
    }
    await new Promise((done) => setTimeout(done, 50))
  }
}

/** Starts `name` serving the runtime app (test/runtimes/app.ts) with `config`. */
export function startRuntime(
  name: RuntimeName,
  directory: string,
  config: RuntimeAppConfig,
): Promise<RuntimeServer> {
  return launch(name, directory, 'app', { TOLLGATE_RUNTIME_CONFIG: JSON.stringify(config) })
}

/** Starts `name` serving the Hono runtime app (test/runtimes/hono-app.ts) with `config`. */
export function startHonoRuntime(
  name: RuntimeName,
  directory: string,
  config: HonoRuntimeConfig,
): Promise<RuntimeServer> {
  return launch(name, directory, 'hono', { TOLLGATE_RUNTIME_CONFIG: JSON.stringify(config) })
}

/** Starts the sample of docs/runtimes.md for `name`, its issuer at `keycloakUrl`. */
export function startSample(
  name: RuntimeName,
  directory: string,
  keycloakUrl: string,
): Promise<RuntimeServer> {
  return launch(name, directory, 'sample', { KEYCLOAK_URL: keycloakUrl })
}

/** A fresh directory holding the bundles; `remove()` when done. */
export async function runtimeBundles(): Promise<{ directory: string; remove(): void }> {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-runtimes-'))
  await bundleRuntimeApps(directory)
  return { directory, remove: () => rmSync(directory, { recursive: true, force: true }) }
}

/** One HTTP/1.1 answer as it came off the socket. */
export interface RawAnswer {
  readonly status: number
  /** In the order received, names lower-cased (field names are case-insensitive, RFC 9110 §5.1). */
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Buffer
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const end = bytes.indexOf('\r\n', at)
    const size = Number.parseInt(bytes.subarray(at, end).toString('latin1'), 16)
    if (!(size > 0)) return Buffer.concat(parts)
    parts.push(bytes.subarray(end + 2, end + 2 + size))
    at = end + 2 + size + 2
  }
}

/**
 * Sends exactly these request lines (plus `Host` and `Connection: close`) and `body` to `port` on loopback
 * and parses the answer, so any server (Node's or another runtime's) is asked byte for byte the
 * same, repeated fields included.
 */
export async function exchange(
  port: number,
  lines: readonly string[],
  body = '',
): Promise<RawAnswer> {
  const raw = await new Promise<Buffer>((done, fail) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', fail)
    socket.on('close', () => done(Buffer.concat(chunks)))
    socket.write(
      `${[...lines, 'Host: 127.0.0.1', 'Connection: close'].join('\r\n')}\r\n\r\n${body}`,
    )
  })
  const split = raw.indexOf('\r\n\r\n')
  if (split === -1) throw new Error(`no complete answer: ${JSON.stringify(raw.toString('latin1'))}`)
  const [statusLine = '', ...fields] = raw.subarray(0, split).toString('latin1').split('\r\n')
  const headers = fields.map((field): readonly [string, string] => {
    const colon = field.indexOf(':')
    return [field.slice(0, colon).toLowerCase(), field.slice(colon + 1).trim()]
  })
  const rest = raw.subarray(split + 4)
  const chunked = headers.some(
    ([name, value]) => name === 'transfer-encoding' && /chunked/i.test(value),
  )
  return { status: Number(statusLine.slice(9, 12)), headers, body: chunked ? dechunk(rest) : rest }
}

// Fields a host sets on its own (transport, its name, the time): everything else must match.
const HOST_FIELDS = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'server',
])

/**
 * An answer as two hosts can be compared: the host's own fields dropped and names sorted, the
 * body as text. The seconds of `Retry-After` and of RateLimit's `t=` count from each server's own
 * state, so they must be whole seconds and are then compared as `<s>`.
 *
 * @throws Error when `Retry-After` or RateLimit's `t=` is not a whole number of seconds.
 */
export function comparableAnswer(answer: RawAnswer) {
  const headers = answer.headers
    .filter(([name]) => !HOST_FIELDS.has(name))
    .map(([name, value]): [string, string] => {
      if (name === 'retry-after') {
        if (!/^[1-9]\d*$/.test(value)) throw new Error(`Retry-After: ${value}`)
        return [name, '<s>']
      }
      if (name === 'ratelimit') {
        if (!/;t=\d+$/.test(value)) throw new Error(`RateLimit: ${value}`)
        return [name, value.replace(/;t=\d+$/, ';t=<s>')]
      }
      return [name, value]
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return { status: answer.status, headers, body: answer.body.toString('latin1') }
}

/** The value of field `name` (lower case) in a raw answer, the first when repeated. */
export function answerField(answer: RawAnswer, name: string): string | undefined {
  return answer.headers.find(([field]) => field === name)?.[1]
}
