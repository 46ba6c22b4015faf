/**
 * A slot of the tenant table is reused while the queue still holds an entry from its previous
 * tenant (freed by a lookup, not by the sweep). When the sweep reaches that entry it must judge
 * it by the slot's current expiry, not by the expiry queued: otherwise it drops the live window
 * of the tenant now in the slot, and that tenant starts over within its window. It takes several
 * windows to get there through the limiter: a tenant spent in its long window is refused after
 * a lookup in its short one, which frees the slot without opening another.
 */
import { describe, expect, it } from 'vitest'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import { createTenantLimiter, type TenantLimiter } from '../../src/limits/rate-limit.js'
import { TenantTable } from '../../src/limits/tenant-table.js'
import { get, ManualClock, token } from '../helpers/limiter-fixtures.js'

const T0 = 1_000_000

describe('a reused slot of the tenant table', () => {
  it('keeps the live entry of the tenant now in a slot when the sweep meets the entry its previous tenant queued', () => {
    const table = new TenantTable(100)
    const early = ['a', 'b', 'c', 'd']
    for (const tenant of early) table.open(tenant, 1, T0 + 1000, T0, false)
    const old = table.open('victim', 1, T0 + 1000, T0, false)
    // Lookups after the expiry free the slots (the queue still holds their entries).
    for (const tenant of early) expect(table.find(tenant, T0 + 1000)).toBe(-1)
    expect(table.find('victim', T0 + 1000)).toBe(-1)
    // The next opening sweeps four stale entries, then takes the last slot freed: the victim's.
    const slot = table.open('victim', 1, T0 + 2000, T0 + 1000, false)
    expect(slot).toBe(old)
    // Another tenant's opening sweeps the victim's old entry (expiry T0 + 1000).
    table.open('other', 1, T0 + 2500, T0 + 1500, false)
    expect(table.find('victim', T0 + 1500)).toBe(slot)
    expect(table.count(slot)).toBe(1)
    expect(table.expiresAt(slot)).toBe(T0 + 2000)
    expect(table.find('victim', T0 + 2000)).toBe(-1)
  })

  it('refuses the third request within the second at a limit of 2 a second, through the churn of several windows', async () => {
    const clock = new ManualClock()
    const limiter: TenantLimiter = createTenantLimiter(
      normalizeRateLimitOptions({
        windows: [
          { points: 2, durationSeconds: 1 },
          { points: 5, durationSeconds: 60 },
        ],
      }),
      { emit: undefined, clock },
    )
    const status = (id: string) =>
      limiter.consume({ id, plan: undefined }, get, token).then(
        () => 200,
        (error: { status: number }) => error.status,
      )
    const spent = ['s1', 's2', 's3', 's4']
    // Each spends its minute in three seconds: 2 + 2 + 1.
    for (const perSecond of [2, 2, 1]) {
      for (const id of spent) for (let n = 0; n < perSecond; n++) expect(await status(id)).toBe(200)
      if (perSecond === 1) expect(await status('victim')).toBe(200)
      clock.advance(1000)
    }
    // A second later: the spent tenants are refused by their minute, after a lookup that frees
    // their second's slot; the victim's new second reuses its own slot.
    for (const id of spent) expect(await status(id)).toBe(429)
    expect(await status('victim')).toBe(200)
    expect(await status('victim')).toBe(200)
    clock.advance(500)
    // A newcomer's window is opened (the sweep reaches the victim's old entry).
    expect(await status('newcomer')).toBe(200)
    expect(await status('victim')).toBe(429)
    clock.advance(499)
    expect(await status('victim')).toBe(429)
    clock.advance(1)
    expect(await status('victim')).toBe(200)
  })
})
