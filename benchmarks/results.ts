/**
 * Result shapes shared by the suites, the machine description recorded with every result, and the
 * writer for `results/<suite>-<timestamp>.json`.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { resultsDir, settings } from './config.ts'

/** The HTTP suite's frameworks, in table order, and each one's table title. */
export const FRAMEWORKS = {
  express: 'Express 5',
  koa: 'Koa 3',
  fastify: 'Fastify 5',
  hono: 'Hono 4 (@hono/node-server)',
} as const
export type Framework = keyof typeof FRAMEWORKS

export interface MicroRow {
  /** Table the row belongs to, e.g. `verify RS256`. */
  case: string
  contender: string
  nsPerOp: number
  p50: number
  p99: number
  /** node:crypto's ns/op divided by this row's: 1 means "as fast as the raw signature check". */
  vsCrypto?: number
  note?: string
}

export interface HttpRow {
  contender: string
  framework: Framework
  mode: HttpMode
  rps: number
  p50: number
  p99: number
  /** Server CPU (user + system) per request, µs. */
  cpuUsPerReq: number
  /** Server CPU time ÷ wall time in the best round: near 1, the server was the bottleneck. */
  serverBusy: number
  /** Measured rounds run (extra ones when the best round looked disturbed). */
  rounds: number
  requests: number
  non2xx: number
  errors: number
  /** Responses by status code. */
  statuses: Record<string, number>
  /** req/s divided by the bare framework's in the same run and mode. */
  vsBare?: number
  /** The bare framework's server CPU per request divided by this one's: the same ratio, measured by cost. */
  vsBareCpu?: number
  /** Server CPU µs per request over the bare framework's (same baseline as `vsBare`). */
  addedCpuUs?: number
  /**
   * node:crypto's raw RS256 check of one pool token, CPU µs, measured by the orchestrator just
   * before this mode's rounds (issue 14: the miss targets are multiples of it).
   */
  rawVerifyUs?: number
  /** JWKS fetches served while the case ran (warm-up, measured), and the seconds that spanned. */
  jwksFetches?: { warmup: number; measured: number; spanSeconds: number }
}

/** Every HTTP mode, in the order the suite runs and reports them. */
export const HTTP_MODES = [
  'repeated',
  'realistic',
  'pool',
  'forged',
  'forged-repeated',
  'unknown-kid',
] as const
export type HttpMode = (typeof HTTP_MODES)[number]

export interface MemoryRow {
  stage: string
  tokens: number
  rssMb: number
  heapUsedMb: number
}

export interface Skipped {
  what: string
  why: string
}

export interface SuiteResult<Row = unknown> {
  suite: string
  mode: string
  startedAt: string
  machine: Machine
  rows: Row[]
  skipped: Skipped[]
  notes: string[]
}

export interface Machine {
  cpu: string
  cores: number
  memoryGb: number
  node: string
  platform: string
  pinned: boolean
}

export function taskset(): boolean {
  if (process.platform !== 'linux') return false
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' })
    return os.availableParallelism() >= 2
  } catch {
    return false
  }
}

export function machine(): Machine {
  return {
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
    pinned: taskset(),
  }
}

export function newResult<Row>(suite: string): SuiteResult<Row> {
  return {
    suite,
    mode: settings.mode,
    startedAt: new Date().toISOString(),
    machine: machine(),
    rows: [],
    skipped: [],
    notes: [],
  }
}

export const stamp = (iso: string): string => iso.replace(/[:.]/g, '-')

export function writeResult(result: SuiteResult): string {
  mkdirSync(resultsDir, { recursive: true })
  const file = join(resultsDir, `${result.suite}-${stamp(result.startedAt)}.json`)
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
  return file
}

/**
 * Share of the machine's CPU time used by other processes over `ms` (Linux, from /proc/stat), to
 * flag runs made on a busy machine. Call it while this run is idle.
 */
export async function busyShare(ms = 1000): Promise<number | undefined> {
  if (process.platform !== 'linux') return undefined
  const { readFileSync } = await import('node:fs')
  const read = () => {
    const fields = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number)
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
    return { idle, total: fields.reduce((sum, value) => sum + value, 0) }
  }
  const before = read()
  const self0 = process.cpuUsage()
  await new Promise((resolve) => setTimeout(resolve, ms))
  const self = process.cpuUsage(self0)
  const after = read()
  const total = after.total - before.total
  if (total <= 0) return undefined
  const ticksPerMicro = total / (ms * 1000 * os.availableParallelism())
  const busy = total - (after.idle - before.idle) - (self.user + self.system) * ticksPerMicro
  return Math.max(0, busy / total)
}
