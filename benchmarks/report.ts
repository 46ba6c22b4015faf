/**
 * Turns one run's suite results into the Markdown report (`results/latest.md`, the README table):
 * targets with pass/miss first, then one table per case, every contender of a case side by side.
 */
import {
  FRAMEWORKS,
  type Framework,
  HTTP_MODES,
  type HttpRow,
  type Machine,
  type MemoryRow,
  type MicroRow,
  type SuiteResult,
} from './results.ts'
import { evaluateIssue14Targets, evaluateTargets, type Suites } from './targets.ts'

/** A Markdown table with padded columns, as Biome formats them (README.md is format-checked). */
function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(3, h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')
}

const int = (n: number) => Math.round(n).toLocaleString('en-US')
const verdict = (pass: boolean | undefined) =>
  pass === undefined ? '—' : pass ? 'pass' : '**miss**'

function machineLine(
  machine: Machine,
  mode: string,
  startedAt: string,
  busy: number | undefined,
): string {
  const load =
    busy === undefined
      ? ''
      : `; other processes used ${(busy * 100).toFixed(0)}% of the CPU just before the run`
  return (
    `${mode} run, ${startedAt}: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB, Node ${machine.node}, ` +
    `${machine.platform}; ${machine.pinned ? 'server pinned to CPU 0, load generator to CPU 1' : 'not pinned'}${load}`
  )
}

function microTables(suite: SuiteResult<MicroRow> | undefined): string[] {
  if (!suite) return []
  const out: string[] = []
  for (const name of [...new Set(suite.rows.map((r) => r.case))]) {
    const rows = suite.rows.filter((r) => r.case === name)
    out.push(
      `**${name}**\n\n${table(
        ['Contender', 'ns/op', 'p99 ns', '× node:crypto', 'Note'],
        rows.map((r) => [
          r.contender,
          int(r.nsPerOp),
          int(r.p99),
          r.vsCrypto === undefined ? '' : r.vsCrypto.toFixed(2),
          r.note ?? '',
        ]),
      )}`,
    )
  }
  return out
}

function httpTables(suite: SuiteResult<HttpRow> | undefined): string[] {
  if (!suite) return []
  const out: string[] = []
  for (const framework of Object.keys(FRAMEWORKS) as Framework[]) {
    const rows = suite.rows.filter((r) => r.framework === framework)
    if (rows.length === 0) continue
    const ordered = HTTP_MODES.flatMap((mode) => rows.filter((r) => r.mode === mode))
    out.push(
      `**HTTP, ${FRAMEWORKS[framework]}**\n\n${table(
        [
          'Mode',
          'Contender',
          'req/s',
          '× bare',
          '× bare (cpu)',
          'p50 ms',
          'p99 ms',
          'server CPU µs/req',
          'added µs/req',
          'raw verify µs',
          'server busy',
          'JWKS fetches (warm-up+measured)',
          'Statuses',
        ],
        ordered.map((r) => [
          r.mode,
          r.contender,
          int(r.rps),
          r.vsBare === undefined ? '' : r.vsBare.toFixed(2),
          r.vsBareCpu === undefined ? '' : r.vsBareCpu.toFixed(2),
          r.p50.toFixed(1),
          r.p99.toFixed(1),
          r.cpuUsPerReq.toFixed(1),
          r.addedCpuUs === undefined ? '' : r.addedCpuUs.toFixed(1),
          r.rawVerifyUs === undefined ? '' : r.rawVerifyUs.toFixed(1),
          `${Math.round(r.serverBusy * 100)}%`,
          r.jwksFetches ? `${r.jwksFetches.warmup}+${r.jwksFetches.measured}` : '',
          Object.entries(r.statuses)
            .map(([code, count]) => `${code}×${int(count)}`)
            .join(' ') + (r.errors ? ` errors×${r.errors}` : ''),
        ]),
      )}`,
    )
  }
  return out
}

function memoryTable(suite: SuiteResult<MemoryRow> | undefined): string[] {
  if (!suite || suite.rows.length === 0) return []
  return [
    `**Memory (gate.check, cache + memory limiter)**\n\n${table(
      ['Stage', 'Tokens', 'Heap MB', 'RSS MB'],
      suite.rows.map((r) => [r.stage, int(r.tokens), r.heapUsedMb.toFixed(1), r.rssMb.toFixed(1)]),
    )}`,
  ]
}

export function renderReport(suites: Suites, busy?: number): string {
  const all = Object.values(suites).filter((s): s is SuiteResult => s !== undefined)
  const first = all[0]
  const parts: string[] = []
  if (first) parts.push(machineLine(first.machine, first.mode, first.startedAt, busy))
  const targets = evaluateTargets(suites)
  parts.push(
    `**Targets (issue 14)**\n\n${table(
      ['Target', 'Goal', 'Measured', 'Result'],
      evaluateIssue14Targets(suites).map((t) => [t.label, t.goal, t.measured, verdict(t.pass)]),
    )}`,
    `**Targets (issue 4)**\n\n${table(
      ['Target', 'Goal', 'Measured', 'Result'],
      targets.map((t) => [t.label, t.goal, t.measured, verdict(t.pass)]),
    )}`,
  )
  parts.push(
    ...microTables(suites.verify),
    ...microTables(suites.cache),
    ...microTables(suites.tokenSource),
    ...microTables(suites.tokenExchange),
    ...microTables(suites.rateLimit),
    ...microTables(suites.revocation),
    ...microTables(suites.mcp),
    ...microTables(suites.introspection),
    ...microTables(suites.dpop),
    ...microTables(suites.stores),
  )
  parts.push(...httpTables(suites.http), ...memoryTable(suites.memory))
  const skipped = all.flatMap((s) => s.skipped.map((k) => `- ${k.what}: not measured (${k.why})`))
  if (skipped.length > 0) parts.push(`**Not measured**\n\n${skipped.join('\n')}`)
  const notes = all.flatMap((s) => s.notes.map((n) => `- ${s.suite}: ${n}`))
  if (notes.length > 0) parts.push(`**Notes**\n\n${notes.join('\n')}`)
  return `${parts.join('\n\n')}\n`
}
