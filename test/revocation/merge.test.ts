import { describe, expect, it } from 'vitest'
import { identityOf, type RevocationEntry } from '../../src/revocation/list.js'
import { mergeSnapshot } from '../../src/revocation/merge.js'

const NOW = 1_000_000
const entry = (value: string, notBefore = 100, expiresAt = NOW + 60_000): RevocationEntry => ({
  issuer: 'https://idp',
  kind: 'sub',
  value,
  notBefore,
  expiresAt,
})
const view = (
  stored: RevocationEntry[],
  options: { removed?: RevocationEntry[]; dataLoss?: boolean } = {},
) => ({
  stored: new Map(stored.map((held) => [identityOf(held), held])),
  removed: new Set((options.removed ?? []).map(identityOf)),
  dataLoss: options.dataLoss ?? false,
})
const values = (entries: readonly RevocationEntry[]) => entries.map((held) => held.value).sort()

describe('mergeSnapshot', () => {
  it('keeps and writes back an entry Redis lacks without a tombstone', () => {
    const merged = mergeSnapshot([entry('bob')], view([entry('alice')]), new Map(), NOW)
    expect(values(merged.entries)).toEqual(['alice', 'bob'])
    expect(values(merged.writeBack)).toEqual(['bob'])
  })

  it('keeps an entry whose write is queued while a snapshot without it arrives', () => {
    const bob = entry('bob')
    const merged = mergeSnapshot([bob], view([]), new Map([[identityOf(bob), true]]), NOW)
    expect(merged.entries).toEqual([bob])
  })

  it('lets an entry go when Redis has a tombstone for it', () => {
    const bob = entry('bob')
    const merged = mergeSnapshot([bob], view([], { removed: [bob] }), new Map(), NOW)
    expect(merged).toEqual({ entries: [], writeBack: [] })
  })

  it('keeps an entry revoked again here after a tombstone', () => {
    const bob = entry('bob')
    const merged = mergeSnapshot(
      [bob],
      view([], { removed: [bob] }),
      new Map([[identityOf(bob), true]]),
      NOW,
    )
    expect(merged.entries).toEqual([bob])
  })

  it('drops what Redis holds when an unrevoke is queued here', () => {
    const bob = entry('bob')
    const merged = mergeSnapshot([], view([bob]), new Map([[identityOf(bob), false]]), NOW)
    expect(merged.entries).toEqual([])
  })

  it('does not write back entries that have expired', () => {
    const merged = mergeSnapshot([entry('bob', 100, NOW)], view([]), new Map(), NOW)
    expect(merged).toEqual({ entries: [], writeBack: [] })
  })

  it("takes Redis's copy of an entry both hold, unless Redis lost data", () => {
    const local = entry('bob', 300)
    const stored = entry('bob', 200)
    expect(mergeSnapshot([local], view([stored]), new Map(), NOW)).toEqual({
      entries: [stored],
      writeBack: [],
    })
    const healed = mergeSnapshot([local], view([stored], { dataLoss: true }), new Map(), NOW)
    expect(healed.entries).toEqual([local])
    expect(healed.writeBack).toEqual([local])
  })
})
