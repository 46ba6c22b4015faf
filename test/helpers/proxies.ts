/**
 * Real TLS-terminating proxies on loopback, configured by the guide itself: the fenced blocks of
 * docs/mtls.md (its `openssl` lines, nginx's and HAProxy's settings) are read from the Markdown,
 * given this machine's paths and free ports by exact, checked replacements, and run. A change to
 * the guide is a change to what the tests run; a block the replacements no longer fit fails with
 * the text it expected.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

const ROOT = resolve(import.meta.dirname, '../..')

/** A fenced block of a Markdown file. */
export interface FencedBlock {
  /** The info string's first word: `sh`, `nginx`, `haproxy`, `js`, `ts`. */
  readonly language: string
  readonly code: string
  /** The nearest heading above the block, without its `#`s. */
  readonly heading: string
  /** The 1-based line of the block's first code line. */
  readonly line: number
}

/** Every fenced block of `file` (relative to the repository), in the order of the page. */
export function fencedBlocks(file: string): FencedBlock[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n')
  const blocks: FencedBlock[] = []
  let heading = ''
  for (let i = 0; i < lines.length; i++) {
    const title = /^#+ (.*)$/.exec(lines[i] ?? '')
    if (title) heading = title[1] ?? ''
    const fence = /^```(\S*)/.exec(lines[i] ?? '')
    if (!fence) continue
    let end = i + 1
    while (end < lines.length && lines[end] !== '```') end++
    blocks.push({
      language: fence[1] ?? '',
      code: `${lines.slice(i + 1, end).join('\n')}\n`,
      heading,
      line: i + 2,
    })
    i = end
  }
  return blocks
}

/** The blocks of `language` under `heading` in `file`; fails unless there are `count` of them. */
export function blocksUnder(
  file: string,
  heading: string,
  language: string,
  count = 1,
): FencedBlock[] {
  const found = fencedBlocks(file).filter(
    (block) => block.heading === heading && block.language === language,
  )
  if (found.length !== count) {
    throw new Error(
      `${file}: expected ${count} \`\`\`${language} block(s) under "${heading}", found ${found.length}`,
    )
  }
  return found
}

/**
 * `text` with each `[from, to]` replaced; each `from` must occur exactly once, so that a guide
 * whose settings moved fails here, naming what it no longer says, instead of running something
 * else.
 */
export function replaceOnce(text: string, pairs: ReadonlyArray<readonly [string, string]>): string {
  let out = text
  for (const [from, to] of pairs) {
    const count = out.split(from).length - 1
    if (count !== 1) {
      throw new Error(`expected ${JSON.stringify(from)} once in:\n${text}\nfound it ${count} times`)
    }
    out = out.replace(from, () => to)
  }
  return out
}

/**
 * Runs a guide's shell lines with bash (`set -euo pipefail`) in `cwd`; resolves to stdout. Never
 * blocks the event loop: the lines may call a server of the test's own process.
 */
export async function runShell(
  code: string,
  cwd: string,
  env: Record<string, string> = {},
): Promise<string> {
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', code], {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  })
  return stdout
}

/** A proxy process started by {@link startProxy}. */
export interface ProxyProcess {
  readonly port: number
  /** What it printed (stdout and stderr) so far. */
  output(): string
  /** SIGTERM to its process group, SIGKILL after 3 s; resolves once it has exited. */
  stop(): Promise<void>
}

const running = new Set<ChildProcess>()
// A worker that dies without running afterAll still leaves no proxy behind.
process.on('exit', () => {
  for (const child of running) signalGroup(child, 'SIGKILL')
})

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal)
  } catch {
    // The group has exited already.
  }
}

/** Resolves true once 127.0.0.1:`port` accepts a TCP connection, false after `timeoutMs`. */
async function accepting(port: number, child: ChildProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
    const open = await new Promise<boolean>((done) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => {
        socket.destroy()
        done(true)
      })
      socket.once('error', () => done(false))
    })
    if (open) return true
    await new Promise((done) => setTimeout(done, 50))
  }
  return false
}

/**
 * Starts `command` (in the foreground, a process group of its own) and resolves once it accepts
 * connections on 127.0.0.1:`port`; rejects with its output when it exits first or never listens.
 */
export async function startProxy(
  command: string,
  args: readonly string[],
  port: number,
): Promise<ProxyProcess> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  running.add(child)
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((done) => {
    child.once('exit', () => {
      running.delete(child)
      done()
    })
    child.once('error', (error) => {
      output += String(error)
      running.delete(child)
      done()
    })
  })
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      signalGroup(child, 'SIGTERM')
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 3000)
      await exited
      clearTimeout(timer)
    }
    // Workers a master left behind.
    signalGroup(child, 'SIGKILL')
  }
  if (!(await accepting(port, child, 10_000))) {
    await stop()
    throw new Error(`${command} ${args.join(' ')} did not listen on port ${port}:\n${output}`)
  }
  return { port, output: () => output, stop }
}

/**
 * Starts a proxy whose configuration needs a free port, with another port if the one chosen was
 * taken meanwhile (up to three times): `start(port)` starts it on `port`.
 */
export async function withFreePort<T>(
  freePort: () => Promise<number>,
  start: (port: number) => Promise<T>,
): Promise<T> {
  let last: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await start(await freePort())
    } catch (error) {
      last = error
      if (!/in use/i.test(String(error))) throw error
    }
  }
  throw last
}
