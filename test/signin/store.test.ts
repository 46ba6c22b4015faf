/**
 * The session store contract, for the memory store and the Redis store (a real redis-server):
 * the guarantees sign-in's single-flight refresh and logout rely on.
 */
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createMemorySessionStore,
  createRedisSessionStore,
  type SessionStore,
} from '../../src/signin/index.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

let redis: RedisServer
let client: Redis
let prefix = 0
beforeAll(async () => {
  redis = await startRedisServer()
  client = await redis.client()
})
afterAll(async () => {
  await redis.stop()
})

const STORES: ReadonlyArray<[string, () => SessionStore]> = [
  ['memory', () => createMemorySessionStore()],
  ['redis', () => createRedisSessionStore({ redis: client, keyPrefix: `test${prefix++}` })],
]

describe.each(STORES)('%s session store', (_name, makeStore) => {
  it('reads what was created, and nothing for an unknown key', async () => {
    const store = makeStore()
    await store.create('a', 'value-a', 60_000, [])
    expect(await store.read('a', 60_000)).toBe('value-a')
    expect(await store.read('b', 60_000)).toBeUndefined()
  })

  it('replaces a session only while the writer holds its lock', async () => {
    const store = makeStore()
    await store.create('a', 'v1', 60_000, [])
    expect(await store.replace('a', 'v2', 60_000, 'me')).toBe(false)
    expect(await store.lock('a', 'me', 10_000)).toBe(true)
    expect(await store.replace('a', 'v2', 60_000, 'other')).toBe(false)
    expect(await store.replace('a', 'v2', 60_000, 'me')).toBe(true)
    expect(await store.read('a', 60_000)).toBe('v2')
  })

  it('never brings back a session deleted while its refresh held the lock (a logout wins)', async () => {
    const store = makeStore()
    await store.create('a', 'v1', 60_000, [])
    expect(await store.lock('a', 'me', 10_000)).toBe(true)
    await store.delete('a')
    expect(await store.replace('a', 'v2', 60_000, 'me')).toBe(false)
    expect(await store.read('a', 60_000)).toBeUndefined()
  })

  it('gives a lock to one owner at a time, and lets only that owner release it', async () => {
    const store = makeStore()
    const attempts = await Promise.all(
      ['p1', 'p2', 'p3', 'p4'].map((owner) => store.lock('a', owner, 10_000)),
    )
    expect(attempts.filter(Boolean)).toHaveLength(1)
    const holder = ['p1', 'p2', 'p3', 'p4'][attempts.indexOf(true)] as string
    await store.unlock('a', holder === 'p1' ? 'p2' : 'p1')
    expect(await store.lock('a', 'p5', 10_000)).toBe(false)
    await store.unlock('a', holder)
    expect(await store.lock('a', 'p5', 10_000)).toBe(true)
  })

  it('finds sessions by index (sid, sub) for back-channel logout', async () => {
    const store = makeStore()
    await store.create('a', 'v', 60_000, ['sub.x', 'sid.1'])
    await store.create('b', 'v', 60_000, ['sub.x', 'sid.2'])
    expect((await store.indexed('sub.x')).sort()).toEqual(['a', 'b'])
    expect(await store.indexed('sid.2')).toEqual(['b'])
    expect(await store.indexed('sid.3')).toEqual([])
  })
})

describe('memory session store', () => {
  it('ends a session once its idle lifetime passes without a read, and a read extends it', async () => {
    let now = 0
    const store = createMemorySessionStore({ clock: { now: () => now } })
    await store.create('a', 'v', 1000, [])
    now = 900
    expect(await store.read('a', 1000)).toBe('v')
    now = 1800
    expect(await store.read('a', 1000)).toBe('v')
    now = 2900
    expect(await store.read('a', 1000)).toBeUndefined()
  })

  it('drops index entries with their sessions: deleted, expired or evicted (bounded memory)', async () => {
    let now = 0
    const store = createMemorySessionStore({ maxSessions: 100, clock: { now: () => now } })
    for (let round = 0; round < 1000; round++) {
      await store.create(`d${round}`, 'v', 60_000, [`sub.user${round}`, `sid.${round}`])
      await store.delete(`d${round}`)
    }
    expect(store.size()).toEqual({ sessions: 0, indexEntries: 0 })
    // Expired: gone from the indexes once seen expired (read, indexed, or a later create).
    for (let round = 0; round < 50; round++) {
      await store.create(`e${round}`, 'v', 1000, [`sub.user${round}`])
    }
    now = 2000
    for (let round = 0; round < 50; round++)
      expect(await store.read(`e${round}`, 1000)).toBeUndefined()
    expect(store.size()).toEqual({ sessions: 0, indexEntries: 0 })
    // Evicted beyond maxSessions: their entries go too.
    for (let round = 0; round < 1000; round++) {
      await store.create(`f${round}`, 'v', 60_000, [`sub.user${round}`, 'sub.everyone'])
    }
    expect(store.size()).toEqual({ sessions: 100, indexEntries: 200 })
    expect(await store.indexed('sub.everyone')).toHaveLength(100)
  })

  it('keeps at most maxSessions, dropping the oldest', async () => {
    const store = createMemorySessionStore({ maxSessions: 2 })
    await store.create('a', 'v', 60_000, [])
    await store.create('b', 'v', 60_000, [])
    await store.create('c', 'v', 60_000, [])
    expect(await store.read('a', 60_000)).toBeUndefined()
    expect(await store.read('c', 60_000)).toBe('v')
  })
})

describe('Redis session store', () => {
  it('extends the idle lifetime in Redis on every read', async () => {
    const store = createRedisSessionStore({ redis: client, keyPrefix: 'ttl' })
    await store.create('a', 'v', 1000, [])
    await store.read('a', 60_000)
    expect(await client.pttl('ttl:{a}')).toBeGreaterThan(1000)
  })

  it.each([
    ['a client that is not ioredis', { redis: {} }],
    ['a prefix with a brace', { redis: undefined, keyPrefix: 'a{b' }],
    ['a timeout of 0', { redis: undefined, timeoutMs: 0 }],
  ])('refuses %s', (_case, options) => {
    expect(() =>
      createRedisSessionStore({ ...options, redis: options.redis ?? client } as never),
    ).toThrow(TypeError)
  })
})
