/**
 * Thin wrapper over mitata's `measure()`, so each suite controls its own contenders, time budget
 * and table (fast-jwt's format: one table per case, every contender in the same process).
 */
import { measure } from 'mitata'
import { settings } from '../config.ts'
import { cpuMicros, timeRound } from '../cpu-time.ts'
import type { MicroRow } from '../results.ts'

/** Calls per turn of a paired case (`measurePaired`). */
const SLICE = 64

export type Contender = readonly [name: string, fn: () => unknown]

/**
 * Measures every contender in `settings.microRounds` short rounds, the order rotated each round,
 * and keeps each contender's best round: noise from other processes only ever adds time, so the
 * fastest round is the closest to the code's own cost, and interleaving spreads what is left over
 * all contenders alike. Each function runs once first, so a broken contender fails loudly instead
 * of being timed.
 */
export async function measureCase(
  caseName: string,
  contenders: readonly Contender[],
  baseline?: string,
): Promise<MicroRow[]> {
  for (const [, fn] of contenders) await fn()
  const best = new Map<string, MicroRow>()
  const rounds = settings.microRounds
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < contenders.length; i++) {
      const [name, fn] = contenders[(i + round) % contenders.length]!
      const stats = await measure(fn, { min_cpu_time: settings.microCpuTimeNs / rounds })
      const previous = best.get(name)
      if (!previous || stats.avg < previous.nsPerOp) {
        best.set(name, {
          case: caseName,
          contender: name,
          nsPerOp: stats.avg,
          p50: stats.p50,
          p99: stats.p99,
        })
      }
    }
  }
  const rows = contenders.map(([name]) => best.get(name)!)
  const base = rows.find((row) => row.contender === baseline)
  if (base) for (const row of rows) row.vsCrypto = base.nsPerOp / row.nsPerOp
  printCase(caseName, rows)
  return rows
}

export const formatNs = (ns: number): string =>
  ns >= 1e6
    ? `${(ns / 1e6).toFixed(2)} ms`
    : ns >= 1e3
      ? `${(ns / 1e3).toFixed(2)} µs`
      : `${ns.toFixed(0)} ns`

export function printCase(caseName: string, rows: readonly MicroRow[]): void {
  const width = Math.max(...rows.map((row) => row.contender.length))
  console.log(`\n${caseName}`)
  for (const row of rows) {
    const ratio = row.vsCrypto === undefined ? '' : `  ${row.vsCrypto.toFixed(2)}× node:crypto`
    console.log(
      `  ${row.contender.padEnd(width)}  ${formatNs(row.nsPerOp).padStart(10)}/op  p99 ${formatNs(row.p99).padStart(10)}${ratio}`,
    )
  }
}

/** One contender of a paired case: median ns per call, and its difference to the reference. */
export interface PairedRow {
  contender: string
  /** Median over rounds of this contender's CPU ns per call. */
  nsPerOp: number
  /** Median over rounds of (this contender − the reference) within the round, with its quartiles. */
  vsReference: { median: number; q1: number; q3: number }
}

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/**
 * Measures contenders for comparison with one of them, the reference, in many short rounds of
 * this thread's CPU time (`cpu-time.ts`), the order rotated each round; each contender's figure is
 * the median over rounds of its difference to the reference in the same round. Two contenders
 * timed moments apart share the machine's state (frequency, caches, other processes' load), so
 * the difference cancels what moves both, where a best round of each (as `measureCase` keeps)
 * compares two lucky moments. It cannot cancel what differs between processes (where code and data
 * landed in memory): `ab.ts` averages over processes for that.
 */
export async function measurePaired(
  caseName: string,
  contenders: readonly Contender[],
  reference: string,
  { rounds = 21, roundMs = 150 }: { rounds?: number; roundMs?: number } = {},
): Promise<PairedRow[]> {
  if (!contenders.some(([name]) => name === reference)) {
    throw new Error(`measurePaired: the reference ${reference} is not a contender`)
  }
  const perRound = new Map<string, number[]>(contenders.map(([name]) => [name, []]))
  for (const [, fn] of contenders) await timeRound(fn, roundMs / 2) // warm-up, and fails loudly
  for (let round = 0; round < rounds; round++) {
    const spent = contenders.map(() => 0)
    const made = contenders.map(() => 0)
    // Contenders take turns in slices of SLICE calls, the order rotated each turn, until each has
    // had its share of the round: a machine whose speed drifts from one moment to the next
    // (a shared host's neighbours) drifts under all of them alike.
    for (let turn = 0; spent.some((us) => us < roundMs * 1000); turn++) {
      for (let k = 0; k < contenders.length; k++) {
        const index = (k + turn) % contenders.length
        const fn = contenders[index]![1]
        const started = cpuMicros()
        for (let c = 0; c < SLICE; c++) await fn()
        spent[index]! += cpuMicros() - started
        made[index]! += SLICE
      }
    }
    contenders.forEach(([name], index) => {
      perRound.get(name)!.push((spent[index]! * 1000) / made[index]!)
    })
  }
  const base = perRound.get(reference)!
  const rows = contenders.map(([name]): PairedRow => {
    const own = perRound.get(name)!
    const diff = own.map((ns, r) => ns - base[r]!)
    return {
      contender: name,
      nsPerOp: quantile(own, 0.5),
      vsReference: {
        median: quantile(diff, 0.5),
        q1: quantile(diff, 0.25),
        q3: quantile(diff, 0.75),
      },
    }
  })
  printPaired(caseName, reference, rows, rounds, roundMs)
  return rows
}

const signed = (ns: number) => (ns >= 0 ? '+' : '−') + formatNs(Math.abs(ns))

function printPaired(
  caseName: string,
  reference: string,
  rows: readonly PairedRow[],
  rounds: number,
  roundMs: number,
): void {
  const width = Math.max(...rows.map((row) => row.contender.length))
  console.log(`\n${caseName} (${rounds} rounds of ${roundMs} ms CPU, medians; vs ${reference})`)
  for (const row of rows) {
    const { median, q1, q3 } = row.vsReference
    const diff =
      row.contender === reference
        ? ''
        : `  ${signed(median).padStart(10)}  (quartiles ${signed(q1)} … ${signed(q3)})`
    console.log(`  ${row.contender.padEnd(width)}  ${formatNs(row.nsPerOp).padStart(10)}/op${diff}`)
  }
}
