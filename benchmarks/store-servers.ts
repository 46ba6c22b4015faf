/**
 * The limiter stores' servers for `micro/stores.bench.ts`, each the bench's own on a free loopback
 * port, started and stopped by the bench: `redis-server` (no persistence), PostgreSQL (`initdb` in
 * a temp dir, as `test/helpers/postgres.ts` does, running as the `postgres` user when root, since
 * initdb refuses root) and `memcached`. A missing binary is reported, never thrown: the suite then
 * marks that store as not measured.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const HOST = '127.0.0.1'
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) {
    try {
      child.kill('SIGKILL')
    } catch {}
  }
})

export interface StoreServer {
  readonly port: number
  stop(): Promise<void>
}

/** A loopback port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, HOST, () => {
      const address = server.address()
      server.close(() => {
        if (typeof address === 'object' && address !== null) resolve(address.port)
        else reject(new Error('no port'))
      })
    })
  })
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

async function waitFor(what: string, child: ChildProcess, ready: () => Promise<boolean>) {
  const until = Date.now() + 20_000
  while (!(await ready())) {
    if (child.exitCode !== null || Date.now() > until) throw new Error(`${what} did not start`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

function track(child: ChildProcess, cleanup?: () => void): () => Promise<void> {
  children.add(child)
  child.once('exit', () => children.delete(child))
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    cleanup?.()
  }
}

const hasBinary = (binary: string, args = ['--version']): boolean => {
  const probe = spawnSync(binary, args, { stdio: 'ignore' })
  return probe.error === undefined && probe.status === 0
}

export async function startRedis(): Promise<StoreServer | { error: string }> {
  if (!hasBinary('redis-server')) return { error: 'redis-server is not on PATH' }
  const port = await freePort()
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
  const stop = track(child)
  await waitFor(`redis-server on port ${port}`, child, () => accepts(port))
  return { port, stop }
}

export async function startMemcached(): Promise<StoreServer | { error: string }> {
  const binary = existsSync('/usr/bin/memcached') ? '/usr/bin/memcached' : 'memcached'
  if (!hasBinary(binary, ['-h'])) return { error: 'memcached is not installed' }
  const port = await freePort()
  const asRoot = process.getuid?.() === 0 ? ['-u', 'nobody'] : []
  const child = spawn(binary, ['-l', HOST, '-p', String(port), '-U', '0', ...asRoot], {
    stdio: 'ignore',
  })
  const stop = track(child)
  await waitFor(`memcached on port ${port}`, child, () => accepts(port))
  return { port, stop }
}

/** The newest PostgreSQL server binaries under /usr/lib/postgresql, if any. */
function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const newest = readdirSync(root)
    .filter((version) => existsSync(join(root, version, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a))[0]
  return newest === undefined ? undefined : join(root, newest, 'bin')
}

/** Starts PostgreSQL with trust auth for user `tollgate`; `ready` is probed with the caller's client. */
export async function startPostgres(
  ready: (port: number) => Promise<boolean>,
): Promise<StoreServer | { error: string }> {
  const bin = postgresBin()
  if (bin === undefined) return { error: 'no PostgreSQL server binaries under /usr/lib/postgresql' }
  const as =
    process.getuid?.() === 0
      ? {
          uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
          gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
        }
      : undefined
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-pg-'))
  if (as !== undefined) chownSync(dir, as.uid, as.gid)
  const data = join(dir, 'data')
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'tollgate', '--no-sync', '-E', 'UTF8'],
    { stdio: 'ignore', ...as },
  )
  const port = await freePort()
  // Durability settings as a production server's (fsync, synchronous commit): a consume is a commit.
  const child = spawn(
    join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', dir, '-c', `listen_addresses=${HOST}`],
    { stdio: 'ignore', ...as },
  )
  const stop = track(child, () => rmSync(dir, { recursive: true, force: true }))
  await waitFor(`postgres on port ${port}`, child, () => ready(port))
  return { port, stop }
}
