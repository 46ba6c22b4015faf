/**
 * How a page of a full reload (or a direct lookup) combines Redis's copy of an entry with this
 * instance's (`applyStored`), and what a reload does with entries no page returned: the rules
 * that used to be `mergeSnapshot`'s, now applied page by page. Redis is not trusted to say an
 * entry is gone; only a removal (a tombstone, an unrevoke queued here) lets one go early.
 */
import { describe, expect, it } from 'vitest'
import { identityOf, type RevocationEntry, RevocationList } from '../../src/revocation/list.js'
import { applyStored, type ReloadState } from '../../src/revocation/redis-reload.js'
import type { PendingWrites } from '../../src/revocation/redis-writes.js'

const NOW = 1_000_000_000
const entry = (value: string, notBefore = 100, expiresAt = NOW + 60_000): RevocationEntry => ({
  issuer: 'https://idp',
  kind: 'sub',
  value,
  notBefore,
  expiresAt,
})
const stored = (held: RevocationEntry) => `${held.notBefore}:${held.expiresAt}`

function stateWith(
  local: RevocationEntry[],
  queued: Record<string, boolean> = {},
  touched: Record<string, number> = {},
): ReloadState {
  const list = new RevocationList()
  for (const held of local) list.add(held)
  return {
    link: undefined as never,
    list,
    writes: { queued: (identity: string) => queued[identity] } as unknown as PendingWrites,
    touched: new Map(Object.entries(touched)),
    closed: () => false,
  }
}

describe('applyStored (one stored copy from a page of a reload)', () => {
  it("takes Redis's copy of an entry both hold, unless Redis lost data", () => {
    const state = stateWith([entry('bob', 300)])
    const copy = entry('bob', 200)
    expect(applyStored(state, identityOf(copy), stored(copy), 5, false, NOW)).toBe(undefined)
    expect(state.list.get(copy)?.notBefore).toBe(200)

    const healed = stateWith([entry('bob', 300)])
    const back = applyStored(healed, identityOf(copy), stored(copy), 5, true, NOW)
    expect(back).toMatchObject({ value: 'bob', notBefore: 300 })
    expect(healed.list.get(copy)?.notBefore).toBe(300)
  })

  it('keeps the stricter copy of an entry whose write is queued here', () => {
    const local = entry('bob', 300)
    const state = stateWith([local], { [identityOf(local)]: true })
    const back = applyStored(state, identityOf(local), stored(entry('bob', 200)), 5, false, NOW)
    expect(back).toMatchObject({ notBefore: 300 })
  })

  it('drops what Redis holds when an unrevoke is queued here', () => {
    const copy = entry('bob')
    const state = stateWith([], { [identityOf(copy)]: false })
    applyStored(state, identityOf(copy), stored(copy), 5, false, NOW)
    expect(state.list.size).toBe(0)
  })

  it('does not load an entry that has expired', () => {
    const state = stateWith([])
    const copy = entry('bob', 100, NOW)
    applyStored(state, identityOf(copy), stored(copy), 5, false, NOW)
    expect(state.list.size).toBe(0)
  })

  it('ignores a copy older than a change to the same entry already applied here', () => {
    const copy = entry('bob')
    const state = stateWith([], {}, { [identityOf(copy)]: 9 })
    applyStored(state, identityOf(copy), stored(copy), 8, false, NOW)
    expect(state.list.size).toBe(0)
    applyStored(state, identityOf(copy), stored(copy), 9, false, NOW)
    expect(state.list.size).toBe(1)
  })

  it('ignores fields and values a foreign writer left', () => {
    const state = stateWith([])
    applyStored(state, 'not json', `100:${NOW + 1000}`, 1, false, NOW)
    applyStored(state, identityOf(entry('bob')), 'no-colon', 1, false, NOW)
    applyStored(state, JSON.stringify(['i', 'email', 'v']), `100:${NOW + 1000}`, 1, false, NOW)
    expect(state.list.size).toBe(0)
  })
})
