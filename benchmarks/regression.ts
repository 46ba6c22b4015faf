/**
 * The speed regression check `.ci/run` runs: a short in-process comparison that fails when the
 * built gate's cache hit or cache miss got more than `--tolerance` (default 10%) slower relative to
 * node:crypto's own verification of the same tokens, in the same process. A ratio, not a time: on
 * a slower or busier machine both sides slow down together, and rounds interleave the contenders
 * (the order rotated each round) so a neighbour's burst hits them alike; each contender's best
 * round counts, since noise only ever adds time. Time is this thread's CPU time, so other
 * processes on a shared machine are left out of both sides. A failed comparison is measured once more before
 * the check fails, and the figures are printed on every run.
 *
 *   tsx benchmarks/regression.ts [dist] [--rounds=21] [--round-ms=100] [--tolerance=0.10]
 *   tsx benchmarks/regression.ts [dist] --write-baseline   (after a deliberate change of speed)
 *
 * Needs nothing beyond the root's dependencies and a built `dist/` (`npm run build`). The baseline
 * (`regression-baseline.json`) holds each case's ratio to node:crypto as measured on the
 * project's machines; `--write-baseline` takes the slowest of five measurements.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { type TimedCall, timeRound } from './cpu-time.ts'
import { AUDIENCE, REALM, startOwnIssuer } from './fixtures.ts'
import { rawVerifier } from './micro/crypto-limit.ts'

interface GateModule {
  createGate(options: Record<string, unknown>): {
    ready(): Promise<unknown>
    check(request: { headers: Record<string, string> }): Promise<unknown>
    close(): Promise<void>
  }
  keycloak(options: { authUrl: string; realms: string[] }): unknown
}

const here = fileURLToPath(new URL('.', import.meta.url))
const baselineFile = join(here, 'regression-baseline.json')
const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const dist = resolve(
  process.argv.slice(2).find((a) => !a.startsWith('--')) ?? join(here, '../dist'),
)
const rounds = Number(arg('rounds', '21'))
const roundMs = Number(arg('round-ms', '100'))
const tolerance = Number(arg('tolerance', '0.10'))

const core = (await import(pathToFileURL(join(dist, 'src/index.js')).href)) as GateModule
const issuer = await startOwnIssuer()
const POOL = 2048
const tokens = Array.from({ length: POOL }, (_, i) =>
  issuer.mint({ tenant: `t${i % 100}` }, 'RS256'),
)
const requests = tokens.map((token) => ({ headers: { authorization: `Bearer ${token}` } }))

/** The benchmarks' usual gate: one Keycloak realm, tenants metered in process memory. */
async function gate(cacheEntries: number | false) {
  const created = core.createGate({
    issuers: core.keycloak({ authUrl: issuer.url, realms: [REALM] }),
    audience: AUDIENCE,
    cache: cacheEntries === false ? false : { maxEntries: cacheEntries },
    tenant: { claim: 'tenant' },
    rateLimit: { windows: [{ points: 1_000_000_000, durationSeconds: 60 }] },
  })
  await created.ready()
  for (const request of requests) await created.check(request)
  return created
}

const hitGate = await gate(10_000)
const missGate = await gate(false)
const raw = rawVerifier('RS256', issuer.keys.RS256.publicKey)

type Contender = TimedCall
const contenders: Record<string, Contender> = {
  crypto: (i) => raw(tokens[i % POOL] as string),
  // The hit rotates over 1,000 cached tokens; the miss over all 2,048 with the cache off.
  hit: (i) => hitGate.check(requests[i % 1000] as (typeof requests)[number]),
  miss: (i) => missGate.check(requests[i % POOL] as (typeof requests)[number]),
}

/** Nanoseconds of CPU per call of one contender over about `roundMs` of CPU. */
const time = (fn: Contender) => timeRound(fn, roundMs)

const CASES = ['hit', 'miss'] as const
type Ratios = Record<(typeof CASES)[number], number>

/**
 * Each contender timed once per round, the order rotated every round; each case's ratio to
 * node:crypto is taken within a round (contenders timed moments apart share the machine's state)
 * and the median over rounds is the figure, with each contender's best round beside it.
 */
async function measure(): Promise<{ ratios: Ratios; best: Record<string, number> }> {
  const names = Object.keys(contenders)
  const best: Record<string, number> = {}
  const perRound: Record<string, number[]> = { hit: [], miss: [] }
  for (const name of names) await time(contenders[name] as Contender) // warm-up
  for (let round = 0; round < rounds; round++) {
    const ns: Record<string, number> = {}
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + round) % names.length] as string
      ns[name] = await time(contenders[name] as Contender)
      best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, ns[name] as number)
    }
    for (const name of CASES) perRound[name]?.push((ns[name] as number) / (ns.crypto as number))
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1] as number
  return {
    ratios: { hit: median(perRound.hit as number[]), miss: median(perRound.miss as number[]) },
    best,
  }
}

const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`

let status = 0
if (process.argv.includes('--write-baseline')) {
  const runs: Ratios[] = []
  for (let r = 0; r < 5; r++) {
    const { ratios, best } = await measure()
    runs.push(ratios)
    console.log(`run ${r + 1}: ${JSON.stringify(ratios)} (crypto ${us(best.crypto as number)})`)
  }
  // The slowest of the five: the limit is then 10% beyond the worst of five normal measurements,
  // so that the check fails on a change, not on a noisy run (the hit's median moved by up to
  // ±13% between five runs of one build on a quiet 2-core machine).
  const slowest = (values: number[]) => Math.max(...values)
  const baseline = {
    note: 'gate.check CPU time / node:crypto verify CPU time, same process (benchmarks/regression.ts)',
    node: process.version,
    hit: Number(slowest(runs.map((r) => r.hit)).toFixed(5)),
    miss: Number(slowest(runs.map((r) => r.miss)).toFixed(4)),
  }
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`)
  console.log(`wrote ${baselineFile}: ${JSON.stringify(baseline)}`)
} else {
  const baseline = JSON.parse(readFileSync(baselineFile, 'utf8')) as Ratios
  for (let attempt = 1; attempt <= 2; attempt++) {
    const { ratios, best } = await measure()
    const slower = CASES.filter((name) => ratios[name] > baseline[name] * (1 + tolerance))
    console.log(
      `speed check (attempt ${attempt}, ${rounds} rounds): node:crypto verify ${us(best.crypto as number)} (best round)`,
    )
    for (const name of CASES) {
      const change = (ratios[name] / baseline[name] - 1) * 100
      console.log(
        `  ${name.padEnd(4)} ${us(best[name] as number).padStart(10)}  ${ratios[name].toFixed(4)}× crypto, baseline ${baseline[name].toFixed(4)}× (${change >= 0 ? '+' : ''}${change.toFixed(1)}%, limit +${(tolerance * 100).toFixed(0)}%)${slower.includes(name) ? '  SLOWER' : ''}`,
      )
    }
    if (slower.length === 0) {
      status = 0
      break
    }
    status = 1
    console.log(
      attempt === 1
        ? `  ${slower.join(' and ')} over the limit: measuring once more`
        : `speed check failed: ${slower.join(' and ')} more than ${(tolerance * 100).toFixed(0)}% slower relative to node:crypto than benchmarks/regression-baseline.json (after a deliberate change: tsx benchmarks/regression.ts --write-baseline)`,
    )
  }
}
await hitGate.close()
await missGate.close()
await issuer.close()
process.exit(status)
