/**
 * What one build spends on a cache miss beyond the floor, with that build alone in its process:
 *
 *   tsx micro/floor-gap.ts ../dist [--rounds=21] [--round-ms=150]
 *
 * `ab.ts` puts two builds in one process, and there the slot matters more than the code: two
 * identical copies of one build differed by 2.7 µs on the miss (the second faster, below the floor).
 * Here each build is measured in a process of its own, next to node:crypto's raw check and the
 * floor (http/servers/floor.ts, its cache on), timed as `regression.ts` times: this thread's CPU
 * time, contenders interleaved with the order rotated each round, and the figure is the median
 * over rounds of each contender's difference to the floor within the round (timed moments apart,
 * they share the machine's state). Run it once per build and compare the gaps.
 *
 * The miss rotates 2,048 tokens over 100 tenants with the memory limiter; "cache on" keeps 1,000
 * verdicts (every check misses, inserts and evicts), as the floor keeps 1,000 claims.
 */
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type TimedCall, timeRound } from '../cpu-time.ts'
import { bearer, mintPool } from '../fixtures.ts'
import { floorVerifier } from '../http/servers/floor.ts'
import { startIssuer } from '../issuer.ts'
import { type CoreModule, closeGate, gateOptions } from '../tollgate.ts'
import { rawVerifier } from './crypto-limit.ts'

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const dist = resolve(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? '../dist')
const rounds = Number(arg('rounds', '21'))
const roundMs = Number(arg('round-ms', '150'))

const core = (await import(pathToFileURL(join(dist, 'src/index.js')).href)) as CoreModule
const issuer = await startIssuer()
const POOL = 2048
const tokens = mintPool(issuer, POOL, 'RS256', 100)
const requests = tokens.map(bearer)
const authorizations = requests.map((request) => request.headers.authorization as string)

async function missGate(cacheEntries: number | false) {
  const gate = core.createGate(
    gateOptions(core, { authUrl: issuer.url, cacheEntries, limiter: 'memory' }),
  )
  await gate.ready()
  for (const request of requests) await gate.check(request)
  return gate
}
const cacheOff = await missGate(false)
const cacheOn = await missGate(1000)
const floor = await floorVerifier({
  authUrl: issuer.url,
  issuer: issuer.issuer,
  jwksUri: issuer.jwksUri,
  audience: 'gateway',
  cacheEntries: 1000,
  limiter: 'off',
} as Parameters<typeof floorVerifier>[0])
const raw = rawVerifier('RS256', issuer.keys.RS256.publicKey)

type Contender = TimedCall
const contenders: Record<string, Contender> = {
  'node:crypto': (i) => raw(tokens[i % POOL] as string),
  floor: (i) => floor(authorizations[i % POOL]),
  'miss, cache off': (i) => cacheOff.check(requests[i % POOL]!),
  'miss, cache on': (i) => cacheOn.check(requests[i % POOL]!),
}

const time = (fn: Contender) => timeRound(fn, roundMs)

const names = Object.keys(contenders)
const perRound: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]))
for (const name of names) await time(contenders[name]!) // warm-up
for (let round = 0; round < rounds; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + round) % names.length]!
    perRound[name]!.push(await time(contenders[name]!))
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!
const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`
console.log(`${dist}: ${rounds} rounds of ${roundMs} ms CPU each, medians`)
for (const name of names) {
  const own = perRound[name]!
  const toFloor = own.map((ns, r) => ns - perRound.floor![r]!)
  const toCrypto = own.map((ns, r) => ns - perRound['node:crypto']![r]!)
  console.log(
    `  ${name.padEnd(16)} ${us(median(own)).padStart(10)}   vs floor ${(median(toFloor) >= 0 ? '+' : '') + us(median(toFloor))}   vs node:crypto +${us(median(toCrypto))}`,
  )
}
await closeGate(cacheOff)
await closeGate(cacheOn)
await issuer.close()
process.exit(0)
