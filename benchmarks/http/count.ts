/**
 * Instructions per request over HTTP (issue 24, fifth pass): each contender's server runs under
 * `valgrind --tool=callgrind` and a client in this process sends it a fixed number of requests
 * per mode; the server's instructions (all its threads: JIT, GC, crypto) are counted only while
 * the measured requests run, then divided by their number. Unlike CPU time, the count does not
 * move when other processes share the machine, so builds can be compared on a busy one.
 *
 *   tsx http/count.ts --frameworks=koa,express --modes=repeated,unknown-kid
 *   tsx http/count.ts --frameworks=koa --dists=results/dist-old,../dist --rounds=2
 *   tsx http/count.ts --frameworks=fastify,hono --contenders=bare,tollgate
 *
 * What it does not count: the kernel's work (syscalls, TCP), which callgrind does not see, and
 * is about the same for every contender of a framework (one read and one write per request).
 * Per mode: `--warmup` requests uncounted (JIT, caches, the JWKS backoff ramp), then `--rounds`
 * rounds of `--requests` counted ones; the figure is the round with the fewest instructions
 * (a JWKS refetch or a major GC lands in some rounds only), the spread is printed beside it.
 * Same issuer, tokens, server files and configuration as the HTTP suite; 10 connections.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { resultsDir, settings } from '../config.ts'
import { AUDIENCE, forge, mintPool, unknownKid } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import type { HttpMode } from '../results.ts'
import { stamp } from '../results.ts'
import type { FromServer, ServerConfig, ToServer } from './protocol.ts'
import { REALISTIC_CLIENTS, realisticSchedule } from './realistic.ts'
import { newId, startChild, stopAll } from './spawn.ts'

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const list = (name: string, fallback: string) => arg(name, fallback).split(',').filter(Boolean)

const frameworks = list('frameworks', 'koa,express')
const modes = list('modes', 'repeated,realistic,pool,forged,unknown-kid') as HttpMode[]
const kinds = list('contenders', 'bare,floor,tollgate')
const dists = list('dists', '../dist').map((d) => resolve(d))
const warmup = Number(arg('warmup', '3000'))
const requests = Number(arg('requests', '2000'))
const rounds = Number(arg('rounds', '2'))
const connections = Number(arg('connections', String(settings.connections)))
const limiter = (process.env.BENCH_LIMITER as 'memory' | 'off' | undefined) ?? 'memory'
/**
 * `--cache-sim`: callgrind also simulates the caches and the branch predictor, and the figure is
 * its estimate of cycles, not instructions: what a request costs when the kernel's and the
 * framework's work between two requests leaves the caches cold, which counts of instructions miss.
 */
const cacheSim = process.argv.includes('--cache-sim')
/** Extra Node flags for the servers (`--node-args=--single-threaded`). */
const nodeArgs = list('node-args', '')
/**
 * Requests spread over every mode before any is counted: under valgrind, whose threads take
 * turns, a server's count per request takes ~10,000 requests to settle after startup.
 */
const firstWarmup = Number(arg('first-warmup', String(warmup * 4)))
/** A full collection before each counted round (`--gc`): it made V8 drop optimized code here. */
const collect = process.argv.includes('--gc')
if (collect) nodeArgs.push('--expose-gc')

/** A server's token order: the next request's bytes, continuing across warm-up and rounds. */
interface Feed {
  next(): Buffer
}

const issuer = await startIssuer()
const pool = mintPool(issuer, settings.httpPool, 'RS256', 100)

function requestBytes(token: string): Buffer {
  return Buffer.from(
    `GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nauthorization: Bearer ${token}\r\n\r\n`,
  )
}

function tokensOf(mode: HttpMode): { tokens: string[]; schedule?: number[] } {
  if (mode === 'repeated') return { tokens: [pool[0]!] }
  if (mode === 'pool') return { tokens: pool }
  if (mode === 'forged') return { tokens: forge(pool) }
  if (mode === 'forged-repeated')
    return { tokens: forge(pool).slice(0, settings.repeatedForgeries) }
  if (mode === 'unknown-kid') return { tokens: unknownKid(issuer, settings.unknownKids) }
  const { schedule, generations } = realisticSchedule(settings.realisticRequests)
  const tokens: string[] = []
  for (let c = 0; c < REALISTIC_CLIENTS; c++)
    for (let g = 0; g < generations; g++)
      tokens.push(issuer.mint({ tenant: `t${c % 100}` }, 'RS256'))
  return { tokens, schedule }
}

const prebuilt = new Map<HttpMode, { requests: Buffer[]; schedule?: number[] }>()
for (const mode of new Set<HttpMode>([...modes, 'pool'])) {
  const { tokens, schedule } = tokensOf(mode)
  prebuilt.set(mode, { requests: tokens.map(requestBytes), schedule })
}

