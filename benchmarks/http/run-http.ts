/**
 * The HTTP suite: each contender's server in its own process pinned to CPU 0, autocannon in
 * another pinned to CPU 1, the issuer (JWKS) in this process. One framework at a time, all its
 * servers up and sanity-checked first; then per token mode a discarded warm-up per contender and
 * measured rounds with the contenders interleaved, server CPU time and JWKS fetches counted
 * around each measured window. Ratios divide by the bare framework of the same rounds.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isMain, settings } from '../config.ts'
import { AUDIENCE, type BenchIssuer, forge, mintPool, unknownKid } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { rawVerifier } from '../micro/crypto-limit.ts'
import { connectRedis } from '../redis.ts'
import {
  busyShare,
  FRAMEWORKS,
  type Framework,
  HTTP_MODES,
  type HttpMode,
  type HttpRow,
  newResult,
  type SuiteResult,
  taskset,
  writeResult,
} from '../results.ts'
import { hasRateLimit, isBuilt } from '../tollgate.ts'
import { contenders, type HttpContender } from './contenders.ts'
import type {
  FromLoad,
  FromServer,
  LoadJob,
  LoadOutcome,
  ServerConfig,
  ToServer,
} from './protocol.ts'
import { REALISTIC_CLIENTS, realisticSchedule } from './realistic.ts'
import { sanityCheck } from './sanity.ts'
import { type Child, newId, startChild, stopAll } from './spawn.ts'

type Server = Child<ToServer, FromServer>
type Load = Child<LoadJob, FromLoad>

const MODES: readonly HttpMode[] = HTTP_MODES
/** Server CPU ÷ wall time under which a round is taken as disturbed by another process. */
const BUSY_ENOUGH = 0.9

interface TokenFiles {
  dir: string
  files: Record<HttpMode, string>
  valid: string
  forged: string
  pool: readonly string[]
}

interface Running {
  contender: HttpContender
  server: Server
  port: number
}

/**
 * `BENCH_HTTP_CONTENDERS` narrows a run to some contenders; the bare baseline of a framework with
 * a chosen contender always runs, and a framework with none is left out. A part starting with `=`
 * is an exact name (`=koa + tollgate` leaves `… (Redis limiter)` out).
 */
const chosen = (contender: HttpContender) =>
  contender.bare === true ||
  settings.httpContenders.length === 0 ||
  settings.httpContenders.some((part) =>
    part.startsWith('=') ? contender.name === part.slice(1) : contender.name.includes(part),
  )

/** What one contender accumulates over the rounds of one mode. */
interface Tally {
  rounds: number
  requests: number
  /** The round with the most req/s: neighbours' noise only ever slows a round down. */
  best?: { rps: number; p50: number; p99: number; busy: number }
  /** The lowest server CPU per request of any round, µs. */
  cpuPerRequest: number
  non2xx: number
  errors: number
  statuses: Record<string, number>
  fetchesWarmup: number
  fetchesMeasured: number
  firstStart: number
  lastEnd: number
}

/** The realistic mode's tokens (client `c`, generation `g` at `c × generations + g`) and order. */
function realisticTokens(issuer: BenchIssuer): { tokens: string[]; schedule: number[] } {
  const { schedule, generations, renewalRate } = realisticSchedule(settings.realisticRequests)
  realisticRenewalRate = renewalRate
  const tokens: string[] = []
  for (let client = 0; client < REALISTIC_CLIENTS; client++) {
    for (let g = 0; g < generations; g++) {
      tokens.push(issuer.mint({ tenant: `t${client % 100}` }, 'RS256'))
    }
  }
  return { tokens, schedule }
}
let realisticRenewalRate = 0

function writeTokens(issuer: BenchIssuer): TokenFiles {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'))
  const pool = mintPool(issuer, settings.httpPool, 'RS256', 100)
  const forged = forge(pool)
  const sets: Record<HttpMode, unknown> = {
    repeated: [pool[0]!],
    realistic: realisticTokens(issuer),
    pool,
    forged,
    'forged-repeated': forged.slice(0, settings.repeatedForgeries),
    'unknown-kid': unknownKid(issuer, settings.unknownKids),
  }
  const files = {} as Record<HttpMode, string>
  for (const mode of MODES) {
    files[mode] = join(dir, `${mode}.json`)
    writeFileSync(files[mode], JSON.stringify(sets[mode]))
  }
  return { dir, files, valid: pool[1]!, forged: forged[1]!, pool }
}

