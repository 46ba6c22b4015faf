/**
 * The cache a fleet shares through Redis: a real redis-server on a free port, several token
 * sources standing for several instances, and the real provider counting token requests.
 */
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import {
  createTokenSource,
  type TokenSourceEvent,
  type TokenSourceOptions,
} from '../../src/client/index.js'
import { keycloak } from '../../src/index.js'
import { manualClock, SECRET, startPlatformProvider } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

let provider: RunningProvider
let redis: RedisServer
let client: Redis
beforeAll(async () => {
  provider = await startPlatformProvider({ accessTokenSeconds: 300 })
  redis = await startRedisServer()
  client = await redis.client()
})
afterAll(async () => {
  await redis.stop()
  await provider.close()
})
beforeEach(async () => {
  provider.resetGrants()
  await client.flushall()
})

const LIFETIME_MS = 300_000

function instance(clock = manualClock(), overrides: Partial<TokenSourceOptions> = {}) {
  const events: TokenSourceEvent[] = []
  const source = createTokenSource({
    issuer: keycloak({ authUrl: provider.url, realms: ['acme'] }),
    clientId: 'billing-sync',
    clientSecret: SECRET,
    scope: 'billing:read',
    sharedCache: { redis: client },
    retry: { attempts: 1, baseDelayMs: 0 },
    clock,
    onEvent: (event) => events.push(event),
    ...overrides,
  } as TokenSourceOptions)
  return { source, events, clock }
}

describe('shared cache', () => {
  it('makes one token request for a fleet of instances asking at once', async () => {
    const clock = manualClock()
    const fleet = Array.from({ length: 4 }, () => instance(clock).source)
    const tokens = await Promise.all(
      fleet.flatMap((source) => Array.from({ length: 250 }, () => source.get())),
    )
    expect(new Set(tokens).size).toBe(1)
    expect(provider.grantCount()).toBe(1)
  })

  it('lets an instance that has just started, its client still connecting, take the fleet’s token (no error, no request)', async () => {
    const clock = manualClock()
    const first = await instance(clock).source.get()
    // The guides' client: no offline queue, so ioredis refuses a command outright while it connects.
    const starting = redis.starting()
    try {
      expect(starting.status).toBe('connecting')
      const late = instance(clock, { sharedCache: { redis: starting } })
      expect(await late.source.get()).toBe(first)
      expect(provider.grantCount()).toBe(1)
      expect(late.events.map((event) => event.type)).not.toContain('shared_cache_error')
    } finally {
      starting.disconnect()
    }
  })

  it('lets a new instance start with the token the fleet already holds', async () => {
    const clock = manualClock()
    const first = await instance(clock).source.get()
    const late = instance(clock)
    expect(await late.source.get()).toBe(first)
    expect(provider.grantCount()).toBe(1)
    expect(late.events.find((event) => event.type === 'token_obtained')).toMatchObject({
      from: 'shared_cache',
    })
  })

  it('renews once for the fleet: the others take the renewed token from Redis', async () => {
    const clock = manualClock()
    const a = instance(clock)
    const b = instance(clock)
    const first = await a.source.get()
    expect(await b.source.get()).toBe(first)
    clock.advance(LIFETIME_MS - 30_000)
    const renewed = await a.source.get()
    expect(renewed).not.toBe(first)
    expect(await b.source.get()).toBe(renewed)
    expect(provider.grantCount()).toBe(2)
  })

  it('keeps serving its token, without a request, while another instance holds the renewal lock', async () => {
    const clock = manualClock()
    const { source, events } = instance(clock)
    const first = await source.get()
    const [key] = await client.keys('tollgate:token:*')
    await client.set(`${key}:lock`, 'another-instance', 'PX', 60_000)
    clock.advance(LIFETIME_MS * 0.8)
    for (let call = 0; call < 5; call++) expect(await source.get()).toBe(first)
    // Room for the background check (a Redis read and a refused lock) to finish on loopback; the
    // assertions are on counts, not on time.
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await source.get()).toBe(first)
    expect(provider.grantCount()).toBe(1)
    expect(events.filter((event) => event.type === 'token_requested')).toHaveLength(1)
  })

  it('starts with the token in Redis while another instance holds the renewal lock', async () => {
    const clock = manualClock()
    const first = await instance(clock).source.get()
    const [key] = await client.keys('tollgate:token:*')
    await client.set(`${key}:lock`, 'another-instance', 'PX', 60_000)
    // Past the renewal point, still usable: the new instance takes it instead of waiting.
    clock.advance(LIFETIME_MS * 0.8)
    const late = instance(clock)
    expect(await late.source.get()).toBe(first)
    expect(provider.grantCount()).toBe(1)
    expect(late.events.filter((event) => event.type === 'token_requested')).toHaveLength(0)
  })

  it('renews itself once the other instance’s lock is gone without a token', async () => {
    const clock = manualClock()
    // A first instance names the Redis key; then only another instance's lock is left there.
    await instance(clock).source.get()
    const [key] = await client.keys('tollgate:token:*')
    await client.del(key as string)
    await client.set(`${key}:lock`, 'another-instance', 'PX', 60_000)
    provider.resetGrants()
    const waiting = instance(clock, { sharedCache: { redis: client, lockMs: 60_000 } }).source.get()
    // The lock disappears (the other instance failed or died): the waiting one renews now, not
    // when its own wait of lockMs (far longer than this test's timeout) ends.
    await new Promise((resolve) => setTimeout(resolve, 120))
    await client.del(`${key}:lock`)
    expect(typeof (await waiting)).toBe('string')
    expect(provider.grantCount()).toBe(1)
  })

  it('keeps separate entries for separate scopes', async () => {
    const clock = manualClock()
    const billing = await instance(clock).source.get()
    const office = await instance(clock, { scope: 'office:records:read' }).source.get()
    expect(office).not.toBe(billing)
    expect(provider.grantCount()).toBe(2)
  })

  it('drops a refused token for the whole fleet, and only that token', async () => {
    const clock = manualClock()
    const a = instance(clock)
    const b = instance(clock)
    const first = await a.source.get()
    await b.source.get()
    expect(a.source.invalidate(first)).toBe(true)
    const second = await a.source.get()
    // b still holds the refused token in memory; once it is refused there too, b takes a's.
    expect(b.source.invalidate(first)).toBe(true)
    expect(await b.source.get()).toBe(second)
    expect(provider.grantCount()).toBe(2)
  })

  it('carries on with its own cache while Redis is down', async () => {
    const downClient = await redis.client()
    const { source, events } = instance(manualClock(), {
      sharedCache: { redis: downClient },
    })
    downClient.disconnect()
    expect(typeof (await source.get())).toBe('string')
    expect(events.some((event) => event.type === 'shared_cache_error')).toBe(true)
    expect(provider.grantCount()).toBe(1)
  })
})
