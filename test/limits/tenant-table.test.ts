/**
 * The limiter's table of tenants in process memory: entries that expire without a
 * timer, a bound that refuses or evicts, and memory that the traffic reclaims. Time is a number
 * the test passes in.
 */
import { describe, expect, it } from 'vitest'

import { TenantTable } from '../../src/limits/tenant-table.js'

const T0 = 1_000_000

describe('TenantTable', () => {
  it('finds an entry until it expires, then forgets it', () => {
    const table = new TenantTable(10)
    const slot = table.open('acme', 3, T0 + 1000, T0, false)
    expect(table.find('acme', T0 + 999)).toBe(slot)
    expect(table.count(slot)).toBe(3)
    expect(table.expiresAt(slot)).toBe(T0 + 1000)
    expect(table.find('acme', T0 + 1000)).toBe(-1)
    expect(table.size).toBe(0)
  })

  it('adds to and takes back from an entry’s count', () => {
    const table = new TenantTable(10)
    const slot = table.open('acme', 1, T0 + 1000, T0, false)
    table.add(slot, 4)
    table.add(slot, -2)
    expect(table.count(table.find('acme', T0))).toBe(3)
  })

  it('refuses a new entry while full of entries that have not expired, and says when one will', () => {
    const table = new TenantTable(2)
    table.open('a', 1, T0 + 1000, T0, false)
    table.open('b', 1, T0 + 1500, T0 + 500, false)
    expect(table.open('c', 1, T0 + 1600, T0 + 600, false)).toBe(-1)
    expect(table.find('a', T0 + 600)).not.toBe(-1)
    expect(table.find('b', T0 + 600)).not.toBe(-1)
    expect(table.msUntilRoom(T0 + 600)).toBe(400)
    // Once the oldest expired, the new entry takes its room.
    expect(table.open('c', 1, T0 + 2000, T0 + 1000, false)).not.toBe(-1)
    expect(table.find('a', T0 + 1000)).toBe(-1)
    expect(table.size).toBe(2)
  })

  it('evicts the oldest entry for a new one when asked to', () => {
    const table = new TenantTable(2)
    table.open('a', 0, T0 + 5000, T0, true)
    table.open('b', 0, T0 + 5000, T0 + 1, true)
    expect(table.open('c', 0, T0 + 5000, T0 + 2, true)).not.toBe(-1)
    expect(table.find('a', T0 + 2)).toBe(-1)
    expect(table.find('b', T0 + 2)).not.toBe(-1)
    expect(table.find('c', T0 + 2)).not.toBe(-1)
  })

  it('reclaims the entries of tenants that went quiet as other entries are opened', () => {
    const table = new TenantTable(100_000)
    for (let index = 0; index < 1000; index++) table.open(`quiet-${index}`, 1, T0 + 1000, T0, false)
    expect(table.size).toBe(1000)
    // After they expired, each entry opened removes a few of them: no timer, no full scan.
    for (let index = 0; index < 250; index++) {
      table.open(`busy-${index}`, 1, T0 + 3000, T0 + 2000 + index, false)
    }
    expect(table.size).toBe(250)
  })

  it('keeps its queue near the live entries when entries of unequal lengths are renewed', () => {
    // A spent-tenant memory: one entry that lasts long holds the front of the queue, while
    // another tenant's short entries are renewed over and over behind it.
    const table = new TenantTable(10)
    table.open('long', 0, T0 + 3_600_000, T0, true)
    for (let index = 0; index < 100_000; index++) {
      const now = T0 + index * 10
      const slot = table.find('short', now)
      if (slot === -1) table.open('short', 0, now + 5, now, true)
    }
    expect(table.size).toBe(2)
    expect(table.find('long', T0 + 1_000_000)).not.toBe(-1)
    const queue = (table as unknown as { queueSlots: Int32Array }).queueSlots
    expect(queue.length).toBeLessThanOrEqual(512)
  })

  it('moves an entry’s expiry', () => {
    const table = new TenantTable(10)
    const slot = table.open('acme', 0, T0 + 1000, T0, true)
    table.expireAt(slot, T0 + 5000)
    expect(table.find('acme', T0 + 4000)).toBe(slot)
    expect(table.find('acme', T0 + 5000)).toBe(-1)
  })

  it('never holds more entries than its capacity, whatever the order of tenants and time', () => {
    const table = new TenantTable(50)
    let now = T0
    let seed = 7
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    let largest = 0
    for (let step = 0; step < 20_000; step++) {
      now += Math.floor(random() * 20)
      const tenant = `t${Math.floor(random() * 500)}`
      if (table.find(tenant, now) === -1) table.open(tenant, 1, now + 1000, now, random() < 0.5)
      largest = Math.max(largest, table.size)
    }
    expect(largest).toBe(50)
  })
})
