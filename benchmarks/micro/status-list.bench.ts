/**
 * The price of Token Status Lists: `gate.check` on a cache hit with `statusList` on, each token
 * naming an index of one list of a million 1-bit statuses, next to the same gate with it off and
 * the same tokens (thread CPU time, rounds interleaved, the median price over rounds, as
 * capabilities.bench.ts measures); then what the list costs in memory and in fetches: one fetch
 * however many requests, and the heap a million statuses take. With a Redis on 127.0.0.1:6379,
 * also the same gate with `statusList.store: { redis }` (the fleet's shared lists), whose price on
 * a hit should be nothing: a held list never calls Redis.
 *
 *   npm --prefix benchmarks run status-list     (after `npm run build` at the root)
 *   BENCH_QUICK=1 npm --prefix benchmarks run status-list
 */

import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { distDir, quick } from '../config.ts'
import { bearer } from '../fixtures.ts'
import { connectRedis } from '../redis.ts'
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
const redis = await connectRedis()
const shared =
  'client' in redis
    ? core.createGate({
        ...base,
        statusList: {
          maxCacheSeconds: 3600,
          store: { redis: redis.client },
          keyPrefix: `tollgate-bench:status:${process.pid}`,
        },
      })
    : undefined
for (const gate of [off, on, shared]) {
  if (gate === undefined) continue
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

const gates = shared === undefined ? [off, on] : [off, on, shared]
for (const gate of gates) await time(gate)
const offTimes: number[] = []
const onTimes: number[] = []
const sharedTimes: number[] = []
const prices: number[] = []
const storePrices: number[] = []
for (let round = 0; round < ROUNDS; round++) {
  // Each round in another order, so that drift hits every gate alike.
  const order = gates.map((_, i) => gates[(i + round) % gates.length] as Gate)
  if (round % 2 === 1) order.reverse()
  const times = new Map<Gate, number>()
  for (const gate of order) times.set(gate, await time(gate))
  const [offNs, onNs] = [times.get(off) as number, times.get(on) as number]
  offTimes.push(offNs)
  onTimes.push(onNs)
  prices.push(onNs - offNs)
  if (shared !== undefined) {
    const sharedNs = times.get(shared) as number
    sharedTimes.push(sharedNs)
    storePrices.push(sharedNs - onNs)
  }
}
const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`
console.log(
  `gate.check, cache hit, tokens naming a list of ${SIZE.toLocaleString('en-US')} statuses`,
)
console.log(`  statusList off   ${us(median(offTimes))}`)
console.log(`  statusList on    ${us(median(onTimes))}   price ${us(median(prices))}`)
if (shared === undefined) {
  console.log(`  store: { redis } not measured: ${'error' in redis ? redis.error : ''}`)
} else {
  console.log(
    `  with store redis ${us(median(sharedTimes))}   price over statusList on ${us(median(storePrices))}`,
  )
}
console.log(
  `  list fetches: ${list.fetchCount} (one per gate with statusList) for ${POOL} tokens and every request since`,
)
console.log(
  `  heap and buffers after the gates held their tokens and the list: +${((heapAfter - heapBefore) / 1024).toFixed(0)} KiB (the list itself is ${(SIZE / 8 / 1024).toFixed(0)} KiB)`,
)
await off.close?.()
await on.close?.()
await shared?.close?.()
if ('client' in redis) redis.client.disconnect()
await issuer.close()
process.exit(0)
