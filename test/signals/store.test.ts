import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { RedisSignalStore, StoreUnavailable } from '../../src/signals/store.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

let redis: RedisServer
beforeAll(async () => {
  redis = await startRedisServer()
})
afterAll(() => redis.stop())

describe('RedisSignalStore', () => {
  it('claims a SET once on a client still connecting, as right after a receiver starts (not unavailable)', async () => {
    // The guides' client: no offline queue, so ioredis refuses a command outright while it connects.
    const client = redis.starting()
    try {
      expect(client.status).toBe('connecting')
      const store = new RedisSignalStore(client, 'test:signals', 1000)
      const [first, again] = [store.claim('jti-1', 60_000), store.claim('jti-1', 60_000)]
      expect(await first).toBe(true)
      expect(await again).toBe(false)
    } finally {
      client.disconnect()
    }
  })

  it('is unavailable past its deadline when Redis does not answer', async () => {
    const client = await redis.client()
    const store = new RedisSignalStore(client, 'test:signals', 50)
    redis.freeze()
    try {
      await expect(store.claim('jti-2', 60_000)).rejects.toBeInstanceOf(StoreUnavailable)
    } finally {
      redis.thaw()
    }
  })
})
