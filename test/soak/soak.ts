/**
 * Soak: minutes of saturation through the Express adapter on loopback, with a mix of valid,
 * forged, expired, malformed and rate-limited traffic, plus a stream of never-seen tokens that
 * churns the verdict and forgery caches. Samples RSS, heap and event-loop delay every few seconds,
 * reports the RSS slope over the second half of the measured period (least squares, MB/min) and
 * exits 1 on unbounded growth, on any unexpected status, or on a 5xx.
 *
 * Traffic first runs for a warm-up (caches fill, V8 sizes its heap: RSS climbs for ~40 s whatever
 * the code does), then for SOAK_SECONDS of measurement. The slope window is the second half of the
 * measurement, but at least 60 s (all of it for shorter runs), so noise cannot fake a trend.
 *
 *   npm run soak                              # 45 s warm-up + 3 min measured
 *   SOAK_SECONDS=60 npm run soak              # shorter
 *   SOAK_CONCURRENCY=64 SOAK_WARMUP_SECONDS=60 SOAK_SAMPLE_SECONDS=1 npm run soak
 *
 * Not collected by vitest (no `.test.ts`); run with tsx.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto'
import { Agent, createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { monitorEventLoopDelay } from 'node:perf_hooks'

import express from 'express'

import { tollgate } from '../../adapters/express/index.js'
import type { GateEvent } from '../../src/events.js'
import { createTestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { signWith } from '../security/tokens.js'

function setting(name: string, fallback: number, min: number, max: number): number {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new Error(`${name} must be a number from ${min} to ${max}`)
  }
  return value
}

const SECONDS = setting('SOAK_SECONDS', 180, 10, 24 * 3600)
const WARMUP_SECONDS = setting('SOAK_WARMUP_SECONDS', 45, 0, 3600)
const CONCURRENCY = setting('SOAK_CONCURRENCY', 32, 1, 1024)
const SAMPLE_SECONDS = setting('SOAK_SAMPLE_SECONDS', 2, 0.5, 60)
/** The slope is fitted over the last this many seconds of the measured period. */
const SLOPE_WINDOW_SECONDS = Math.min(SECONDS, Math.max(SECONDS / 2, 60))
const MAX_SLOPE_MB_PER_MIN = setting('SOAK_MAX_SLOPE', 5, 0, 1000)
const MAX_GROWTH_FACTOR = 2
const ROUTE = '/api/v1/billing/subscriptions'

type Kind =
  | 'valid'
  | 'fresh-valid'
  | 'limited'
  | 'expired'
  | 'forged'
  | 'fresh-forged'
  | 'unknown-kid'
  | 'malformed'
  | 'missing'

/** Traffic mix (weights) and the statuses each kind may get. */
const MIX: ReadonlyArray<readonly [Kind, number, readonly number[]]> = [
  ['valid', 35, [200]],
  ['fresh-valid', 10, [200]],
  ['limited', 12, [200, 429]],
  ['expired', 8, [401]],
  ['forged', 8, [401]],
  ['fresh-forged', 10, [401]],
  ['unknown-kid', 5, [401]],
  ['malformed', 7, [400]],
  ['missing', 5, [401]],
]
const TOTAL_WEIGHT = MIX.reduce((sum, [, weight]) => sum + weight, 0)

interface Sample {
  readonly atSeconds: number
  readonly rssMB: number
  readonly heapMB: number
  readonly requests: number
  readonly loopMeanMs: number
  readonly loopP99Ms: number
  readonly loopMaxMs: number
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length
  if (n < 2) return 0
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of points) {
    num += (x - meanX) * (y - meanY)
    den += (x - meanX) ** 2
  }
  return den === 0 ? 0 : num / den
}

const mb = (bytes: number) => bytes / 1024 / 1024
const fixed = (value: number, digits = 1) => value.toFixed(digits)

