import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ReplayCache } from '../../src/dpop/replay.js'
import {
  capClaimsPerKey,
  createMemoryReplayCache,
  createRedisReplayCache,
  createSharedReplayCache,
} from '../../src/dpop/replay.js'
import type { SharedStore } from '../../src/shared-store.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

const JKT = 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs'
const OTHER_JKT = 'AzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs'

describe('createMemoryReplayCache', () => {
  it('accepts a jti once, and again once its time to live has passed', async () => {
    const cache = createMemoryReplayCache(1000)
    await cache.claim(JKT, 'a', 70_000, 0)
    await expect(cache.claim(JKT, 'a', 70_000, 69_999)).rejects.toMatchObject({
      code: 'ERR_DPOP_PROOF_INVALID',
      reason: 'dpop_replayed',
    })
    await expect(cache.claim(JKT, 'a', 70_000, 70_000)).resolves.toBeUndefined()
  })

  it('keeps the jtis of different keys apart', async () => {
    const cache = createMemoryReplayCache(1000)
    await cache.claim(JKT, 'same', 70_000, 0)
    await expect(cache.claim(OTHER_JKT, 'same', 70_000, 0)).resolves.toBeUndefined()
  })

  it('answers 503 rather than forget an unexpired proof when full, and recovers as entries expire', async () => {
    const cache = createMemoryReplayCache(1000)
    for (let index = 0; index < 1000; index++) await cache.claim(JKT, `jti-${index}`, 70_000, index)
    await expect(cache.claim(JKT, 'one-more', 70_000, 1000)).rejects.toMatchObject({
      code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
      status: 503,
    })
    await expect(cache.claim(JKT, 'jti-0', 70_000, 1000)).rejects.toMatchObject({
      reason: 'dpop_replayed',
    })
    await expect(cache.claim(JKT, 'one-more', 70_000, 70_000)).resolves.toBeUndefined()
  })
})

describe('createMemoryReplayCache per key', () => {
  it('refuses one key past its share (503) while other keys are still accepted', async () => {
    const cache = createMemoryReplayCache(1000, 100)
    for (let index = 0; index < 100; index++) await cache.claim(JKT, `jti-${index}`, 70_000, index)
    await expect(cache.claim(JKT, 'one-more', 70_000, 100)).rejects.toMatchObject({
      code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
      status: 503,
    })
    await expect(cache.claim(OTHER_JKT, 'jti-0', 70_000, 100)).resolves.toBeUndefined()
    // Still remembered, never forgotten early.
    await expect(cache.claim(JKT, 'jti-0', 70_000, 100)).rejects.toMatchObject({
      reason: 'dpop_replayed',
    })
    // Once its oldest proofs expire, the key has room again.
    await expect(cache.claim(JKT, 'one-more', 70_000, 70_000)).resolves.toBeUndefined()
  })
})

