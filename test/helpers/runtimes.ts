/**
 * The Fetch adapter on other JavaScript runtimes: bundles the runtime app of test/runtimes/ once
 * with esbuild, then starts it on Bun (`Bun.serve`), Deno (`Deno.serve`) or workerd (a module
 * worker with `nodejs_compat`) on a free loopback port, waits until it answers, and stops it.
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
const ENTRIES = { bun: 'bun-server', deno: 'deno-server', workerd: 'workerd-worker' } as const
/** How long a runtime may take to answer its first request (a start, not a measured time). */
const START_DEADLINE_MS = 20_000

/** A runtime serving the runtime app. */
export interface RuntimeServer {
  readonly name: RuntimeName
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
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
export function runtimeBinary(name: RuntimeName): string {
  const binary = join(ROOT, 'node_modules', '.bin', binaryName(name))
  if (!existsSync(binary)) {
    throw new Error(
      `${binary} is missing. The runtime tests run the Fetch adapter on Bun, Deno and workerd and ` +
        `are never skipped: run "npm ci" (the "${binaryName(name)}" devDependency installs the binary; its ` +
        'install script must be allowed to run).',
    )
  }
  return binary
}

/**
 * Bundles the three entry points of test/runtimes/ into `directory` (ESM, `node:` built-ins left
 * to the runtime, Workers export conditions first), so no runtime resolves or fetches a package.
 */
export async function bundleRuntimeApps(directory: string): Promise<void> {
  await build({
    entryPoints: Object.values(ENTRIES).map((entry) =>
      join(ROOT, 'test', 'runtimes', `${entry}.ts`),
    ),
    outdir: directory,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['node:*'],
    logLevel: 'warning',
  })
}

/** A workerd config: the worker on `port`, the JSON config as `CONFIG`, loopback fetches allowed. */
function workerdConfig(
  port: number,
  config: RuntimeAppConfig,
  compatibility: { readonly date: string; readonly flags: readonly string[] },
): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    # The default "internet" service reaches public addresses only; the test issuer is on loopback.
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [(name = "worker", esModule = embed "${ENTRIES.workerd}.js")],
  compatibilityDate = "${compatibility.date}",
  compatibilityFlags = ${JSON.stringify(compatibility.flags).replaceAll(',', ', ')},
  bindings = [(name = "CONFIG", json = ${JSON.stringify(JSON.stringify(config))})],
  globalOutbound = "loopback",
);
`
}

function command(
  name: RuntimeName,
  directory: string,
  port: number,
  config: RuntimeAppConfig,
): { args: string[]; env: NodeJS.ProcessEnv } {
  const env = {
    ...process.env,
    PORT: String(port),
    TOLLGATE_RUNTIME_CONFIG: JSON.stringify(config),
  }
  switch (name) {
    case 'bun':
      // --no-install: the bundle imports nothing but built-ins, and nothing may be fetched.
      return { args: ['--no-install', join(directory, `${ENTRIES.bun}.js`)], env }
    case 'deno':
      return {
        args: [
          'run',
          '--no-remote',
          '--cached-only',
          '--no-config',
          '--no-prompt',
          '--allow-net=127.0.0.1',
          // Only the launcher's two variables: tollgate itself reads no environment.
          '--allow-env=PORT,TOLLGATE_RUNTIME_CONFIG',
          join(directory, `${ENTRIES.deno}.js`),
        ],
        // A cache of its own: proves that nothing cached elsewhere is needed.
        env: { ...env, DENO_DIR: join(directory, 'deno-cache'), DENO_NO_UPDATE_CHECK: '1' },
      }
    case 'workerd':
    case 'workerd 2024-09-23': {
      const file = join(directory, `workerd-${port}.capnp`)
      writeFileSync(file, workerdConfig(port, config, WORKERD_COMPATIBILITY[name]))
      return { args: ['serve', file], env }
    }
  }
}

/** Starts `name` serving the runtime app bundled in `directory`; resolves once it answers. */
export async function startRuntime(
  name: RuntimeName,
  directory: string,
  config: RuntimeAppConfig,
): Promise<RuntimeServer> {
  const binary = runtimeBinary(name)
  const port = await freePort()
  const { args, env } = command(name, directory, port, config)
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
      const res = await fetch(`${origin}${READY_PATH}`)
      if (res.ok) return server
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
