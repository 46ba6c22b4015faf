/**
 * Real `redis-server` processes for the limiter tests: one server on a free loopback port that a
 * test can kill, freeze (SIGSTOP), thaw (SIGCONT) and restart on the same port, and a Cluster of
 * three masters. Never mocks. A missing `redis-server` is an error, never a skipped test.
 *
 * @module
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { ClusterOptions, RedisOptions } from 'ioredis'
import { Cluster, Redis } from 'ioredis'

const execFileAsync = promisify(execFile)
const HOST = '127.0.0.1'

/** Every child started by this module, killed if the test process exits without cleaning up. */
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) {
    try {
      child.kill('SIGCONT')
      child.kill('SIGKILL')
    } catch {}
  }
})

/** Fails loudly (never skips) when the machine has no Redis binaries. */
export function requireRedisBinaries(): void {
  for (const binary of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(binary, ['--version'], { stdio: 'ignore' })
    if (probe.error !== undefined || probe.status !== 0) {
      throw new Error(
        `"${binary}" was not found on PATH. The rate-limit tests run against a real Redis and are ` +
          'never skipped: install Redis (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis).',
      )
    }
  }
}

/**
 * A loopback port nobody listens on right now, from a block of this test process's own below the
 * kernel's ephemeral range (32768 and up on Linux), never from that range. A port the kernel hands
 * out for `listen(0)` is free only until another test's `listen(0)` takes it: between this probe
 * and the program that binds it later, a server of another worker could take it and answer in its
 * place (a sample read another server's 404). Servers that tests start with `listen(0)` never get a
 * port of these blocks. Worker N takes block (N − 1) mod 11 (eleven blocks fit below the range, so
 * up to ten workers have one each beside the main process's), starting at a random offset so that
 * two runs on one machine seldom meet; a port is probed before it is handed out in any case.
 */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < PORTS_PER_WORKER; tried++) {
    const port = PORT_BLOCK + (nextPort++ % PORTS_PER_WORKER)
    if (await listensOn(port)) return port
  }
  throw new Error(`no free loopback port in ${PORT_BLOCK}–${PORT_BLOCK + PORTS_PER_WORKER - 1}`)
}

const PORTS_PER_WORKER = 1000
/** Worker 1 takes 20000–20999, worker 2 21000–21999…; the main process 30000–30999. */
const PORT_BLOCK = 20_000 + ((Number(process.env.VITEST_POOL_ID ?? 11) - 1) % 11) * PORTS_PER_WORKER
let nextPort = Math.floor(Math.random() * PORTS_PER_WORKER)

/** Whether a server could listen on `port` (and did, for a moment). */
function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.unref()
    server.once('error', () => resolve(false))
    server.listen(port, HOST, () => server.close(() => resolve(true)))
  })
}

/** Sends an inline PING; resolves true on +PONG within `timeoutMs`. */
export function ping(port: number, timeoutMs = 200): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port })
    let reply = ''
    const done = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.on('error', () => done(false))
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1')
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'))
    })
  })
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
}

/** One `redis-server` process the test controls. */
export interface RedisServer {
  readonly port: number
  /** SIGKILL: connections drop at once, as when a host dies. Data since the last `SAVE` is gone. */
  kill(): Promise<void>
  /** SIGSTOP: the socket stays open but nothing answers, as with a stalled server. */
  freeze(): void
  /** SIGCONT after {@link RedisServer.freeze}. */
  thaw(): void
  /**
   * Starts the server again on the same port and directory (after {@link RedisServer.kill}): empty,
   * or with what the last `SAVE` wrote to `dump.rdb` there (`appendonly no`, no automatic saves).
   */
  restart(): Promise<void>
  /** Stops the server for good (thaws it first if frozen). */
  stop(): Promise<void>
  /** An ioredis client that fails fast, already connected. Disconnected by {@link RedisServer.stop}. */
  client(options?: RedisOptions): Promise<Redis>
  /**
   * The guides' client (no offline queue) just created, still connecting, as right after an
   * application starts: ioredis refuses its commands outright until it is connected. With
   * `lazyConnect`, one never told to connect. Disconnected by {@link RedisServer.stop}.
   */
  starting(options?: RedisOptions): Redis
}

