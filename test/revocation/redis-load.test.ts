/**
 * A revocation list of production size, shared through a real `redis-server`. A fresh
 * instance loads it in pages and decides requests meanwhile by looking their tokens up in Redis;
 * a running instance catches up from the log of changes, reading only those, and reloads in full
 * only when the log cannot answer. No timing assertions: the test holds the load's pages back
 * itself and counts the scripts each instance runs (test/helpers/revocation-store.ts).
 */
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { RevocationOptions } from '../../src/revocation/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import { fillList, type WatchedStore, watchStore } from '../helpers/revocation-store.js'

/** Polling bound: generous, a loaded 2-core machine must never fail on it. Not a timing assertion. */
const LIMIT_MS = 20_000
/** Big enough to take many pages (1,000 fields each). */
const LARGE = 50_000

let issuer: TestIssuer
let server: RedisServer
let admin: Redis
let prefixCounter = 0
const gates: Gate[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  server = await startRedisServer()
  admin = await server.client()
})
afterAll(async () => {
  await issuer?.close()
  await server?.stop()
})
afterEach(async () => {
  for (const gate of gates.splice(0)) await gate.close()
})

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + LIMIT_MS
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`not within ${LIMIT_MS} ms: ${what}`)
}

interface Instance {
  readonly gate: Gate
  readonly store: WatchedStore
  readonly events: GateEvent[]
}

async function start(prefix: string, extra: Partial<RevocationOptions> = {}): Promise<Instance> {
  const store = watchStore(await server.client())
  const events: GateEvent[] = []
  const gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: { store: { redis: store.client as never }, keyPrefix: prefix, ...extra },
    onEvent: (event) => events.push(event),
  })
  gates.push(gate)
  return { gate, store, events }
}

const synced = (instance: Instance) =>
  instance.events.filter((event) => event.type === 'revocation_synced').length
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
const decided = (gate: Gate, token: string) =>
  gate.check(bearer(token)).then(
    () => 'admitted',
    (error: TollgateError) => error.reason,
  )
const issuedBefore = (claims: Record<string, unknown>) =>
  issuer.mint({ iat: Math.floor(Date.now() / 1000) - 10, ...claims })
const nextPrefix = () => `load${++prefixCounter}`
/** `gate.ready()` waits at most storeTimeoutMs; a large list may take a few of those. */
const held = (instance: Instance) =>
  until('the list is held', async () => (await instance.gate.ready()).revocation === 'held')