describe('capClaimsPerKey (the Redis and shared stores)', () => {
  /** A store that accepts every claim, counting the claims of each key it was sent. */
  function countingCache(): ReplayCache & { readonly sent: Map<string, number> } {
    const sent = new Map<string, number>()
    return {
      sent,
      async claim(jkt) {
        sent.set(jkt, (sent.get(jkt) ?? 0) + 1)
      },
    }
  }

  it('sends at most maxPerKey claims of one key per window to the store, then answers 503 until the window ends', async () => {
    const store = countingCache()
    const cache = capClaimsPerKey(store, 1000, 100)
    for (let index = 0; index < 100; index++) await cache.claim(JKT, `jti-${index}`, 70_000, index)
    for (let index = 0; index < 400; index++) {
      await expect(cache.claim(JKT, `fresh-${index}`, 70_000, 100)).rejects.toMatchObject({
        code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
        status: 503,
        // The window opened at 0 and lasts 70 s: the client can retry once it ends.
        headers: { 'Retry-After': '70' },
      })
    }
    expect(store.sent.get(JKT)).toBe(100)
    // Another key is not affected.
    await expect(cache.claim(OTHER_JKT, 'jti-0', 70_000, 100)).resolves.toBeUndefined()
    // A new window from the end of the last one.
    await expect(cache.claim(JKT, 'next', 70_000, 70_000)).resolves.toBeUndefined()
    expect(store.sent.get(JKT)).toBe(101)
  })

  it('counts a claim the store refused as replayed or failed: it was a write all the same', async () => {
    let calls = 0
    const failing: ReplayCache = {
      async claim() {
        calls += 1
        throw new Error('store down')
      },
    }
    const cache = capClaimsPerKey(failing, 1000, 100)
    for (let index = 0; index < 150; index++) {
      await cache.claim(JKT, `jti-${index}`, 70_000, 0).catch(() => undefined)
    }
    expect(calls).toBe(100)
  })

  it('holds the windows of at most maxKeys keys, dropping the oldest', async () => {
    const store = countingCache()
    const cache = capClaimsPerKey(store, 2, 100)
    const keys = ['A', 'B', 'C'].map((letter) => letter.repeat(43))
    for (let index = 0; index < 100; index++)
      await cache.claim(keys[0] as string, `${index}`, 70_000, 0)
    await expect(cache.claim(keys[0] as string, 'x', 70_000, 1)).rejects.toMatchObject({
      status: 503,
    })
    await cache.claim(keys[1] as string, 'x', 70_000, 2)
    // A third key pushes out the first one's window: it may start afresh.
    await cache.claim(keys[2] as string, 'x', 70_000, 3)
    await expect(cache.claim(keys[0] as string, 'y', 70_000, 4)).resolves.toBeUndefined()
  })
})

describe('createRedisReplayCache', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('accepts a jti once across every cache sharing the server, with the window as expiry', async () => {
    const [first, second] = [await redis.client(), await redis.client()]
    const options = { keyPrefix: 'test:dpop', storeTimeoutMs: 1000 }
    await createRedisReplayCache(first, options).claim(JKT, 'shared', 70_000, 0)
    await expect(
      createRedisReplayCache(second, options).claim(JKT, 'shared', 70_000, 0),
    ).rejects.toMatchObject({ reason: 'dpop_replayed' })
    const keys = await first.keys('test:dpop:*')
    expect(keys).toHaveLength(1)
    const ttl = await first.pttl(keys[0] as string)
    expect(ttl).toBeGreaterThan(60_000)
    expect(ttl).toBeLessThanOrEqual(70_000)
  })

  it('refuses a replay the store answered while the event loop was busy past the deadline (not 503)', async () => {
    const client = await redis.client()
    const cache = createRedisReplayCache(client, { keyPrefix: 'test:busy', storeTimeoutMs: 20 })
    await cache.claim(JKT, 'busy', 70_000, 0)
    const replay = cache.claim(JKT, 'busy', 70_000, 0)
    // A synchronous task longer than the deadline: the answer arrives meanwhile, unread.
    const until = performance.now() + 120
    while (performance.now() < until) {}
    await expect(replay).rejects.toMatchObject({ reason: 'dpop_replayed' })
  })

  it('waits within its deadline for a client still connecting, as right after a gateway starts (not 503)', async () => {
    // The guides' client: no offline queue, so ioredis refuses a command outright while it connects.
    const client = redis.starting()
    try {
      expect(client.status).toBe('connecting')
      const cache = createRedisReplayCache(client, {
        keyPrefix: 'test:start',
        storeTimeoutMs: 1000,
      })
      const [first, replay] = [
        cache.claim(JKT, 'early', 70_000, 0),
        cache.claim(JKT, 'early', 70_000, 0),
      ]
      await expect(first).resolves.toBeUndefined()
      await expect(replay).rejects.toMatchObject({ reason: 'dpop_replayed' })
    } finally {
      client.disconnect()
    }
  })

  it('answers 503 at once from a client that is not connecting (lazyConnect, never told to), not after its deadline', async () => {
    const client = redis.starting({ lazyConnect: true })
    const cache = createRedisReplayCache(client, { keyPrefix: 'test:closed', storeTimeoutMs: 5000 })
    const startedAt = performance.now()
    await expect(cache.claim(JKT, 'never', 70_000, 0)).rejects.toMatchObject({
      code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
    })
    expect(performance.now() - startedAt).toBeLessThan(1000)
  })

  it('answers 503 when the store does not answer within its deadline', async () => {
    const client = await redis.client()
    const cache = createRedisReplayCache(client, { keyPrefix: 'test:frozen', storeTimeoutMs: 50 })
    redis.freeze()
    try {
      await expect(cache.claim(JKT, 'late', 70_000, 0)).rejects.toMatchObject({
        code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
        headers: { 'Retry-After': '1' },
      })
    } finally {
      redis.thaw()
    }
  })
})