async function main(): Promise<number> {
  const issuer = await createTestIssuer({
    realms: ['acme'],
    algorithms: ['ES256'],
    audience: 'gateway',
  })
  const lifetime = SECONDS + 3600
  const mint = (claims: Record<string, unknown>) =>
    issuer.mint(claims, { expiresInSeconds: lifetime })

  const eventCounts = new Map<string, number>()
  const app = express()
  app.use(
    tollgate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      tenant: { claim: 'tenant' },
      rateLimit: {
        plans: {
          default: [{ points: 1_000_000_000, durationSeconds: 60 }],
          tight: [{ points: 20, durationSeconds: 1 }],
        },
        tenantPlans: { tiny: 'tight' },
      },
      jwks: { cooldownMs: 10_000 },
      onEvent: (event: GateEvent) =>
        eventCounts.set(event.type, (eventCounts.get(event.type) ?? 0) + 1),
    }),
  )
  app.get(ROUTE, (req, res) => {
    res.json({ tenant: req.auth?.tenant, subject: req.auth?.subject })
  })
  const server = createServer(app)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  // Token pools, made before the clock starts.
  const attacker = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  const iss = issuer.issuer('acme')
  const claims = (extra: Record<string, unknown>) => ({
    iss,
    aud: 'gateway',
    sub: 'soak',
    tenant: 'acme',
    exp: Math.floor(Date.now() / 1000) + lifetime,
    ...extra,
  })
  const pools = {
    valid: await Promise.all(
      Array.from({ length: 200 }, (_, index) => mint({ tenant: 'acme', sub: `u${index}` })),
    ),
    limited: await Promise.all(Array.from({ length: 50 }, () => mint({ tenant: 'tiny' }))),
    expired: await Promise.all(
      Array.from({ length: 50 }, () => mint({ tenant: 'acme', exp: 1_000_000_000 })),
    ),
    forged: Array.from({ length: 50 }, () =>
      signWith(attacker, 'ES256', { alg: 'ES256', kid: 'x' }, claims({})),
    ),
  }
  const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T

  async function authorizationFor(kind: Kind): Promise<string | undefined> {
    switch (kind) {
      case 'valid':
        return `Bearer ${pick(pools.valid)}`
      case 'fresh-valid':
        return `Bearer ${await mint({ tenant: 'acme', sub: randomUUID() })}`
      case 'limited':
        return `Bearer ${pick(pools.limited)}`
      case 'expired':
        return `Bearer ${pick(pools.expired)}`
      case 'forged':
        return `Bearer ${pick(pools.forged)}`
      case 'fresh-forged':
        return `Bearer ${signWith(attacker, 'ES256', { alg: 'ES256' }, claims({ jti: randomUUID() }))}`
      case 'unknown-kid':
        return `Bearer ${signWith(attacker, 'ES256', { alg: 'ES256', kid: randomUUID() }, claims({}))}`
      case 'malformed':
        return pick(['Bearer', 'Bearer a b', 'Bearer "x"', `Bearer ${pick(pools.valid)},`])
      case 'missing':
        return pick([undefined, 'Basic dXNlcjpwYXNz'])
    }
  }

  function chooseKind(): readonly [Kind, readonly number[]] {
    let roll = Math.random() * TOTAL_WEIGHT
    for (const [kind, weight, allowed] of MIX) {
      roll -= weight
      if (roll < 0) return [kind, allowed]
    }
    const [kind, , allowed] = MIX[0] as (typeof MIX)[number]
    return [kind, allowed]
  }

  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  function get(authorization: string | undefined): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: ROUTE,
          agent,
          headers: authorization === undefined ? {} : { authorization },
        },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
          res.on('error', reject)
        },
      )
      req.setTimeout(10_000, () => req.destroy(new Error('request timed out')))
      req.on('error', reject)
      req.end()
    })
  }

  const statuses = new Map<string, number>()
  const unexpected = new Map<string, number>()
  let requests = 0
  let failures = 0

  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const samples: Sample[] = []
  const started = performance.now()
  const deadline = started + (WARMUP_SECONDS + SECONDS) * 1000
  let lastCount = 0

  console.log(
    `soak: ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured, ${CONCURRENCY} concurrent, sample every ${SAMPLE_SECONDS} s, slope over the last ${SLOPE_WINDOW_SECONDS} s, pid ${process.pid}`,
  )
  console.log('   t(s)   req/s   rss(MB)  heap(MB)  loop mean/p99/max (ms)')
  const sampler = setInterval(() => {
    const memory = process.memoryUsage()
    const sample: Sample = {
      atSeconds: (performance.now() - started) / 1000,
      rssMB: mb(memory.rss),
      heapMB: mb(memory.heapUsed),
      requests: requests - lastCount,
      loopMeanMs: loop.mean / 1e6,
      loopP99Ms: loop.percentile(99) / 1e6,
      loopMaxMs: loop.max / 1e6,
    }
    lastCount = requests
    loop.reset()
    samples.push(sample)
    const phase = sample.atSeconds < WARMUP_SECONDS ? ' (warm-up)' : ''
    console.log(
      `${fixed(sample.atSeconds).padStart(7)} ${fixed(sample.requests / SAMPLE_SECONDS, 0).padStart(7)} ${fixed(sample.rssMB).padStart(9)} ${fixed(sample.heapMB).padStart(9)}   ${fixed(sample.loopMeanMs)}/${fixed(sample.loopP99Ms)}/${fixed(sample.loopMaxMs)}${phase}`,
    )
  }, SAMPLE_SECONDS * 1000)

  async function worker(): Promise<void> {
    while (performance.now() < deadline) {
      const [kind, allowed] = chooseKind()
      try {
        const status = await get(await authorizationFor(kind))
        requests += 1
        const key = `${kind} ${status}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
        if (!allowed.includes(status)) unexpected.set(key, (unexpected.get(key) ?? 0) + 1)
      } catch (error) {
        failures += 1
        if (failures <= 5) console.error(`request failed: ${(error as Error).message}`)
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))

  clearInterval(sampler)
  loop.disable()
  agent.destroy()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await issuer.close()

  // ---- Report ----
  const elapsed = (performance.now() - started) / 1000
  const end = WARMUP_SECONDS + SECONDS
  const afterWarmup = samples.filter((sample) => sample.atSeconds >= WARMUP_SECONDS)
  const secondHalf = samples.filter((sample) => sample.atSeconds >= end - SLOPE_WINDOW_SECONDS)
  const baseline = afterWarmup[0]
  const final = samples.at(-1)
  const rssSlope = slope(secondHalf.map((sample) => [sample.atSeconds / 60, sample.rssMB] as const))
  const heapSlope = slope(
    secondHalf.map((sample) => [sample.atSeconds / 60, sample.heapMB] as const),
  )
  const worstP99 = Math.max(0, ...afterWarmup.map((sample) => sample.loopP99Ms))
  const worstMax = Math.max(0, ...afterWarmup.map((sample) => sample.loopMaxMs))
  const peakRss = Math.max(0, ...samples.map((sample) => sample.rssMB))

  console.log('\nstatuses by kind:')
  for (const [key, count] of [...statuses].sort()) console.log(`  ${key.padEnd(18)} ${count}`)
  console.log('events:', Object.fromEntries(eventCounts))
  console.log(
    `\nrequests ${requests} in ${fixed(elapsed)} s (${fixed(requests / elapsed, 0)}/s), transport failures ${failures}`,
  )
  console.log(
    `rss: post-warm-up ${fixed(baseline?.rssMB ?? 0)} MB, final ${fixed(final?.rssMB ?? 0)} MB, peak ${fixed(peakRss)} MB`,
  )
  console.log(
    `rss slope over the last ${SLOPE_WINDOW_SECONDS} s: ${fixed(rssSlope, 2)} MB/min (limit ${MAX_SLOPE_MB_PER_MIN}); heap slope ${fixed(heapSlope, 2)} MB/min`,
  )
  console.log(
    `event-loop delay after warm-up: worst p99 ${fixed(worstP99)} ms, worst max ${fixed(worstMax)} ms`,
  )

  const problems: string[] = []
  if (requests === 0) problems.push('no request completed')
  if (secondHalf.length < 5) problems.push('too few samples in the slope window')
  if (rssSlope > MAX_SLOPE_MB_PER_MIN) problems.push(`RSS grows ${fixed(rssSlope, 2)} MB/min`)
  if (baseline && final && final.rssMB > MAX_GROWTH_FACTOR * baseline.rssMB) {
    problems.push(`final RSS is more than ${MAX_GROWTH_FACTOR}x the post-warm-up RSS`)
  }
  if (unexpected.size > 0)
    problems.push(`unexpected statuses: ${JSON.stringify(Object.fromEntries(unexpected))}`)
  if (failures > 0) problems.push(`${failures} requests failed at the transport level`)
  if ((statuses.get('limited 429') ?? 0) === 0) problems.push('the rate limit never engaged')

  if (problems.length > 0) {
    console.log(`\nFAIL\n  - ${problems.join('\n  - ')}`)
    return 1
  }
  console.log('\nPASS')
  return 0
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  },
)