describe('a fresh instance on a large revocation list', () => {
  it('decides every request correctly while the list loads, without 503 under the default storeTimeoutMs', async () => {
    const prefix = nextPrefix()
    const revokedJtis = await fillList(admin, prefix, issuer.issuer('acme'), LARGE)
    const fresh = await start(prefix)
    // The load's first two pages come, the rest wait for the test.
    fresh.store.holdPages(2)
    await until('the load has begun', () => fresh.store.runs.page >= 2)
    const revoked = await Promise.all(
      [revokedJtis[0], revokedJtis[LARGE / 2], revokedJtis[LARGE - 1]].map((jti) =>
        issuedBefore({ jti }),
      ),
    )
    const clean = await Promise.all(['someone', 'someone-else'].map((sub) => issuedBefore({ sub })))
    const outcomes = await Promise.all([
      ...revoked.map((token) => decided(fresh.gate, token)),
      ...clean.map((token) => decided(fresh.gate, token)),
    ])
    // Decided before the load went past its second page: by looking the tokens up in Redis.
    expect(fresh.store.runs.page).toBeLessThan(LARGE / 1000)
    expect(synced(fresh)).toBe(0)
    expect(outcomes).toEqual(['revoked', 'revoked', 'revoked', 'admitted', 'admitted'])
    expect(fresh.store.runs.lookup).toBeGreaterThan(0)

    fresh.store.release()
    await held(fresh)
    expect(fresh.store.runs.page).toBeGreaterThanOrEqual(LARGE / 1000)
    expect(fresh.events).toContainEqual({ type: 'revocation_synced', entries: LARGE })
    // Held: requests are decided from memory, Redis is not asked any more.
    const lookups = fresh.store.runs.lookup
    expect(await decided(fresh.gate, await issuedBefore({ jti: revokedJtis[7] }))).toBe('revoked')
    expect(await decided(fresh.gate, await issuedBefore({ sub: 'third' }))).toBe('admitted')
    expect(fresh.store.runs.lookup).toBe(lookups)
  })

  it('enforces a revocation made elsewhere while it loads, after its token was looked up', async () => {
    const prefix = nextPrefix()
    await fillList(admin, prefix, issuer.issuer('acme'), 5000)
    const writer = await start(prefix)
    await held(writer)
    const fresh = await start(prefix)
    fresh.store.holdPages(1)
    await until('the load has begun', () => fresh.store.runs.page >= 1)
    const token = await issuedBefore({ sub: 'late' })
    expect(await decided(fresh.gate, token)).toBe('admitted')
    await writer.gate.revoke({ sub: 'late' })
    await until(
      'the fresh instance refuses it',
      async () => (await decided(fresh.gate, token)) === 'revoked',
    )
    fresh.store.release()
    await held(fresh)
    expect(await decided(fresh.gate, token)).toBe('revoked')
  })

  it('does not load entries that have expired, and drops them from Redis', async () => {
    const prefix = nextPrefix()
    await fillList(admin, prefix, issuer.issuer('acme'), 3000, 'live-')
    const past = Date.now() - 1000
    const expired: string[] = []
    for (let i = 0; i < 2000; i++) {
      expired.push(JSON.stringify([issuer.issuer('acme'), 'jti', `gone-${i}`]), `1:${past}`)
    }
    await admin.hset(`{${prefix}}:entries`, ...expired)
    const fresh = await start(prefix)
    await held(fresh)
    expect(fresh.events).toContainEqual({ type: 'revocation_synced', entries: 3000 })
    // 3,000 live entries and the epoch field.
    expect(await admin.hlen(`{${prefix}}:entries`)).toBe(3001)
  })
})

