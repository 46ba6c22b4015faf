/**
 * The DPoP replay memory at production sizes: what a proof's claim costs in the memory store
 * (`createMemoryReplayCache`, `dist/src/dpop/replay.js`) once it holds 10k, 100k or 1M proofs and
 * forgets one expired proof for each new one (a steady stream of requests, each proof living the
 * same window), measured over as many claims again as the store holds, up to 800,000. The memory
 * store forgets its oldest proofs first: with V8's `Map` that walk started over every entry
 * deleted since the table was last rebuilt, so a claim cost more the longer the stream ran.
 *
 * `BENCH_DIST=/path/to/old/dist node --import tsx benchmarks/scale/replay.ts` measures another
 * build; `BENCH_SCALE_MAX_PROOFS=100000` leaves out the 1M row.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { distDir, isMain } from '../config.ts'

interface ReplayModule {
  createMemoryReplayCache(
    maxEntries: number,
    maxEntriesPerKey?: number,
  ): { claim(jkt: string, jti: string, ttlMs: number, nowMs: number): Promise<void> }
}

const MAX_PROOFS = Number(process.env.BENCH_SCALE_MAX_PROOFS ?? 1_000_000)
const KEYS = 1000
const count = (n: number) =>
  n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n)

export async function run(): Promise<string> {
  const { createMemoryReplayCache } = (await import(
    pathToFileURL(join(distDir, 'src/dpop/replay.js')).href
  )) as ReplayModule
  const rows: string[] = []
  for (const size of [10_000, 100_000, 1_000_000].filter((n) => n <= MAX_PROOFS)) {
    const cache = createMemoryReplayCache(size + KEYS, size + KEYS)
    // A virtual clock one millisecond per proof, every proof living `size` ms: once full, each
    // claim forgets exactly one expired proof.
    let now = 0
    for (let index = 0; index < size; index++) {
      await cache.claim(`key-${index % KEYS}`, `jti-${index}`, size, now++)
    }
    const claims = Math.min(size, 800_000)
    // CPU time of this process: the machine is shared, and wall time counts others' turns.
    const started = process.cpuUsage()
    for (let index = size; index < size + claims; index++) {
      await cache.claim(`key-${index % KEYS}`, `jti-${index}`, size, now++)
    }
    const { user, system } = process.cpuUsage(started)
    rows.push(
      `| DPoP proof claimed in the memory replay store, steady stream | ${count(size)} proofs held, ${count(claims)} claims | ${((user + system) / claims).toFixed(2)} µs | |`,
    )
  }
  return ['| DPoP replay memory | size | measured | |', '|---|---|---|---|', ...rows].join('\n')
}

if (isMain(import.meta.url)) {
  console.log(`build: ${distDir}`)
  console.log(await run())
  process.exit(0)
}
