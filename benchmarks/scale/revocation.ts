/**
 * Issue 30: the revocation list at production sizes (1k to 1M entries), measured on the built
 * package (`../../dist`). Each size runs in a child process of its own (`node --expose-gc`) with a
 * dedicated `redis-server` on a free loopback port, so heap, event loop and SLOWLOG belong to that
 * size alone:
 *
 * 1. the list is filled with live `jti` entries in the stored format (1,000 per HSET), and a writer
 *    gate (started on the empty list) waits to make changes in step 4;
 * 2. after GC, a fresh gate (the instance under test) is created; requests with a revoked and a
 *    clean token are sent every 20 ms until `gate.ready()` says `held`, and their answers counted
 *    (a 503 or a wrong answer is a failure of the target); the event loop's longest stall (and
 *    its 99th percentile) is taken with `perf_hooks.monitorEventLoopDelay` from creation to
 *    `held`, with this process's CPU time and Redis's time in tollgate's commands (the sum of
 *    their SLOWLOG durations) over the same span: on a machine shared with other work, wall
 *    times stretch, these do not;
 * 3. after GC again: heap bytes per entry (heap of the process with the fresh gate minus without,
 *    divided by the entries) and Redis memory per entry (`INFO memory` `used_memory`, filled minus
 *    empty);
 * 4. a periodic resynchronization (`resyncIntervalMs: 1000`) while the writer revokes 1,000 more:
 *    the longest event-loop stall over that window (2.5 s, two resyncs at least);
 * 5. the revocation check on the request path: `gate.check` on a cached clean token, ns per call,
 *    beside the same on a gate without revocation;
 * 6. the slowest Redis command any tollgate connection ran during steps 2 to 4 (`SLOWLOG GET -1`
 *    with `slowlog-log-slower-than 0`, the bench's own connection excluded by its client name).
 *
 * Sizes: `BENCH_SCALE_SIZES` (comma-separated), default 1000,10000,100000,300000,1000000.
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { bearer } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { freePort } from '../store-servers.ts'
import { type Gate, gateOptions, isBuilt, loadCore } from '../tollgate.ts'

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '1000,10000,100000,300000,1000000')
  .split(',')
  .map((text) => Number(text.trim()))
  .filter((size) => Number.isInteger(size) && size > 0)
const ADMIN_NAME = 'bench-admin'
const RESYNC_CHANGES = 1000
/** How long a fresh instance is given to hold the list before the size is reported as not held. */
const HELD_DEADLINE_MS = 60_000

interface Row {
  size: number
  heldMs: number | undefined
  requests: number
  unavailable: number
  wrong: number
  heapBytesPerEntry: number
  redisBytesPerEntry: number
  slowest: { command: string; ms: number }
  /** tollgate's commands in SLOWLOG, and how many of them took over 20 ms. */
  commands: number
  over20ms: number
  loadStallMs: number
  loadStallP99Ms: number
  /** This process's CPU time, and Redis's time in tollgate's commands, from creation to `held`. */
  loadCpuMs: number
  loadRedisMs: number
  resyncStallMs: number
  checkNs: number
  checkOffNs: number
}

type RevokingGate = Gate & {
  revoke(target: Record<string, unknown>): Promise<unknown>
  ready(): Promise<{ revocation?: string }>
  close(): Promise<void>
}

const gc = (): void => {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect === undefined) throw new Error('run with node --expose-gc')
  for (let i = 0; i < 3; i++) collect()
}