/** Starts `redis-server` on a free loopback port, without persistence, and waits for PONG. */
export async function startRedisServer(extraArgs: readonly string[] = []): Promise<RedisServer> {
  requireRedisBinaries()
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'))
  const clients = new Set<Redis>()
  let child: ChildProcess | undefined

  async function launch() {
    const started = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        HOST,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--loglevel',
        'warning',
        ...extraArgs,
      ],
      { stdio: 'ignore' },
    )
    children.add(started)
    started.once('exit', () => children.delete(started))
    child = started
    await waitUntil(`redis-server on port ${port}`, () => ping(port))
  }

  async function kill() {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    // SIGKILL first: a frozen server dies without running what is in its socket buffers.
    running.kill('SIGKILL')
    running.kill('SIGCONT')
    await exited
  }

  function starting(options: RedisOptions = {}): Redis {
    const client = new Redis({ host: HOST, port, ...failFast, ...options })
    client.on('error', () => {})
    clients.add(client)
    return client
  }

  await launch()
  return {
    port,
    kill,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
    restart: launch,
    async stop() {
      for (const client of clients) client.disconnect()
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
    async client(options = {}) {
      const client = starting(options)
      await waitForReady(client)
      return client
    },
    starting,
  }
}

/** Options that make ioredis fail fast instead of queueing while Redis is away. */
export const failFast = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 1000,
  retryStrategy: () => 100,
} as const satisfies RedisOptions

/** Resolves once the client (Redis or Cluster) reports `ready`. */
export async function waitForReady(client: Redis | Cluster, timeoutMs = 10_000): Promise<void> {
  if (client.status === 'ready') return
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`client not ready after ${timeoutMs} ms`)),
      timeoutMs,
    )
    client.once('ready', () => {
      clearTimeout(timer)
      resolve()
    })
  })
}

/** A Redis Cluster of three masters (no replicas) on loopback ports. */
export interface RedisCluster {
  readonly nodes: readonly RedisServer[]
  readonly ports: readonly number[]
  /** A connected ioredis Cluster client. Disconnected by {@link RedisCluster.stop}. */
  client(options?: ClusterOptions): Promise<Cluster>
  /** Resolves once every node reports `cluster_state:ok` (after a node restart, for example). */
  waitUntilHealthy(): Promise<void>
  /** The port of the master that owns `key`'s slot, and the slot. */
  ownerOf(key: string): Promise<{ port: number; slot: number }>
  stop(): Promise<void>
}

/** Starts three cluster-enabled servers and joins them with `redis-cli --cluster create`. */
export async function startRedisCluster(): Promise<RedisCluster> {
  requireRedisBinaries()
  const configDir = mkdtempSync(join(tmpdir(), 'tollgate-cluster-'))
  const nodes: RedisServer[] = []
  for (let index = 0; index < 3; index++) {
    const busPort = await freePort()
    nodes.push(
      await startRedisServer([
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(configDir, `nodes-${index}-${busPort}.conf`),
        '--cluster-port',
        String(busPort),
        '--cluster-node-timeout',
        '2000',
      ]),
    )
  }
  const ports = nodes.map((node) => node.port)
  const cli = (port: number, ...args: string[]) =>
    execFileAsync('redis-cli', ['-h', HOST, '-p', String(port), ...args], { timeout: 10_000 })

  await execFileAsync(
    'redis-cli',
    [
      '--cluster',
      'create',
      ...ports.map((port) => `${HOST}:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ],
    { timeout: 30_000 },
  )
  const waitUntilHealthy = () =>
    waitUntil(
      'cluster_state:ok on every node',
      async () => {
        const infos = await Promise.all(
          ports.map((port) => cli(port, 'cluster', 'info').catch(() => ({ stdout: '' }))),
        )
        return infos.every(({ stdout }) => stdout.includes('cluster_state:ok'))
      },
      20_000,
    )
  await waitUntilHealthy()

  const clients = new Set<Cluster>()
  return {
    nodes,
    ports,
    waitUntilHealthy,
    async client(options = {}) {
      const client = new Cluster(
        ports.map((port) => ({ host: HOST, port })),
        {
          enableOfflineQueue: false,
          redisOptions: { ...failFast },
          clusterRetryStrategy: () => 100,
          ...options,
        },
      )
      client.on('error', () => {})
      clients.add(client)
      await waitForReady(client)
      return client
    },
    async ownerOf(key) {
      const { stdout: slotText } = await cli(ports[0] as number, 'cluster', 'keyslot', key)
      const slot = Number(slotText.trim())
      const { stdout: table } = await cli(ports[0] as number, 'cluster', 'nodes')
      // <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot or range>...
      for (const line of table.trim().split('\n')) {
        const fields = line.trim().split(' ')
        const port = Number(fields[1]?.split('@')[0]?.split(':')[1])
        for (const range of fields.slice(8)) {
          const [from, to = from] = range.split('-').map(Number)
          if (from !== undefined && to !== undefined && slot >= from && slot <= to) {
            return { port, slot }
          }
        }
      }
      throw new Error(`slot ${slot} has no owner`)
    },
    async stop() {
      for (const client of clients) client.disconnect()
      await Promise.all(nodes.map((node) => node.stop()))
      rmSync(configDir, { recursive: true, force: true })
    },
  }
}
