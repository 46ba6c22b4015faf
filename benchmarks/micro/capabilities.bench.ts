/**
 * The price of each optional capability: `gate.check` on a cache hit and on a cache miss with one
 * capability switched on, next to the same gate with it off, in one process, rounds interleaved
 * (measure.ts), so a user can pick features knowing what each costs. The gate is the benchmarks'
 * usual one (one Keycloak realm, tenants metered in process memory); the tokens carry an `acr`
 * for the step-up guard and nothing else a capability would judge (no `act`, no `cnf`), so each
 * row is what switching the capability on costs the traffic that does not use it, except:
 *
 * - step-up guard: the hit and the miss followed by `gate.authorize(requireAcr(…), auth)`, the
 *   call an adapter makes for a route with the guard;
 * - introspection: an opaque token whose verdict the cache holds (hit only: a miss is a call to
 *   the endpoint, over the network);
 * - Redis limiter: the count kept in Redis at `BENCH_REDIS_URL` (reported as not measured
 *   without one); this process's CPU only, the round trip's wait is not in it (the limiter
 *   stores table of RESULTS.md has the wall time).
 *
 * Time is this thread's CPU time (the development machine is shared, and wall time counted the
 * other processes' turns ten times over). Each round times every contender once, the order
 * rotated; a capability's price is its time minus the base gate's within the same round, the
 * median over rounds.
 *
 *   npm --prefix benchmarks run capabilities     (after `npm run build` at the root)
 *   BENCH_QUICK=1 npm --prefix benchmarks run capabilities
 *
 * Prints each case's table and then the Markdown table of benchmarks/README.md's "price of each
 * capability" (µs added over the capability off, same run).
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { quick } from '../config.ts'
import { bearer } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { connectRedis } from '../redis.ts'
import { type Gate, type GateOptions, gateOptions, loadCore } from '../tollgate.ts'

type Contender = readonly [name: string, fn: () => unknown]

interface Core {
  createGate(options: unknown): Gate & {
    authorize(guard: unknown, auth: unknown): void
  }
  keycloak(options: { authUrl: string; realms: string[] }): unknown
  requireAcr(...values: string[]): unknown
}

const core = (await loadCore()) as unknown as Core
const issuer = await startIssuer()
const ACR = 'urn:example:mfa'
const tokens = Array.from({ length: 2048 }, (_, i) =>
  issuer.mint({ tenant: `t${i % 100}`, acr: ACR }, 'RS256'),
)
const requests = tokens.map(bearer)
const gates: Gate[] = []

// An RFC 7662 endpoint that vouches for every token: only its first answer matters (cache hit).
const endpoint = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        active: true,
        iss: issuer.issuer,
        aud: 'gateway',
        client_id: 'bench',
        tenant: 't1',
        exp: Math.floor(Date.now() / 1000) + 4 * 3600,
      }),
    )
  })
})
await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve))
const introspectionUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/introspect`
const redis = await connectRedis()

type Variant = (base: GateOptions) => Record<string, unknown> | undefined
const variants: [name: string, change: Variant][] = [
  ['off (the base gate)', (base) => ({ ...base })],
  ['revocation', (base) => ({ ...base, revocation: {} })],
  [
    'DPoP (allowed; Bearer requests)',
    (base) => ({ ...base, dpop: { mode: 'allowed', publicBaseUrl: 'https://api.example.com' } }),
  ],
  [
    'certificate binding (allowed; unbound tokens)',
    (base) => ({ ...base, mtls: { mode: 'allowed' } }),
  ],
  [
    'delegation (allowedActors; tokens without act)',
    (base) => ({
      ...base,
      delegation: { allowedActors: ['office-workflow'] },
    }),
  ],
  [
    'tenant policy (admits, on a plan)',
    (base) => ({
      ...base,
      tenant: { claim: 'tenant', policy: () => ({ action: 'admit', plan: 'default' }) },
    }),
  ],
  [
    'Redis limiter',
    (base) =>
      'client' in redis
        ? {
            ...base,
            rateLimit: { ...base.rateLimit, store: { redis: redis.client }, storeTimeoutMs: 5000 },
          }
        : undefined,
  ],
]

const guard = core.requireAcr(ACR)

async function contender(
  options: Record<string, unknown>,
  pool: number,
  withGuard = false,
): Promise<() => Promise<void>> {
  const gate = core.createGate(options)
  gates.push(gate)
  await gate.ready()
  for (let i = 0; i < pool; i++) await gate.check(requests[i]!)
  let i = 0
  if (withGuard) {
    return async () => {
      const { auth } = (await gate.check(requests[i++ % pool]!)) as { auth: unknown }
      gate.authorize(guard, auth)
    }
  }
  return async () => {
    await gate.check(requests[i++ % pool]!)
  }
}

const threadCpuUsage =
  (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.bind(process) ??
  (() => process.cpuUsage())
const cpuMicros = () => {
  const { user, system } = threadCpuUsage()
  return user + system
}
const ROUNDS = quick ? 7 : 15
const ROUND_MS = quick ? 60 : 150

/** CPU ns per call of `fn` over about ROUND_MS of CPU. */
async function time(fn: () => unknown): Promise<number> {
  let calls = 0
  const started = cpuMicros()
  let now = started
  while (now < started + ROUND_MS * 1000) {
    for (let b = 0; b < 16; b++, calls++) await fn()
    now = cpuMicros()
  }
  return ((now - started) * 1000) / calls
}

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1] as number

