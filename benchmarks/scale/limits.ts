/**
 * The per-tenant limiter at production sizes (issue 30): what one request costs with 1k to 1M
 * tenants in the memory store, what a flood of over-limit tenants costs, and the heap a tenant
 * takes at 1M. It calls the built limiter (`dist/src/limits/rate-limit.js`) directly, through
 * `consumeNow` (the memory store's synchronous path, the one a cached token takes), so that the
 * numbers are the limiter's own, without token verification or HTTP around them.
 *
 * `BENCH_DIST=/path/to/old/dist node benchmarks/scale/limits.ts` measures another build (the
 * code before a change); `BENCH_SCALE_MAX_TENANTS=100000` leaves out the 1M rows.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import v8 from 'node:v8'
import vm from 'node:vm'

import { distDir, isMain } from '../config.ts'

interface Tenant {
  readonly id: string
  readonly plan: string | undefined
}
interface Limiter {
  consumeNow: ((tenant: Tenant, request: unknown, verified: unknown) => unknown) | undefined
}
interface LimitsModule {
  createTenantLimiter(options: unknown, context: { emit: undefined }): Limiter
}
interface OptionsModule {
  normalizeRateLimitOptions(options: unknown): unknown
}

const REQUEST = { headers: {}, method: 'GET', url: '/items' }
const VERIFIED = {
  header: { alg: 'ES256' },
  claims: { iss: 'https://sso.example.com/realms/acme', exp: 2_000_000_000 },
  issuer: 'https://sso.example.com/realms/acme',
  realm: 'acme',
}
const HOUR = 3600
const MAX_TENANTS = Number(process.env.BENCH_SCALE_MAX_TENANTS ?? 1_000_000)

async function load() {
  const limits = (await import(
    pathToFileURL(join(distDir, 'src/limits/rate-limit.js')).href
  )) as LimitsModule
  const options = (await import(
    pathToFileURL(join(distDir, 'src/limits/options.js')).href
  )) as OptionsModule
  return (rateLimit: Record<string, unknown>): Limiter =>
    limits.createTenantLimiter(options.normalizeRateLimitOptions(rateLimit), { emit: undefined })
}

/** Rate-limit options for one window, with `maxTenants` when the build has it. */
function options(points: number, extra: Record<string, unknown> = {}) {
  return { windows: [{ points, durationSeconds: HOUR }], ...extra }
}

/** One request; `true` when admitted, `false` on a 429 (any other error is thrown). */
function requestOf(limiter: Limiter, tenant: Tenant): boolean {
  try {
    ;(limiter.consumeNow as NonNullable<Limiter['consumeNow']>)(tenant, REQUEST, VERIFIED)
    return true
  } catch (error) {
    if ((error as { status?: number }).status === 429) return false
    throw error
  }
}

/**
 * Best of `rounds` rounds, in ns of this process's CPU time per call (the machine is shared:
 * wall time would count other processes' turns): each round calls `body` in batches until
 * `budgetMs` of CPU were spent or `maxOps` calls were made (a slow build gets fewer calls, not
 * more time); noise only ever adds time, so the fastest round is kept.
 */
function nsPerOp(
  body: (index: number) => void,
  { rounds = 5, budgetMs = 300, maxOps = 200_000 } = {},
): number {
  let best = Number.POSITIVE_INFINITY
  let index = 0
  for (let round = 0; round < rounds; round++) {
    const started = cpuNs()
    let ops = 0
    let elapsed = 0
    while (ops < maxOps && elapsed < budgetMs * 1e6) {
      for (let batch = 0; batch < 100; batch++) body(index++)
      ops += 100
      elapsed = cpuNs() - started
    }
    best = Math.min(best, elapsed / ops)
  }
  return best
}

/** CPU time of this process (user and system), in ns. */
function cpuNs(): number {
  const { user, system } = process.cpuUsage()
  return (user + system) * 1000
}

const tenantsOf = (prefix: string, count: number): Tenant[] =>
  Array.from({ length: count }, (_, index) => ({ id: `${prefix}-${index}`, plan: undefined }))

/** A request of each tenant, in an order that is not the insertion order. */
function spread(tenants: readonly Tenant[]) {
  const stride = 7919
  return (index: number) => tenants[(index * stride) % tenants.length] as Tenant
}

const gc = (() => {
  v8.setFlagsFromString('--expose-gc')
  return vm.runInNewContext('gc') as () => void
})()

function heapUsed(): number {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

const µs = (ns: number) => (ns / 1000).toFixed(2)
const count = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`)

export async function run(): Promise<string> {
  const limiterOf = await load()
  const rows: string[] = []

  // Heap first, in a fresh heap: bytes a tenant holds in a 1-hour window, its id string included.
  {
    const tenants = Math.min(MAX_TENANTS, 1_000_000)
    const before = heapUsed()
    const limiter = limiterOf(options(1_000_000_000))
    for (let index = 0; index < tenants; index++) {
      requestOf(limiter, { id: `heap-tenant-${index}`, plan: undefined })
    }
    const after = heapUsed()
    // Used after the measure, so that no optimizer takes it for dead while it is measured.
    if (!requestOf(limiter, { id: 'heap-tenant-0', plan: undefined })) throw new Error('refused')
    rows.push(
      `| heap per tenant, memory store, one 1-hour window | ${count(tenants)} tenants | ${((after - before) / tenants).toFixed(0)} B (heap ${((after - before) / 2 ** 20).toFixed(0)} MiB) | |`,
    )
  }

  // Per-request cost, admitted and refused, as the number of tenants grows.
  for (const size of [1_000, 10_000, 100_000, 1_000_000].filter((n) => n <= MAX_TENANTS)) {
    const admitting = limiterOf(options(1_000_000_000))
    const tenants = tenantsOf('t', size)
    for (const tenant of tenants) requestOf(admitting, tenant)
    const admittedAt = spread(tenants)
    const admitted = nsPerOp((index) => requestOf(admitting, admittedAt(index)))
    const refusing = limiterOf(options(1))
    for (const tenant of tenants) requestOf(refusing, tenant)
    const refusedAt = spread(tenants)
    const refused = nsPerOp((index) => requestOf(refusing, refusedAt(index)))
    rows.push(
      `| limiter request, memory store | ${count(size)} tenants | admitted ${µs(admitted)} µs | 429 ${µs(refused)} µs |`,
    )
  }

  // A flood: K tenants are over their limit (points 1); then 10,000 new tenants each send a first
  // request (admitted, which spends their window), and the K send requests that are refused.
  for (const spent of [1_000, 100_000].filter((n) => n <= MAX_TENANTS)) {
    const limiter = limiterOf(options(1))
    const over = tenantsOf('over', spent)
    for (const tenant of over) requestOf(limiter, tenant)
    let fresh = 0
    const newcomer = nsPerOp(
      () => {
        requestOf(limiter, { id: `new-${fresh++}`, plan: undefined })
      },
      { maxOps: 2_000 },
    )
    const at = spread(over)
    const refused = nsPerOp((index) => requestOf(limiter, at(index)))
    rows.push(
      `| flood of over-limit tenants (points 1) | ${count(spent)} over their limit | a new tenant's request ${µs(newcomer)} µs | 429 ${µs(refused)} µs |`,
    )
  }

  return ['| limiter | size | measured | |', '|---|---|---|---|', ...rows].join('\n')
}

if (isMain(import.meta.url)) {
  console.log(`build: ${distDir}`)
  console.log(await run())
  process.exit(0)
}
