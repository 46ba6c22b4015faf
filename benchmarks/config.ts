/**
 * Run settings shared by every suite: quick or full, durations, sizes and paths. Read once from the
 * command line (`--quick`) and the environment (`BENCH_QUICK=1`), so a suite executed directly and
 * the same suite called from `run.ts` behave the same.
 */
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1'

const num = (name: string, fallback: number, min = Number.MIN_VALUE): number => {
  const raw = process.env[name]
  const value = raw === undefined || raw === '' ? Number.NaN : Number(raw)
  return Number.isFinite(value) && value >= min ? value : fallback
}

export const settings = {
  mode: quick ? 'quick' : 'full',
  /** mitata: minimum CPU time spent measuring one contender, in ns, over all its rounds. */
  microCpuTimeNs: num('BENCH_MICRO_NS', quick ? 500e6 : 2000e6),
  /** Rounds per micro case, contenders interleaved; each contender's best round is kept. */
  microRounds: Math.round(num('BENCH_MICRO_ROUNDS', quick ? 4 : 8)),
  /** Distinct tokens per algorithm in the cache-miss micro bench: above fast-jwt's 1,000-entry cache. */
  microPool: num('BENCH_MICRO_POOL', 2048),
  /** HTTP: seconds of discarded warm-up, then seconds measured, per case. */
  warmupSeconds: num('BENCH_WARMUP_S', quick ? 1 : 3),
  measureSeconds: num('BENCH_MEASURE_S', quick ? 3 : 10),
  /**
   * The measured seconds are split into this many rounds, contenders interleaved (ABBA order), so
   * drift and neighbours' noise hit the bare framework and its contenders alike; each contender's
   * best round counts.
   */
  rounds: Math.round(num('BENCH_ROUNDS', 3)),
  /** Extra rounds at most for a contender whose best round left its server idle (disturbed). */
  extraRounds: Math.round(num('BENCH_EXTRA_ROUNDS', 2, 0)),
  connections: num('BENCH_CONNECTIONS', 10),
  /** Distinct valid tokens rotated per request in the `pool` mode. */
  httpPool: num('BENCH_HTTP_POOL', 10_000),
  /** Requests in the realistic mode's schedule (it wraps after): more than a server gets in a run. */
  realisticRequests: num('BENCH_REALISTIC_REQUESTS', quick ? 400_000 : 1_000_000),
  /** Distinct unknown kids rotated in the `unknown-kid` mode. */
  unknownKids: num('BENCH_UNKNOWN_KIDS', 1000),
  /** Distinct forgeries the forged-repeated mode rotates: fewer than any forged-token memo holds. */
  repeatedForgeries: num('BENCH_REPEATED_FORGERIES', 100),
  /**
   * tollgate's verified-token cache in the HTTP servers, its default: smaller than the pool, so
   * the pool mode always misses (the repeated mode always hits), and large enough for the
   * realistic mode's 1,000 clients and the tokens they renewed (an LRU of 1,000 would keep
   * 96.5% of the hits the schedule offers; 5,000 keep 98.9%).
   */
  tollgateCacheEntries: num('BENCH_TOLLGATE_CACHE', 5000),
  /** The JWKS refetch cooldown the unknown-kid target is judged against, in seconds. */
  jwksCooldownSeconds: num('BENCH_JWKS_COOLDOWN_S', 30),
  /** The shortest unknown-kid refetch interval (`jwks.minCooldownMs`), in seconds. */
  jwksMinCooldownSeconds: num('BENCH_JWKS_MIN_COOLDOWN_S', 0.5),
  /** Memory case: distinct tokens and tenants pushed through one gate. */
  memoryTokens: num('BENCH_MEMORY_TOKENS', 100_000),
  memoryTenants: num('BENCH_MEMORY_TENANTS', 10_000),
  memoryCacheEntries: num('BENCH_MEMORY_CACHE', 10_000),
  redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/15',
  /**
   * HTTP contenders to run, as comma-separated parts of their names (`tollgate,floor`); the bare
   * frameworks always run, being every ratio's baseline. Empty: all of them.
   */
  httpContenders: (process.env.BENCH_HTTP_CONTENDERS ?? '').split(',').filter(Boolean),
  /** HTTP token modes to run (`repeated,pool`). Empty: all of them. */
  httpModes: (process.env.BENCH_HTTP_MODES ?? '').split(',').filter(Boolean),
} as const

export const benchDir = fileURLToPath(new URL('.', import.meta.url))
export const resultsDir = fileURLToPath(new URL('./results/', import.meta.url))
/** The build measured: `../dist` unless `BENCH_DIST` names another (an old build, for A/B rounds). */
export const distDir = process.env.BENCH_DIST
  ? resolve(process.env.BENCH_DIST)
  : fileURLToPath(new URL('../dist/', import.meta.url))

/** True when this module's caller is the entry script (`tsx micro/verify.bench.ts`). */
export const isMain = (metaUrl: string): boolean =>
  process.argv[1] !== undefined && fileURLToPath(metaUrl) === resolve(process.argv[1])