describe('a running instance catching up', () => {
  /** B resynchronizes every `resyncIntervalMs` (a second unless a test needs none meanwhile). */
  async function pair(
    size: number,
    resyncIntervalMs = 1000,
  ): Promise<[Instance, Instance, string]> {
    const prefix = nextPrefix()
    await fillList(admin, prefix, issuer.issuer('acme'), size)
    const a = await start(prefix)
    const b = await start(prefix, { resyncIntervalMs })
    await held(a)
    await held(b)
    return [a, b, prefix]
  }

  it('reads only the changes it missed from the log, not the list', async () => {
    const [a, b] = await pair(20_000)
    const pagesBefore = b.store.runs.page
    const readBefore = b.store.changesRead
    const syncsBefore = b.store.runs.sync
    const tokens = await Promise.all(['m1', 'm2', 'm3'].map((sub) => issuedBefore({ sub })))
    // B misses three messages (pub/sub is at most once), then gets the fourth: a gap.
    b.store.dropMessages(true)
    for (const sub of ['m1', 'm2', 'm3']) await a.gate.revoke({ sub })
    b.store.dropMessages(false)
    await a.gate.revoke({ sub: 'm4' })
    for (const token of tokens) {
      await until(
        'B refuses what it missed',
        async () => (await decided(b.gate, token)) === 'revoked',
      )
    }
    expect(b.store.runs.page).toBe(pagesBefore)
    // The four changes, and for each catch-up the change before them (which shows the log's
    // history is B's): a periodic one (every second here) may come between the revocations.
    expect(b.store.changesRead - readBefore).toBeGreaterThanOrEqual(3)
    expect(b.store.changesRead - readBefore).toBeLessThanOrEqual(
      4 + (b.store.runs.sync - syncsBefore),
    )
    // A periodic resynchronization when nothing changed reads that one change only. Counted from
    // the end of one (so that none is half-counted: a run counts its script when it starts and
    // the changes it read when it ends) to the end of the next.
    const syncedBefore = synced(b)
    await until('a periodic resynchronization', () => synced(b) > syncedBefore)
    const syncedNow = synced(b)
    const readNow = b.store.changesRead
    const syncsNow = b.store.runs.sync
    await until('the next periodic resynchronization', () => synced(b) > syncedNow)
    expect(b.store.changesRead - readNow).toBeLessThanOrEqual(b.store.runs.sync - syncsNow)
    expect(b.store.runs.page).toBe(pagesBefore)
  })

  it('reloads in full when the log cannot answer (the changes it missed were trimmed)', async () => {
    // No periodic catch-up that could read the missed change before the log is deleted.
    const [a, b, prefix] = await pair(5000, 600_000)
    const pagesBefore = b.store.runs.page
    const token = await issuedBefore({ sub: 'trimmed' })
    b.store.dropMessages(true)
    await a.gate.revoke({ sub: 'trimmed' })
    await admin.del(`{${prefix}}:log`)
    b.store.dropMessages(false)
    await a.gate.revoke({ sub: 'after' })
    await until(
      'B refuses the change it missed',
      async () => (await decided(b.gate, token)) === 'revoked',
    )
    // Only a full reload reads pages: catching up from the log reads none.
    expect(b.store.runs.page).toBeGreaterThan(pagesBefore)
  })

  it.each([
    ['the log was trimmed past the last change it applied', 'trim'],
    ['a change it missed has no entry in the log, between two that have', 'hole'],
  ] as const)('reloads in full when %s (not starting at sequence 0)', async (_case, damage) => {
    // No periodic catch-up that could read the missed changes before the log is damaged.
    const [a, b, prefix] = await pair(2000, 600_000)
    const log = `{${prefix}}:log`
    // B follows changes 1 and 2: its last applied change is 2, and the log holds it.
    for (const sub of ['seen-1', 'seen-2']) await a.gate.revoke({ sub })
    const seen = await issuedBefore({ sub: 'seen-2' })
    await until('B applied change 2', async () => (await decided(b.gate, seen)) === 'revoked')
    const pagesBefore = b.store.runs.page
    // B misses changes 3 and 4. Trimmed: the log keeps only 4. A hole: the log loses 3 alone.
    b.store.dropMessages(true)
    for (const sub of ['missed-3', 'missed-4']) await a.gate.revoke({ sub })
    const entries = (await admin.xrange(log, '-', '+')).map(([id]) => id)
    if (damage === 'trim') await admin.xtrim(log, 'MAXLEN', 1)
    else await admin.xdel(log, entries.at(-2) as string)
    expect(await admin.xlen(log)).toBe(damage === 'trim' ? 1 : entries.length - 1)
    b.store.dropMessages(false)
    // Change 5 reaches B: a gap, and the log cannot say what change 3 was.
    await a.gate.revoke({ sub: 'after-5' })
    for (const sub of ['missed-3', 'missed-4', 'after-5']) {
      const token = await issuedBefore({ sub })
      await until(`B refuses ${sub}`, async () => (await decided(b.gate, token)) === 'revoked')
    }
    expect(await decided(b.gate, await issuedBefore({ sub: 'never-revoked' }))).toBe('admitted')
    // Only a full reload reads pages: catching up from the log reads none.
    expect(b.store.runs.page).toBeGreaterThan(pagesBefore)
  })

  it('reloads in full when Redis lost its data (a new epoch), and writes back what it lacks', async () => {
    const own = await startRedisServer()
    try {
      const prefix = nextPrefix()
      const store = watchStore(await own.client())
      const events: GateEvent[] = []
      const gate = createGate({
        issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
        audience: 'gateway',
        revocation: { store: { redis: store.client as never }, keyPrefix: prefix },
        onEvent: (event) => events.push(event),
      })
      gates.push(gate)
      await gate.ready()
      await gate.revoke({ sub: 'kept' })
      const pagesBefore = store.runs.page
      await own.kill()
      await own.restart()
      const fresh = await own.client()
      const field = JSON.stringify([issuer.issuer('acme'), 'sub', 'kept'])
      await until(
        'the entry is written back',
        async () => (await fresh.hexists(`{${prefix}}:entries`, field)) === 1,
      )
      expect(store.runs.page).toBeGreaterThan(pagesBefore)
      // The test's Redis persists nothing: the gate says so (a warning without a listener).
      expect(events.map((event) => event.type)).toContain('revocation_store_volatile')
    } finally {
      await own.stop()
    }
  })

  it('notices at its next periodic catch-up that the entries hash was evicted, and writes it back', async () => {
    const [a, b, prefix] = await pair(1000)
    await a.gate.revoke({ sub: 'evicted' })
    const token = await issuedBefore({ sub: 'evicted' })
    await until('B refuses', async () => (await decided(b.gate, token)) === 'revoked')
    // What allkeys-lru may do: the hash goes, the sequence number and the log stay.
    await admin.del(`{${prefix}}:entries`)
    const field = JSON.stringify([issuer.issuer('acme'), 'sub', 'evicted'])
    await until(
      'the entry is written back',
      async () => (await admin.hexists(`{${prefix}}:entries`, field)) === 1,
    )
    expect(await decided(b.gate, token)).toBe('revoked')
  })

  it('sweeps expired entries out of Redis after its periodic catch-ups', async () => {
    const [, b, prefix] = await pair(0)
    const past = Date.now() - 1000
    const expired: string[] = []
    for (let i = 0; i < 500; i++) {
      expired.push(JSON.stringify([issuer.issuer('acme'), 'jti', `old-${i}`]), `1:${past}`)
    }
    await admin.hset(`{${prefix}}:entries`, ...expired)
    await admin.hset(`{${prefix}}:removed`, 'a tombstone past its time', String(past))
    const sweeps = b.store.runs.sweep
    await until(
      'the sweep dropped them',
      async () => (await admin.hlen(`{${prefix}}:entries`)) === 1,
    )
    await until('and the tombstone', async () => (await admin.exists(`{${prefix}}:removed`)) === 0)
    expect(b.store.runs.sweep).toBeGreaterThan(sweeps)
  })
})

