/**
 * The price of Token Status Lists: `gate.check` on a cache hit with `statusList` on, each token
 * naming an index of one list of a million 1-bit statuses, next to the same gate with it off and
 * the same tokens (thread CPU time, rounds interleaved, the median price over rounds, as
 * capabilities.bench.ts measures); then what the list costs in memory and in fetches: one fetch
 * however many requests, and the heap a million statuses take.
 *
 *   npm --prefix benchmarks run status-list     (after `npm run build` at the root)
 *   BENCH_QUICK=1 npm --prefix benchmarks run status-list
 */

import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { distDir, quick } from '../config.ts'
import { bearer } from '../fixtures.ts'
import { type Gate, loadCore } from '../tollgate.ts'

interface Testing {
  createTestIssuer(options: { realms: string[]; audience: string }): Promise<{
    url: string
    issuer(realm?: string): string
    mint(claims: Record<string, unknown>): Promise<string>
    statusList(
      name: string,
      options: { bits: 1; size: number; ttlSeconds: number },
    ): { reference(idx: number): unknown; fetchCount: number }
    close(): Promise<void>
  }>
}

const core = (await loadCore()) as unknown as {
  createGate(options: unknown): Gate
  keycloak(options: { authUrl: string; realms: string[] }): unknown
}
const testing = (await import(pathToFileURL(join(distDir, 'src/testing/index.js')).href)) as Testing
const SIZE = 1_000_000
const issuer = await testing.createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const list = issuer.statusList('bench', { bits: 1, size: SIZE, ttlSeconds: 3600 })
const POOL = 1000
const requests = await Promise.all(
  Array.from({ length: POOL }, async (_, i) =>
    bearer(await issuer.mint({ status: list.reference((i * 997) % SIZE) })),
  ),
)
const base = {
  issuers: core.keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
  cache: { maxEntries: 10_000 },
}

const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers
const off = core.createGate(base)
const on = core.createGate({ ...base, statusList: { maxCacheSeconds: 3600 } })
for (const gate of [off, on]) {
  await gate.ready()
  for (const request of requests) await gate.check(request)
}
const heapAfter = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers

const threadCpuUsage =
  (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.bind(process) ??
  (() => process.cpuUsage())
const cpuMicros = () => {
  const { user, system } = threadCpuUsage()
  return user + system
}
const ROUNDS = quick ? 7 : 15
const ROUND_MS = quick ? 60 : 150

async function time(gate: Gate): Promise<number> {
  let calls = 0
  const started = cpuMicros()
  let now = started
  while (now < started + ROUND_MS * 1000) {
    for (let b = 0; b < 16; b++, calls++) await gate.check(requests[calls % POOL] as never)
    now = cpuMicros()
  }
  return ((now - started) * 1000) / calls
}
const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1] as number

await time(off)
await time(on)
const offTimes: number[] = []
const onTimes: number[] = []
const prices: number[] = []
for (let round = 0; round < ROUNDS; round++) {
  const [first, second] = round % 2 === 0 ? [off, on] : [on, off]
  const a = await time(first)
  const b = await time(second)
  const [offNs, onNs] = first === off ? [a, b] : [b, a]
  offTimes.push(offNs)
  onTimes.push(onNs)
  prices.push(onNs - offNs)
}
const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`
console.log(
  `gate.check, cache hit, tokens naming a list of ${SIZE.toLocaleString('en-US')} statuses`,
)
console.log(`  statusList off   ${us(median(offTimes))}`)
console.log(`  statusList on    ${us(median(onTimes))}   price ${us(median(prices))}`)
console.log(`  list fetches: ${list.fetchCount} for ${POOL} tokens and every request since`)
console.log(
  `  heap and buffers after both gates held their tokens and the list: +${((heapAfter - heapBefore) / 1024).toFixed(0)} KiB (the list itself is ${(SIZE / 8 / 1024).toFixed(0)} KiB)`,
)
await off.close?.()
await on.close?.()
await issuer.close()
process.exit(0)
