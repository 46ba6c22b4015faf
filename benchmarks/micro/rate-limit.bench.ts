/**
 * The limiter's consume, measured through the public API: `gate.check` on cached tokens with the
 * per-tenant limiter on (memory store, then Redis) against the same gate without a limiter. The
 * difference is what one consume costs on the hot path. Needs `dist/src/limits/rate-limit.js`.
 */
import { isMain } from '../config.ts'
import { bearer, mintPool } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { connectRedis } from '../redis.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { closeGate, type Gate, gateOptions, hasRateLimit, isBuilt, loadCore } from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const NO_LIMITER = 'gate.check, cache hit, no limiter'
export const MEMORY = 'gate.check, cache hit, memory limiter'
export const REDIS = 'gate.check, cache hit, Redis limiter'

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-rate-limit')
  if (!isBuilt() || !hasRateLimit()) {
    result.skipped.push({
      what: 'limiter consume',
      why: 'dist/src/limits/rate-limit.js is not built',
    })
    console.log('\nlimiter consume: not measured (dist/src/limits/rate-limit.js is not built)')
    return result
  }
  const issuer = await startIssuer()
  const gates: Gate[] = []
  const redis = await connectRedis()
  try {
    const core = await loadCore()
    // 1,000 cached tokens over 100 tenants: the signature is checked once, the limiter every time.
    const requests = mintPool(issuer, 1000, 'ES256', 100).map(bearer)
    const start = async (limiter: 'off' | 'memory' | 'redis') => {
      const options = { authUrl: issuer.url, cacheEntries: 10_000, limiter } as const
      const redisClient = 'client' in redis ? redis.client : undefined
      const gate = core.createGate(gateOptions(core, { ...options, redis: redisClient }))
      gates.push(gate)
      await gate.ready()
      for (const request of requests) await gate.check(request)
      let i = 0
      return () => gate.check(requests[i++ % requests.length]!)
    }
    const contenders: Contender[] = [
      [NO_LIMITER, await start('off')],
      [MEMORY, await start('memory')],
    ]
    if ('client' in redis) contenders.push([REDIS, await start('redis')])
    else result.skipped.push({ what: REDIS, why: redis.error })
    const rows = await measureCase('limiter consume (ES256 tokens, cached)', contenders)
    const base = rows.find((row) => row.contender === NO_LIMITER)!
    for (const row of rows) {
      if (row === base) continue
      row.note = `consume ≈ ${((row.nsPerOp - base.nsPerOp) / 1000).toFixed(2)} µs`
      console.log(`  ${row.contender}: ${row.note}`)
    }
    result.rows.push(...rows)
  } finally {
    for (const gate of gates) await closeGate(gate)
    if ('client' in redis) redis.client.disconnect()
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