describe('createSharedReplayCache', () => {
  /** The contract's claimOnce over a Map, recording the keys and ttlMs it was asked for. */
  function mapStore(): SharedStore & { claims: Array<[string, number]> } {
    const seen = new Set<string>()
    const claims: Array<[string, number]> = []
    return {
      claims,
      increment: () => Promise.reject(new Error('not used by the replay cache')),
      async claimOnce(key, ttlMs) {
        claims.push([key, ttlMs])
        if (seen.has(key)) return false
        seen.add(key)
        return true
      },
    }
  }
  const options = { keyPrefix: 'test:dpop', storeTimeoutMs: 1000 }
  const storeWith = (claimOnce: SharedStore['claimOnce']): SharedStore => ({
    increment: () => Promise.reject(new Error('unused')),
    claimOnce,
  })

  it('accepts a jti once across every cache sharing the store', async () => {
    const shared = mapStore()
    await createSharedReplayCache(shared, options).claim(JKT, 'shared', 70_000, 0)
    await expect(
      createSharedReplayCache(shared, options).claim(JKT, 'shared', 70_000, 0),
    ).rejects.toMatchObject({ code: 'ERR_DPOP_PROOF_INVALID', reason: 'dpop_replayed' })
    await expect(
      createSharedReplayCache(shared, options).claim(OTHER_JKT, 'shared', 70_000, 0),
    ).resolves.toBeUndefined()
  })

  it('claims the key the Redis store sets, with the window as ttlMs', async () => {
    const shared = mapStore()
    const set: unknown[][] = []
    const redis = {
      set: async (...args: unknown[]) => {
        set.push(args)
        return 'OK'
      },
    }
    await createSharedReplayCache(shared, options).claim(JKT, 'same', 70_000, 0)
    await createRedisReplayCache(redis, options).claim(JKT, 'same', 70_000, 0)
    expect(shared.claims).toEqual([[set[0]?.[0], 70_000]])
    expect(shared.claims[0]?.[0]).toMatch(/^test:dpop:[A-Za-z0-9_-]{43}$/)
  })

  it.each([
    ['rejects', () => Promise.reject(new Error('counter service answered 502'))],
    [
      'throws instead of returning a promise',
      () => {
        throw new Error('no binding')
      },
    ],
    ['resolves something else than a boolean', async () => 'true' as unknown as boolean],
    ['resolves nothing', async () => undefined as unknown as boolean],
  ] as const)('answers 503 with Retry-After when claimOnce %s', async (_name, claimOnce) => {
    await expect(
      createSharedReplayCache(storeWith(claimOnce), options).claim(JKT, 'x', 70_000, 0),
    ).rejects.toMatchObject({
      code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
      status: 503,
      headers: { 'Retry-After': '1' },
    })
  })

  it('names what a malformed answer was, in the error it keeps as cause', async () => {
    const error = await createSharedReplayCache(
      storeWith(async () => 1 as unknown as boolean),
      options,
    )
      .claim(JKT, 'x', 70_000, 0)
      .catch((caught: unknown) => caught)
    expect((error as { cause: Error }).cause.message).toBe(
      'SharedStore.claimOnce() resolved number 1, not a boolean',
    )
  })

  it('answers 503 when the store does not answer within its deadline', async () => {
    const cache = createSharedReplayCache(
      storeWith(() => new Promise(() => {})),
      { keyPrefix: 'test:dpop', storeTimeoutMs: 1 },
    )
    await expect(cache.claim(JKT, 'late', 70_000, 0)).rejects.toMatchObject({
      code: 'ERR_DPOP_REPLAY_UNAVAILABLE',
    })
  })
})