/** Each contender's median time and its median price over the first (the base), per round. */
async function measureCase(caseName: string, contenders: readonly Contender[]) {
  for (const [, fn] of contenders) await time(fn)
  const times = new Map<string, number[]>(contenders.map(([name]) => [name, []]))
  const prices = new Map<string, number[]>(contenders.map(([name]) => [name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    const ns = new Map<string, number>()
    for (let k = 0; k < contenders.length; k++) {
      const [name, fn] = contenders[(k + round) % contenders.length] as Contender
      ns.set(name, await time(fn))
    }
    const base = ns.get(contenders[0]?.[0] as string) as number
    for (const [name, value] of ns) {
      times.get(name)?.push(value)
      prices.get(name)?.push(value - base)
    }
  }
  console.log(`\n${caseName} (CPU time, median of ${ROUNDS} rounds)`)
  const result = new Map<string, { ns: number; price: number }>()
  for (const [name] of contenders) {
    const entry = {
      ns: median(times.get(name) as number[]),
      price: median(prices.get(name) as number[]),
    }
    result.set(name, entry)
    console.log(
      `  ${name.padEnd(50)} ${(entry.ns / 1000).toFixed(2).padStart(8)} µs  price ${(entry.price / 1000).toFixed(2)} µs`,
    )
  }
  return result
}

const rows = new Map<
  string,
  { hit?: number; miss?: number; hitPrice?: number; missPrice?: number }
>()
for (const [cacheCase, cacheEntries, pool] of [
  ['hit', 10_000, 1000],
  ['miss', false, 2048],
] as const) {
  const base = {
    ...gateOptions(core as never, { authUrl: issuer.url, cacheEntries, limiter: 'memory' }),
    // A loaded machine must not time a key fetch out (a gate without keys answers 503).
    jwks: { timeoutMs: 10_000 },
  } as GateOptions
  const contenders: Contender[] = []
  for (const [name, change] of variants) {
    const options = change(base)
    if (options !== undefined) contenders.push([name, await contender(options, pool)])
  }
  contenders.push(['step-up guard (requireAcr)', await contender({ ...base }, pool, true)])
  if (cacheCase === 'hit') {
    const opaque = bearer(randomBytes(32).toString('base64url'))
    const introspecting = core.createGate({
      ...base,
      issuers: (base.issuers as Record<string, unknown>[]).map((entry) => ({
        ...entry,
        introspection: { endpoint: introspectionUrl, clientId: 'bench', clientSecret: 'bench' },
      })),
    })
    gates.push(introspecting)
    await introspecting.check(opaque)
    contenders.push(['introspection (verdict cached)', () => introspecting.check(opaque)])
  }
  const measured = await measureCase(
    `gate.check, cache ${cacheCase}, one capability on`,
    contenders,
  )
  for (const [name, { ns, price }] of measured) {
    const entry = rows.get(name) ?? {}
    if (cacheCase === 'hit') {
      entry.hit = ns
      entry.hitPrice = price
    } else {
      entry.miss = ns
      entry.missPrice = price
    }
    rows.set(name, entry)
  }
}

const us = (ns: number | undefined) => (ns === undefined ? '—' : `${(ns / 1000).toFixed(2)} µs`)
const added = (ns: number | undefined) =>
  ns === undefined ? '—' : `${ns >= 0 ? '+' : ''}${(ns / 1000).toFixed(2)} µs`
console.log('\n| capability on | hit | added to the hit | miss | added to the miss |')
console.log('|---|---:|---:|---:|---:|')
for (const [name, { hit, miss, hitPrice, missPrice }] of rows) {
  const same = name === 'off (the base gate)'
  console.log(
    `| ${name} | ${us(hit)} | ${same ? '' : added(hitPrice)} | ${us(miss)} | ${same ? '' : added(missPrice)} |`,
  )
}
if (!('client' in redis)) console.log(`Redis limiter not measured: ${redis.error}`)
for (const gate of gates) await gate.close?.()
if ('client' in redis) redis.client.disconnect()
endpoint.close()
await issuer.close()
process.exit(0)
