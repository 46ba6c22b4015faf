/**
 * A Node cluster without any store: a primary holding rate-limiter-flexible's
 * `RateLimiterClusterMaster` and two worker processes whose tollgate limiters use
 * `RateLimiterCluster` through `rateLimit.store: { flexible }` (see `helpers/gateway-process.ts`).
 */
import { describe, expect, it } from 'vitest'

import { clusterBurst } from '../helpers/gateway-process.js'

describe('rateLimit.store: { flexible } with RateLimiterCluster (primary + 2 workers)', () => {
  it('admits exactly the limit across the workers, every window of the plan counted', async () => {
    const report = await clusterBurst(
      {
        windows: [
          { points: 30, durationSeconds: 1 },
          { points: 25, durationSeconds: 60 },
        ],
        storeTimeoutMs: 5000,
      },
      2,
      40,
    )
    expect(report.workers).toHaveLength(2)
    expect(report.workers.reduce((sum, { admitted }) => sum + admitted, 0)).toBe(25)
    expect(report.workers.reduce((sum, { refused }) => sum + refused, 0)).toBe(55)
    expect(report.workers.every(({ other }) => other === 0)).toBe(true)
  }, 60_000)
})