async function startRedisServer(): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'bench-scale-redis-'))
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', cwd: dir },
  )
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null })
  probe.on('error', () => {})
  for (let i = 0; ; i++) {
    try {
      await probe.connect()
      break
    } catch (error) {
      if (i > 100) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  probe.disconnect()
  return {
    port,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Redis answers BUSY while a script runs past busy-reply-threshold (the old full-list script did). */
async function untilNotBusy<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call()
    } catch (error) {
      if (!String(error).includes('BUSY') || attempt > 600) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/**
 * Writes `size` live `jti` entries the way `gate.revoke()` stores them (the entries hash, field
 * `[issuer, 'jti', value]`, value `notBefore:expiresAt`; the same before and after issue 30), 1,000
 * per HSET, and returns one of them, from the middle.
 */
async function fill(admin: Redis, issuer: string, size: number): Promise<string> {
  const notBefore = Math.floor(Date.now() / 1000)
  const expiresAt = (notBefore + 86_400) * 1000
  let middle = ''
  for (let start = 0; start < size; start += 1000) {
    const fields: string[] = []
    for (let i = start; i < Math.min(size, start + 1000); i++) {
      const jti = randomUUID()
      if (i === Math.floor(size / 2)) middle = jti
      fields.push(JSON.stringify([issuer, 'jti', jti]), `${notBefore}:${expiresAt}`)
    }
    await admin.hset('{tollgate:rv}:entries', ...fields)
  }
  return middle
}

type SlowlogEntry = [number, number, number, string[], string, string]

/** tollgate's commands in SLOWLOG since the last call (the bench's own connection left out). */
async function slowlog(admin: Redis): Promise<SlowlogEntry[]> {
  const log = (await untilNotBusy(() => admin.call('SLOWLOG', 'GET', '-1'))) as SlowlogEntry[]
  await untilNotBusy(() => admin.slowlog('RESET'))
  return log.filter((entry) => entry[5] !== ADMIN_NAME)
}

const usedMemory = async (admin: Redis): Promise<number> =>
  Number(/used_memory:(\d+)/.exec((await admin.info('memory')) as string)?.[1])

/** ns per `gate.check` on one cached token (best of 5 rounds of 50,000). */
async function checkCost(gate: Gate, request: { headers: Record<string, string> }) {
  let best = Number.POSITIVE_INFINITY
  for (let round = 0; round < 5; round++) {
    const started = performance.now()
    for (let i = 0; i < 50_000; i++) await gate.check(request)
    best = Math.min(best, ((performance.now() - started) * 1e6) / 50_000)
  }
  return best
}

async function measureSize(size: number): Promise<Row> {
  const redisServer = await startRedisServer()
  const issuer = await startIssuer()
  const core = await loadCore()
  const clients: Redis[] = []
  const client = () => {
    const made = new Redis({
      port: redisServer.port,
      host: '127.0.0.1',
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
    })
    made.on('error', () => {})
    clients.push(made)
    return made
  }
  const admin = client()
  await admin.client('SETNAME', ADMIN_NAME)
  const gates: RevokingGate[] = []
  const base = gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'off' })
  const make = (revocation: Record<string, unknown> | undefined) => {
    const gate = core.createGate({
      ...base,
      ...(revocation === undefined ? {} : { revocation }),
    } as typeof base) as RevokingGate
    gates.push(gate)
    return gate
  }
  try {
    const emptyRedis = await usedMemory(admin)
    // The writer makes the changes of the resynchronization step; it starts on an empty list.
    const writer = make({ store: { redis: client() } })
    await writer.ready()
    const revokedJti = await fill(admin, issuer.issuer, size)
    const revoked = bearer(issuer.mint({ jti: revokedJti }, 'ES256'))
    const clean = bearer(issuer.mint({}, 'ES256'))
    // Before SLOWLOG records anything: its own entries take Redis memory.
    const redisBytesPerEntry = ((await untilNotBusy(() => usedMemory(admin))) - emptyRedis) / size

    await admin.config('SET', 'slowlog-max-len', '100000')
    await admin.config('SET', 'slowlog-log-slower-than', '0')
    await admin.slowlog('RESET')
    gc()
    const heapBefore = process.memoryUsage().heapUsed

    const loop = monitorEventLoopDelay({ resolution: 10 })
    loop.enable()
    const started = performance.now()
    const cpuBefore = process.cpuUsage()
    const fresh = make({ store: { redis: client() }, resyncIntervalMs: 1000 })
    let heldMs: number | undefined
    let requests = 0
    let unavailable = 0
    let wrong = 0
    const outcomes: Promise<void>[] = []
    const ask = (request: typeof clean, expected: string) => {
      requests += 1
      outcomes.push(
        fresh.check(request).then(
          () => {
            if (expected !== 'admitted') wrong += 1
          },
          (error: { reason?: string; status?: number }) => {
            if (error.status === 503) unavailable += 1
            else if (error.reason !== expected) wrong += 1
          },
        ),
      )
    }
    const sender = setInterval(() => {
      ask(revoked, 'revoked')
      ask(clean, 'admitted')
    }, 20)
    const deadline = started + HELD_DEADLINE_MS
    while (performance.now() < deadline) {
      const report = (await fresh.ready()) as { revocation?: string }
      if (report.revocation === 'held') {
        heldMs = performance.now() - started
        break
      }
    }
    loop.disable()
    const loadCpuMs =
      process.cpuUsage(cpuBefore).user / 1000 + process.cpuUsage(cpuBefore).system / 1000
    const loadLog = await slowlog(admin)
    const loadRedisMs = loadLog.reduce((sum, [, , micros]) => sum + micros, 0) / 1000
    const loadStallP99Ms = loop.percentile(99) / 1e6
    clearInterval(sender)
    await Promise.all(outcomes)
    const loadStallMs = loop.max / 1e6

    gc()
    const heapBytesPerEntry = (process.memoryUsage().heapUsed - heapBefore) / size

    const resyncLoop = monitorEventLoopDelay({ resolution: 10 })
    resyncLoop.enable()
    const windowEnd = performance.now() + 2500
    for (let i = 0; i < RESYNC_CHANGES; i += 100) {
      await Promise.all(Array.from({ length: 100 }, () => writer.revoke({ jti: randomUUID() })))
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, windowEnd - performance.now())))
    resyncLoop.disable()
    const resyncStallMs = resyncLoop.max / 1e6

    const log = [...loadLog, ...(await slowlog(admin))]
    let slowest = { command: '-', ms: 0 }
    let commands = 0
    let over20ms = 0
    for (const [, , micros, args] of log) {
      commands += 1
      if (micros > 20_000) over20ms += 1
      if (micros / 1000 > slowest.ms) {
        const verb = String(args[0]).toUpperCase()
        // A script is named by its first statement, enough to tell which one it is.
        const script = verb === 'EVAL' ? String(args[1]).trim().split('\n')[0]?.slice(0, 40) : ''
        const command = script ? `EVAL (${script})` : verb
        slowest = { command, ms: micros / 1000 }
      }
    }

    const off = make(undefined)
    await off.ready()
    await off.check(clean)
    const checkOffNs = await checkCost(off, clean)
    // A list never held answers 503 to every request: no check cost to measure.
    const checkNs =
      heldMs === undefined
        ? Number.NaN
        : await fresh.check(clean).then(
            () => checkCost(fresh, clean),
            () => Number.NaN,
          )
    return {
      size,
      heldMs,
      requests,
      unavailable,
      wrong,
      heapBytesPerEntry,
      redisBytesPerEntry,
      slowest,
      commands,
      over20ms,
      loadStallMs,
      loadStallP99Ms,
      loadCpuMs,
      loadRedisMs,
      resyncStallMs,
      checkNs,
      checkOffNs,
    }
  } finally {
    for (const gate of gates) await gate.close()
    for (const made of clients) made.disconnect()
    await issuer.close()
    await redisServer.stop()
  }
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