/** Every server starts each mode at the same place in the same sequence. */
function feed(mode: HttpMode): Feed {
  const { requests: bytes, schedule } = prebuilt.get(mode)!
  let n = 0
  return {
    next: () =>
      bytes[schedule === undefined ? n++ % bytes.length : schedule[n++ % schedule.length]!]!,
  }
}

/**
 * Sends `count` requests over `connections` kept-alive connections, one in flight per connection,
 * and tallies the statuses. Responses are read by `Content-Length` (every contender sends one).
 */
function drive(port: number, source: Feed, count: number): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {}
  let sent = 0
  let done = 0
  return new Promise((resolveAll, reject) => {
    const open = Math.min(connections, count)
    for (let c = 0; c < open; c++) {
      const socket = connect(port, '127.0.0.1')
      let buffered: Buffer = Buffer.alloc(0)
      const send = () => {
        if (sent >= count) return void socket.end()
        sent++
        socket.write(source.next())
      }
      socket.on('connect', send)
      socket.on('error', reject)
      socket.on('data', (chunk: Buffer) => {
        buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
        for (;;) {
          const end = buffered.indexOf('\r\n\r\n')
          if (end < 0) return
          const head = buffered.subarray(0, end).toString('latin1')
          const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)
          if (length === null) return reject(new Error(`no Content-Length in:\n${head}`))
          const total = end + 4 + Number(length[1])
          if (buffered.length < total) return
          const status = head.slice(9, 12)
          statuses[status] = (statuses[status] ?? 0) + 1
          buffered = buffered.subarray(total)
          if (++done === count) resolveAll(statuses)
          send()
        }
      })
    }
  })
}

const serverConfig: ServerConfig = {
  authUrl: issuer.url,
  issuer: issuer.issuer,
  jwksUri: issuer.jwksUri,
  audience: AUDIENCE,
  cacheEntries: settings.tollgateCacheEntries,
  limiter,
}

const outDir = mkdtempSync(join(tmpdir(), 'tollgate-count-'))

function callgrind(pid: number, command: string[]): void {
  execFileSync('callgrind_control', [...command, String(pid)], { stdio: 'ignore' })
}

/** The instructions of the newest dump of `prefix` (each dump holds what ran since the last). */
function lastDump(prefix: string): number {
  const dumps = readdirSync(outDir)
    .filter((f) => f.startsWith(`${prefix}.`) && /\.\d+\.\d+$/.test(f))
    .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
  const text = readFileSync(join(outDir, dumps.at(-1)!), 'utf8')
  const totals = /^(?:totals|summary):\s*([\d ]+)$/m.exec(text)
  if (totals === null) throw new Error(`no totals in ${dumps.at(-1)}`)
  const counts = totals[1]!.trim().split(/\s+/).map(Number)
  if (!cacheSim) return counts[0]!
  // Callgrind's own estimate of cycles from its simulated caches and branch predictor:
  // Ir + 10 × (L1 misses + mispredicted branches) + 100 × last-level misses.
  const events = (/^events:\s*(.+)$/m.exec(text)?.[1] ?? '').trim().split(/\s+/)
  const at = (name: string) => counts[events.indexOf(name)] ?? 0
  return (
    at('Ir') +
    10 * (at('I1mr') + at('D1mr') + at('D1mw') + at('Bcm') + at('Bim')) +
    100 * (at('ILmr') + at('DLmr') + at('DLmw'))
  )
}

interface Row {
  framework: string
  contender: string
  mode: HttpMode
  /** Instructions per request of each counted round. */
  rounds: number[]
  /**
   * JWKS fetches during each round (the unknown-kid mode refetches once per cooldown): a round
   * with one carries a whole fetch on a few hundred requests, which a server at full speed
   * spreads over ~300,000, so rounds without are preferred.
   */
  fetches: number[]
  statuses: Record<string, number>
}
const rows: Row[] = []

