/**
 * A real PostgreSQL server for the limiter tests: `initdb` in a temp dir and `postgres` on a free
 * loopback port, as `redis.ts` starts its own `redis-server`. Never the system's server, never a
 * mock. Missing binaries are an error, never a skipped test (`scripts/test-system.sh` installs
 * them). As root, the server runs as the `postgres` user (initdb refuses root).
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import pg from 'pg'

import { freePort } from './redis.js'

const HOST = '127.0.0.1'
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) {
    try {
      child.kill('SIGKILL')
    } catch {}
  }
})

/** The directory of `initdb` and `postgres`, newest version first; throws when none is installed. */
function binDir(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  const newest = versions[0]
  if (newest === undefined) {
    throw new Error(
      'PostgreSQL server binaries were not found under /usr/lib/postgresql. The store tests run ' +
        'against a real server and are never skipped: run scripts/test-system.sh (Debian: apt-get install postgresql).',
    )
  }
  return join(root, newest, 'bin')
}

/** The uid and gid to run the server with: the `postgres` user when this process is root. */
function owner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
  return { uid, gid }
}

/** One PostgreSQL server the test controls. */
export interface PostgresServer {
  readonly port: number
  /** A pool on the server's `postgres` database (user `tollgate`, trust auth). Ended by `stop()`. */
  pool(options?: pg.PoolConfig): pg.Pool
  /** SIGQUIT (immediate shutdown): every connection drops, the port refuses. */
  kill(): Promise<void>
  /** Stops the server for good and removes its directory. */
  stop(): Promise<void>
}

/** Runs `initdb` and starts `postgres` on a free loopback port; resolves once it accepts queries. */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = binDir()
  const as = owner()
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-'))
  if (as !== undefined) chownSync(dir, as.uid, as.gid)
  const data = join(dir, 'data')
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'tollgate', '--no-sync', '-E', 'UTF8'],
    { stdio: 'ignore', ...as },
  )
  const port = await freePort()
  const child = spawn(
    join(bin, 'postgres'),
    [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      `listen_addresses=${HOST}`,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'max_connections=50',
    ],
    { stdio: 'ignore', ...as },
  )
  children.add(child)
  child.once('exit', () => children.delete(child))
  const pools = new Set<pg.Pool>()
  const config = { host: HOST, port, user: 'tollgate', database: 'postgres' }
  const until = Date.now() + 20_000
  for (;;) {
    const probe = new pg.Client(config)
    try {
      await probe.connect()
      await probe.query('SELECT 1')
      await probe.end()
      break
    } catch (error) {
      await probe.end().catch(() => {})
      if (Date.now() > until || child.exitCode !== null) {
        throw new Error(`postgres on port ${port} did not start`, { cause: error })
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  async function kill() {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGQUIT')
    await exited
  }

  return {
    port,
    pool(options = {}) {
      const pool = new pg.Pool({ ...config, connectionTimeoutMillis: 2000, ...options })
      pool.on('error', () => {})
      pools.add(pool)
      return pool
    },
    kill,
    async stop() {
      // The server first: a pool waits for its checked-out clients to be released before it ends.
      await kill()
      await Promise.all([...pools].map((pool) => pool.end().catch(() => {})))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