function table(rows: readonly (Row | { size: number; error: string })[]): string {
  const lines = [
    '| entries | fresh instance until `held` (CPU: this process / Redis) | requests meanwhile: 503 / wrong | heap per entry | Redis per entry | slowest Redis command (over 20 ms / all) | event-loop stall, load: max (p99) / periodic resync: max | check (cache hit) with / without revocation |',
    '|---:|---:|---|---:|---:|---|---|---|',
  ]
  for (const row of rows) {
    if ('error' in row) {
      lines.push(`| ${fmt(row.size)} | not measured: ${row.error} | | | | | | |`)
      continue
    }
    lines.push(
      `| ${fmt(row.size)} | ${row.heldMs === undefined ? `not held in ${HELD_DEADLINE_MS / 1000} s` : `${fmt(row.heldMs)} ms`} (${fmt(row.loadCpuMs)} / ${fmt(row.loadRedisMs)} ms) | ${row.unavailable} / ${row.wrong} of ${row.requests} | ${fmt(row.heapBytesPerEntry)} B | ${fmt(row.redisBytesPerEntry)} B | ${row.slowest.command} ${fmt(row.slowest.ms, 1)} ms (${fmt(row.over20ms)} / ${fmt(row.commands)}) | ${fmt(row.loadStallMs)} (${fmt(row.loadStallP99Ms)}) ms / ${fmt(row.resyncStallMs)} ms | ${Number.isNaN(row.checkNs) ? 'not held' : `${fmt(row.checkNs / 1000, 2)} µs`} / ${fmt(row.checkOffNs / 1000, 2)} µs |`,
    )
  }
  return lines.join('\n')
}

/** Runs every size in its own child process and returns the Markdown table. */
export async function run(): Promise<string> {
  if (!isBuilt()) return 'revocation at scale: not measured (dist/ is not built)'
  const rows: (Row | { size: number; error: string })[] = []
  const self = fileURLToPath(import.meta.url)
  for (const size of SIZES) {
    const child = spawnSync(
      process.execPath,
      ['--expose-gc', '--max-old-space-size=8192', '--import', 'tsx', self, '--size', String(size)],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 },
    )
    const line = child.stdout.trim().split('\n').at(-1) ?? ''
    try {
      const row = JSON.parse(line) as Row
      rows.push(row)
      console.error(`revocation at ${fmt(size)} entries: ${JSON.stringify(row)}`)
    } catch {
      rows.push({ size, error: `child exited ${child.status}` })
    }
  }
  return `### Revocation list\n\n${table(rows)}`
}

const sizeArg = process.argv.indexOf('--size')
if (sizeArg !== -1) {
  const row = await measureSize(Number(process.argv[sizeArg + 1]))
  process.stdout.write(`${JSON.stringify(row)}\n`)
  process.exit(0)
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(await run())
}
