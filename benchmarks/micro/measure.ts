/**
 * Thin wrapper over mitata's `measure()`, so each suite controls its own contenders, time budget
 * and table (fast-jwt's format: one table per case, every contender in the same process).
 */
import { measure } from 'mitata'
import { settings } from '../config.ts'
import type { MicroRow } from '../results.ts'

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