async function cpuMicros(server: Server): Promise<number> {
  const reply = await server.request({ id: newId(), type: 'cpu' }, 10_000)
  if (reply.type !== 'cpu') throw new Error(`unexpected reply ${reply.type}`)
  return reply.user + reply.system
}

async function load(
  generator: Load,
  port: number,
  mode: HttpMode,
  seconds: number,
  tokens: TokenFiles,
): Promise<LoadOutcome> {
  const job: LoadJob = {
    id: newId(),
    type: 'run',
    url: `http://127.0.0.1:${port}/hello`,
    seconds,
    connections: settings.connections,
    mode,
    tokensFile: tokens.files[mode],
  }
  const reply = await generator.request(job, (seconds + 60) * 1000)
  if (reply.type === 'failed') throw new Error(`load generator failed: ${reply.message}`)
  if (reply.type !== 'done') throw new Error(`unexpected reply ${reply.type}`)
  return reply.outcome
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

function printRow(row: HttpRow): void {
  const ratio =
    row.vsBare === undefined
      ? ''
      : `  ${row.vsBare.toFixed(2)}× bare (cpu ${row.vsBareCpu?.toFixed(2)}×)`
  const fetches = row.jwksFetches
    ? `  JWKS fetches ${row.jwksFetches.warmup}+${row.jwksFetches.measured}`
    : ''
  const codes = Object.entries(row.statuses)
    .map(([code, count]) => `${code}:${count}`)
    .join(' ')
  console.log(
    `  ${row.mode.padEnd(11)} ${row.contender.padEnd(38)} ${fmt(row.rps).padStart(7)} req/s  p50 ${row.p50.toFixed(1)} ms  p99 ${row.p99.toFixed(1)} ms  ` +
      `cpu ${fmt(row.cpuUsPerReq, 1)} µs/req${ratio}${fetches}  [${codes}]${row.errors ? `  errors ${row.errors}` : ''}`,
  )
}

/**
 * CPU µs of node:crypto's raw check (crypto-limit.ts) of one pool token, in this process: the
 * lowest of a few 200 ms rounds of CPU time (not wall time), so a neighbour taking the CPU
 * between samples does not count.
 */
function rawVerifyMicros(issuer: BenchIssuer, pool: readonly string[]): number {
  const verify = rawVerifier('RS256', issuer.keys.RS256.publicKey)
  let best = Number.POSITIVE_INFINITY
  let i = 0
  for (let round = 0; round < 5; round++) {
    const start = process.cpuUsage()
    const wall = Date.now()
    let n = 0
    while (Date.now() - wall < 200) {
      verify(pool[i++ % pool.length]!)
      n++
    }
    const spent = process.cpuUsage(start)
    best = Math.min(best, (spent.user + spent.system) / n)
  }
  return best
}

function unavailable(
  contender: HttpContender,
  redisProblem: string | undefined,
): string | undefined {
  if (!contender.tollgate) return undefined
  if (!isBuilt()) return 'dist/ is not built'
  if (contender.tollgate === 'redis') {
    if (!hasRateLimit()) return 'dist/src/limits/rate-limit.js is not built'
    if (redisProblem) return redisProblem
  }
  return undefined
}

/**
 * Warm-up, then `settings.rounds` measured windows per contender, in ABBA order, and up to
 * `settings.extraRounds` more for a contender whose best round left its server idle. A
 * contender's req/s and latency are those of its best round, its CPU per request the lowest of
 * its rounds: on a shared machine other processes only ever make a round slower.
 */
async function runMode(
  mode: HttpMode,
  group: Running[],
  generator: Load,
  tokens: TokenFiles,
  issuer: BenchIssuer,
): Promise<HttpRow[]> {
  const tallies = new Map<Running, Tally>()
  for (const running of group) {
    const start = Date.now()
    const before = issuer.fetchCount()
    await load(generator, running.port, mode, settings.warmupSeconds, tokens)
    tallies.set(running, {
      rounds: 0,
      requests: 0,
      cpuPerRequest: Number.POSITIVE_INFINITY,
      non2xx: 0,
      errors: 0,
      statuses: {},
      fetchesWarmup: issuer.fetchCount() - before,
      fetchesMeasured: 0,
      firstStart: start,
      lastEnd: Date.now(),
    })
  }
  const seconds = settings.measureSeconds / settings.rounds
  const measureRound = async (running: Running) => {
    const tally = tallies.get(running)!
    const fetches = issuer.fetchCount()
    const cpu = await cpuMicros(running.server)
    const outcome = await load(generator, running.port, mode, seconds, tokens)
    const cpuSpent = (await cpuMicros(running.server)) - cpu
    tally.rounds++
    // One line per round, so the spread of rounds can be read from the log (the row keeps the best).
    console.log(
      `    round ${running.contender.name} ${mode}: ${Math.round(outcome.rps)} req/s, ${outcome.requests > 0 ? (cpuSpent / outcome.requests).toFixed(1) : '-'} µs CPU/req`,
    )
    tally.fetchesMeasured += issuer.fetchCount() - fetches
    tally.lastEnd = Date.now()
    tally.requests += outcome.requests
    if (outcome.requests > 0) {
      tally.cpuPerRequest = Math.min(tally.cpuPerRequest, cpuSpent / outcome.requests)
    }
    if (!tally.best || outcome.rps > tally.best.rps) {
      const busy = cpuSpent / (outcome.seconds * 1e6)
      tally.best = { rps: outcome.rps, p50: outcome.p50, p99: outcome.p99, busy }
    }
    tally.non2xx += outcome.non2xx
    tally.errors += outcome.errors + outcome.timeouts
    for (const [code, count] of Object.entries(outcome.statuses)) {
      tally.statuses[code] = (tally.statuses[code] ?? 0) + count
    }
  }
  for (let round = 0; round < settings.rounds; round++) {
    for (const running of round % 2 === 0 ? group : [...group].reverse())
      await measureRound(running)
  }
  // A best round in which the server idled was disturbed (a neighbour took a CPU): a few more.
  for (let extra = 0; extra < settings.extraRounds; extra++) {
    const disturbed = group.filter(
      (running) => (tallies.get(running)!.best?.busy ?? 0) < BUSY_ENOUGH,
    )
    if (disturbed.length === 0) break
    for (const running of disturbed) await measureRound(running)
  }
  const rows = group.map(({ contender }, i) => {
    const tally = tallies.get(group[i]!)!
    const row: HttpRow = {
      contender: contender.name,
      framework: contender.framework,
      mode,
      rps: tally.best?.rps ?? 0,
      p50: tally.best?.p50 ?? 0,
      p99: tally.best?.p99 ?? 0,
      serverBusy: tally.best?.busy ?? 0,
      rounds: tally.rounds,
      cpuUsPerReq: Number.isFinite(tally.cpuPerRequest) ? tally.cpuPerRequest : 0,
      requests: tally.requests,
      non2xx: tally.non2xx,
      errors: tally.errors,
      statuses: tally.statuses,
    }
    if (!contender.bare) {
      row.jwksFetches = {
        warmup: tally.fetchesWarmup,
        measured: tally.fetchesMeasured,
        spanSeconds: (tally.lastEnd - tally.firstStart) / 1000,
      }
    }
    return row
  })
  return rows
}

/** The bare framework ignores tokens: its `pool` run (same request rotation) is the baseline for every mode but `repeated`. */
function addRatios(rows: HttpRow[]): void {
  for (const row of rows) {
    const bare = rows.find(
      (r) =>
        r.framework === row.framework &&
        r.contender.endsWith('(bare)') &&
        r.mode === (row.mode === 'repeated' ? 'repeated' : 'pool'),
    )
    if (!bare || bare === row) continue
    row.vsBare = row.rps / bare.rps
    row.vsBareCpu = row.cpuUsPerReq > 0 ? bare.cpuUsPerReq / row.cpuUsPerReq : undefined
    row.addedCpuUs = row.cpuUsPerReq - bare.cpuUsPerReq
  }
}

export async function runSuite(): Promise<SuiteResult<HttpRow>> {
  const result = newResult<HttpRow>('http')
  const pinned = taskset()
  if (!pinned)
    result.notes.push(
      'taskset unavailable or fewer than 2 CPUs: server and load generator are not pinned',
    )
  const issuer = await startIssuer()
  let tokens: TokenFiles | undefined
  try {
    console.log(`\nHTTP (${settings.mode}): minting ${fmt(settings.httpPool)} RS256 tokens…`)
    tokens = writeTokens(issuer)
    const redis = await connectRedis()
    const redisProblem = 'error' in redis ? redis.error : undefined
    if ('client' in redis) redis.client.disconnect()
    const busy = await busyShare()
    if (busy !== undefined && busy > 0.1) {
      result.notes.push(
        `other processes used ${(busy * 100).toFixed(0)}% of the CPU when the suite started`,
      )
    }

    const { child: generator } = await startChild<LoadJob, FromLoad>({
      file: './load.ts',
      cpu: pinned ? 1 : undefined,
    })
    const serverConfig: ServerConfig = {
      authUrl: issuer.url,
      issuer: issuer.issuer,
      jwksUri: issuer.jwksUri,
      audience: AUDIENCE,
      cacheEntries: settings.tollgateCacheEntries,
      limiter: 'off',
    }

    for (const framework of Object.keys(FRAMEWORKS) as Framework[]) {
      const mine = contenders.filter((c) => c.framework === framework && chosen(c))
      if (settings.httpContenders.length > 0 && mine.every((c) => c.bare)) continue
      const group: Running[] = []
      try {
        for (const contender of mine) {
          const why = unavailable(contender, redisProblem)
          if (why) {
            result.skipped.push({ what: contender.name, why })
            console.log(`  ${contender.name} skipped: ${why}`)
            continue
          }
          const config = { ...serverConfig, limiter: contender.tollgate ?? 'off' }
          const { child: server, ready } = await startChild<ToServer, FromServer>({
            file: contender.file,
            cpu: pinned ? 0 : undefined,
            env: { BENCH_SERVER: JSON.stringify(config) },
          })
          if (ready.type !== 'ready') throw new Error(`${contender.name}: bad ready message`)
          group.push({ contender, server, port: ready.port })
          await sanityCheck(contender.name, ready.port, tokens, contender.bare)
        }
        for (const mode of MODES) {
          if (settings.httpModes.length > 0 && !settings.httpModes.includes(mode)) continue
          const participants = group.filter((g) => g.contender.modes.includes(mode))
          if (participants.length === 0) continue
          const rawVerifyUs = rawVerifyMicros(issuer, tokens.pool)
          const rows = await runMode(mode, participants, generator, tokens, issuer)
          for (const row of rows) row.rawVerifyUs = rawVerifyUs
          result.rows.push(...rows)
          addRatios(result.rows)
          for (const row of rows) printRow(row)
        }
      } finally {
        for (const running of group) await running.server.stop()
      }
    }
    await generator.stop()
    result.notes.push(
      `${settings.connections} connections; per case ${settings.warmupSeconds} s warm-up discarded, then ${settings.measureSeconds} s measured in ${settings.rounds} interleaved rounds (ABBA); req/s and latency from each contender's best round, CPU per request its lowest; up to ${settings.extraRounds} extra rounds when the best round left the server under ${BUSY_ENOUGH * 100}% busy`,
      `pool: ${fmt(settings.httpPool)} distinct RS256 tokens over 100 tenants, rotated per request; tollgate's verified-token cache holds ${fmt(settings.tollgateCacheEntries)} entries`,
      `realistic: ${fmt(REALISTIC_CLIENTS)} clients picked at random per request, each reusing its RS256 token for 50–150 requests before renewing it (${(realisticRenewalRate * 100).toFixed(1)}% of requests bring a new token); each server continues the same seeded schedule from round to round; baseline: the bare framework's pool run`,
      `forged: the pool with each signature swapped for the next token's (known kid, never valid); forged-repeated: the first ${fmt(settings.repeatedForgeries)} of those, rotated (a forger retrying the same tokens); unknown-kid: ${fmt(settings.unknownKids)} distinct unknown kids`,
      `issuer (JWKS, discovery): ${issuer.kind}; express-jwt hands jwks-rsa's SigningKeyNotFoundError (no status) to the error handler, hence its 500s on unknown kids`,
      'server busy = server CPU time ÷ wall time in the best round: near 100% the server was the bottleneck, as intended; well below, the load generator or a neighbour process was',
      '× bare (cpu) = bare server CPU µs/req ÷ contender server CPU µs/req: the same ratio measured by cost, steadier than req/s on a noisy machine',
    )
  } finally {
    await stopAll()
    await issuer.close()
    if (tokens) rmSync(tokens.dir, { recursive: true, force: true })
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