async function measure(framework: string, kind: string, dist: string | undefined) {
  const label = kind === 'tollgate' && dists.length > 1 ? `tollgate@${basename(dist!)}` : kind
  const prefix = `${framework}-${label.replace(/[^\w.-]/g, '_')}`
  const env: Record<string, string> = { BENCH_SERVER: JSON.stringify(serverConfig) }
  if (dist) env.BENCH_DIST = dist
  const { child, ready } = await startChild<ToServer, FromServer>({
    file: `./servers/${framework}-${kind}.ts`,
    cpu: undefined,
    env,
    nodeArgs,
    wrapper: [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      ...(cacheSim ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
      `--callgrind-out-file=${join(outDir, `${prefix}.%p`)}`,
      `--log-file=${join(outDir, `${prefix}.%p.log`)}`,
    ],
    readyTimeoutMs: 600_000,
  })
  if (ready.type !== 'ready') throw new Error(`${prefix}: bad ready`)
  const pid = child.process.pid!
  // The bare framework needs no token: its pool run is every mode's baseline, as in the suite.
  const own = kind === 'bare' ? modes.filter((m) => m === 'repeated' || m === 'pool') : modes
  if (kind === 'bare' && !own.includes('pool')) own.push('pool')
  // Every mode once before any is counted: the server's own settling (optimized code, the memory
  // reducer's collections after startup) then lands in no mode's figure.
  for (const mode of own) await drive(ready.port, feed(mode), Math.ceil(firstWarmup / own.length))
  for (const mode of own) {
    const source = feed(mode)
    await drive(ready.port, source, warmup)
    const row: Row = { framework, contender: label, mode, rounds: [], fetches: [], statuses: {} }
    for (let r = 0; r < rounds; r++) {
      if (collect) await child.request({ id: newId(), type: 'gc' }, 600_000)
      callgrind(pid, ['-z'])
      callgrind(pid, ['-i', 'on'])
      const fetched = issuer.fetchCount()
      const statuses = await drive(ready.port, source, requests)
      callgrind(pid, ['-d'])
      callgrind(pid, ['-i', 'off'])
      row.rounds.push(lastDump(prefix) / requests)
      row.fetches.push(issuer.fetchCount() - fetched)
      for (const [s, n] of Object.entries(statuses)) row.statuses[s] = (row.statuses[s] ?? 0) + n
    }
    rows.push(row)
    console.log(
      `${framework} ${mode} ${label}: ${fmt(best(row))} ${cacheSim ? 'est. cycles' : 'instr'}/req [${roundsOf(row)}] ${JSON.stringify(row.statuses)}`,
    )
  }
  await child.stop()
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
/** The round with the fewest instructions among those without a JWKS fetch, if any. */
function best(row: Row): number {
  const quiet = row.rounds.filter((_, r) => row.fetches[r] === 0)
  return Math.min(...(quiet.length > 0 ? quiet : row.rounds))
}
const roundsOf = (row: Row) =>
  row.rounds
    .map((n, r) => `${fmt(n)}${row.fetches[r] ? ` (${row.fetches[r]} JWKS fetch)` : ''}`)
    .join(', ')

try {
  for (const framework of frameworks) {
    for (const kind of kinds) {
      if (kind === 'tollgate') for (const dist of dists) await measure(framework, kind, dist)
      else await measure(framework, kind, undefined)
    }
  }
} finally {
  await stopAll()
  await issuer.close()
}

// Added instructions over the bare framework (its pool run for every mode but repeated), and each
// tollgate build over the floor.
const lines: string[] = []
for (const framework of frameworks) {
  lines.push(
    '',
    `**${framework}**: instructions per request (${requests.toLocaleString('en-US')} counted per round, best of ${rounds}; ${warmup.toLocaleString('en-US')} warm-up)`,
    '',
    '| Mode | Contender | instr/req | added over bare | × floor (added) | rounds | statuses |',
    '|---|---|---|---|---|---|---|',
  )
  const of = (contender: string, mode: HttpMode) =>
    rows.find((r) => r.framework === framework && r.contender === contender && r.mode === mode)
  for (const mode of modes) {
    const bare = of('bare', mode === 'repeated' ? 'repeated' : 'pool')
    const floor = of('floor', mode)
    for (const row of rows.filter((r) => r.framework === framework && r.mode === mode)) {
      const added =
        bare === undefined || row.contender === 'bare' ? undefined : best(row) - best(bare)
      const floorAdded = floor && bare ? best(floor) - best(bare) : undefined
      const ratio =
        added !== undefined && floorAdded !== undefined && row.contender.startsWith('tollgate')
          ? (added / floorAdded).toFixed(2)
          : ''
      lines.push(
        `| ${mode} | ${row.contender} | ${fmt(best(row))} | ${added === undefined ? '' : fmt(added)} | ${ratio} | ${roundsOf(row)} | ${Object.entries(
          row.statuses,
        )
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')} |`,
      )
    }
  }
}
console.log(lines.join('\n'))
mkdirSync(resultsDir, { recursive: true })
const file = join(resultsDir, `count-${stamp(new Date().toISOString())}.json`)
writeFileSync(
  file,
  JSON.stringify({ warmup, requests, rounds, connections, limiter, dists, rows }, null, 2),
)
console.log(`\n${file}`)
// `--keep-dumps`: leave callgrind's files for callgrind_annotate.
if (process.argv.includes('--keep-dumps')) console.log(`callgrind dumps kept in ${outDir}`)
else rmSync(outDir, { recursive: true, force: true })
process.exit(0)