describe('a frozen Redis (SIGSTOP) under several gateways', () => {
  it('keeps deciding from memory, queues what is made meanwhile, and a fresh instance answers 503 as documented', async () => {
    const own = await startRedisServer()
    let frozen = false
    try {
      const prefix = nextPrefix()
      await fillList(await own.client(), prefix, issuer.issuer('acme'), 5000)
      const open = async (extra: Partial<RevocationOptions> = {}, connected?: WatchedStore) => {
        const store = connected ?? watchStore(await own.client())
        const events: GateEvent[] = []
        const gate = createGate({
          issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
          audience: 'gateway',
          revocation: { store: { redis: store.client as never }, keyPrefix: prefix, ...extra },
          onEvent: (event) => events.push(event),
        })
        gates.push(gate)
        return { gate, store, events }
      }
      const a = await open()
      const b = await open()
      await held(a)
      await held(b)
      const revoked = await issuedBefore({ jti: 'bulk-42' })
      const clean = await issuedBefore({ sub: 'fine' })
      const during = await issuedBefore({ sub: 'made-while-frozen' })
      // Connected before the freeze: a new connection to a frozen server never completes.
      const freshStore = watchStore(await own.client())
      own.freeze()
      frozen = true
      expect(await decided(a.gate, revoked)).toBe('revoked')
      expect(await decided(b.gate, clean)).toBe('admitted')
      await expect(a.gate.revoke({ sub: 'made-while-frozen' })).resolves.toEqual({
        stored: 'queued',
      })
      expect(await decided(a.gate, during)).toBe('revoked')
      // A fresh instance cannot learn the list from a frozen Redis: 503 once storeTimeoutMs passed.
      const fresh = await open({ storeTimeoutMs: 200 }, freshStore)
      expect(await decided(fresh.gate, clean)).toBe('revocation_unavailable')
      own.thaw()
      frozen = false
      await until(
        'B learns the revocation queued on A',
        async () => (await decided(b.gate, during)) === 'revoked',
      )
      await held(fresh)
      expect(await decided(fresh.gate, during)).toBe('revoked')
      expect(await decided(fresh.gate, revoked)).toBe('revoked')
      expect(await decided(fresh.gate, clean)).toBe('admitted')
    } finally {
      if (frozen) own.thaw()
      await own.stop()
    }
  })
})
