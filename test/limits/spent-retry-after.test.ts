/**
 * A tenant spent in several windows at once is refused until the last of them resets: the
 * `Retry-After` of a refusal from the limiter's memory of spent tenants (the shared stores) is
 * the latest reset, never an earlier one that would send the client back to be refused again
 * (draft-ietf-httpapi-ratelimit-headers: a client waits `Retry-After`, then may retry).
 */
import { describe, expect, it } from 'vitest'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import { createTenantLimiter } from '../../src/limits/rate-limit.js'
import type { SharedStore } from '../../src/shared-store.js'
import { get, ManualClock, token } from '../helpers/limiter-fixtures.js'

/** A store of the contract in process memory, on the test's clock, counting its calls. */
function mapStore(clock: ManualClock): SharedStore & { calls: number } {
  const entries = new Map<string, { count: number; expiresAt: number }>()
  const store = {
    calls: 0,
    async increment(key: string, amount: number, ttlMs: number) {
      store.calls += 1
      const at = clock.now()
      let entry = entries.get(key)
      if (entry === undefined || entry.expiresAt <= at) {
        entry = { count: 0, expiresAt: at + ttlMs }
        entries.set(key, entry)
      }
      entry.count += amount
      return { count: entry.count, msBeforeReset: entry.expiresAt - at }
    },
    async claimOnce(): Promise<boolean> {
      throw new Error('not used by the limiter')
    },
  }
  return store
}

describe('a tenant spent in several windows, with a shared store', () => {
  it('is refused from memory with the Retry-After of the window that resets last', async () => {
    const clock = new ManualClock()
    const store = mapStore(clock)
    const limiter = createTenantLimiter(
      normalizeRateLimitOptions({
        windows: [
          { points: 1, durationSeconds: 10 },
          { points: 1, durationSeconds: 60 },
        ],
        store: { shared: store },
      }),
      { emit: undefined, clock },
    )
    const attempt = () =>
      limiter.consume({ id: 'acme', plan: undefined }, get, token).then(
        () => ({ status: 200, retryAfter: undefined }),
        (error: { status: number; headers: Record<string, string> }) => ({
          status: error.status,
          retryAfter: error.headers['Retry-After'],
        }),
      )
    // One request spends both windows.
    expect((await attempt()).status).toBe(200)
    const calls = store.calls
    expect(await attempt()).toEqual({ status: 429, retryAfter: '60' })
    // Decided from memory, without the store.
    expect(store.calls).toBe(calls)
    clock.advance(10_000)
    // The 10-second window has reset; the minute has not.
    expect(await attempt()).toMatchObject({ status: 429, retryAfter: '50' })
    clock.advance(50_000)
    expect((await attempt()).status).toBe(200)
  })
})
