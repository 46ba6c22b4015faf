/**
 * The limiter on a Redis Cluster of three masters started on loopback ports, through ioredis's
 * Cluster client: exact limits for tenants whose keys live on different shards, and a shard that
 * dies and comes back.
 */
import type { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { normalizeRateLimitOptions } from '../../src/limits/options.js'
import type { RateLimitOptions, TenantLimiter } from '../../src/limits/rate-limit.js'
import { createTenantLimiter } from '../../src/limits/rate-limit.js'
import { get, ManualClock, token } from '../helpers/limiter-fixtures.js'
import type { RedisCluster } from '../helpers/redis.js'
import { startRedisCluster } from '../helpers/redis.js'

const STORE_TIMEOUT_MS = 50

let cluster: RedisCluster

beforeAll(async () => {
  cluster = await startRedisCluster()
}, 60_000)

afterAll(async () => {
  await cluster?.stop()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function attempt(limiter: TenantLimiter, id: string) {
  try {
    await limiter.consume({ id, plan: undefined }, get, token)
    return { status: 200 }
  } catch (error) {
    return { status: (error as { status: number }).status }
  }
}

/**
 * One request whose deadline passes on the limiter's clock if the cluster has not answered it in
 * 20 ms: it must then be answered, whatever was asked of the cluster.
 */
async function attemptUntilDeadline(limiter: TenantLimiter, id: string, clock: ManualClock) {
  const pending = attempt(limiter, id)
  await Promise.race([pending, sleep(20)])
  clock.advance(STORE_TIMEOUT_MS)
  return pending
}

/** One tenant per master: the tenant id is the key's hash tag, so it alone decides the slot. */
async function tenantsOnEveryShard(keyPrefix: string) {
  const byPort = new Map<number, { id: string; slot: number; key: string }>()
  for (let index = 0; byPort.size < 3 && index < 500; index++) {
    const id = `tenant-${index}`
    const key = `${keyPrefix}:{${id}}:default:60`
    const { port, slot } = await cluster.ownerOf(key)
    if (!byPort.has(port)) byPort.set(port, { id, slot, key })
  }
  expect(byPort.size).toBe(3)
  return byPort
}

function limiterOn(
  client: Cluster,
  options: RateLimitOptions,
  events?: GateEvent[],
  clock?: ManualClock,
) {
  return createTenantLimiter(normalizeRateLimitOptions({ ...options, store: { redis: client } }), {
    emit: events === undefined ? undefined : (event) => events.push(event),
    ...(clock === undefined ? {} : { clock }),
  })
}

describe('createTenantLimiter (Redis Cluster, 3 masters)', () => {
  it('enforces exact limits for tenants whose keys live on different shards', async ({
    annotate,
  }) => {
    const keyPrefix = 'exact'
    const shards = await tenantsOnEveryShard(keyPrefix)
    const options: RateLimitOptions = {
      keyPrefix,
      windows: [{ points: 50, durationSeconds: 60 }],
      storeTimeoutMs: 5000,
      onStoreError: 'deny',
    }
    const limiters = [
      limiterOn(await cluster.client(), options),
      limiterOn(await cluster.client(), options),
    ]
    const tenants = [...shards.values()]
    const results = await Promise.all(
      Array.from({ length: 450 }, async (_, index) => {
        const { id } = tenants[index % 3] as { id: string }
        return { id, ...(await attempt(limiters[index % 2] as TenantLimiter, id)) }
      }),
    )
    const figures: string[] = []
    for (const [port, { id, slot, key }] of shards) {
      const mine = results.filter((result) => result.id === id)
      const admitted = mine.filter(({ status }) => status === 200).length
      expect(admitted).toBe(50)
      expect(mine.filter(({ status }) => status === 429)).toHaveLength(100)
      // The counter is on the owning master; the two others redirect (MOVED).
      for (const node of cluster.nodes) {
        const direct = await node.client()
        if (node.port === port) expect(Number(await direct.get(key))).toBeGreaterThan(50)
        else await expect(direct.get(key)).rejects.toThrow(/MOVED/)
      }
      figures.push(`${id} (slot ${slot}, port ${port}): ${admitted}/150 admitted`)
    }
    await annotate(`limit 50 per tenant, 2 Cluster clients: ${figures.join('; ')}`)
  })

  it('answers every request by its deadline while a shard is down, then returns to the cluster', async ({
    annotate,
  }) => {
    const keyPrefix = 'failover'
    const shards = await tenantsOnEveryShard(keyPrefix)
    const events: GateEvent[] = []
    const clock = new ManualClock()
    const limiter = limiterOn(
      await cluster.client(),
      {
        keyPrefix,
        windows: [{ points: 1000, durationSeconds: 60 }],
        storeTimeoutMs: STORE_TIMEOUT_MS,
        storeRetryIntervalMs: 200,
      },
      events,
      clock,
    )
    const [[deadPort, dead], [, alive]] = [...shards.entries()] as unknown as [
      [number, { id: string }],
      [number, { id: string }],
    ]
    expect((await attempt(limiter, dead.id)).status).toBe(200)
    const node = cluster.nodes.find(({ port }) => port === deadPort)
    if (node === undefined) throw new Error('no node')
    await node.kill()
    const statuses = new Set<number>()
    let attempts = 0
    try {
      // Past cluster-node-timeout (2 s): the cluster goes from "node unreachable" to CLUSTERDOWN.
      // Each request is answered once the limiter's clock passes its deadline, or before.
      const until = Date.now() + 3000
      while (Date.now() < until) {
        for (const id of [dead.id, alive.id]) {
          statuses.add((await attemptUntilDeadline(limiter, id, clock)).status)
          attempts++
        }
      }
    } finally {
      await node.restart()
    }
    expect([...statuses]).toEqual([200])
    expect(clock.pendingTimers).toBe(0)
    await annotate(`a master down for 3 s: ${attempts} requests, each answered by its deadline`)
    expect(events).toContainEqual({ type: 'limiter_fallback', engaged: true, policy: 'memory' })

    // Back on the cluster without a new limiter: released, then counted on the restarted master.
    const released = () =>
      events.filter((event) => event.type === 'limiter_fallback').at(-1)?.engaged === false
    await cluster.waitUntilHealthy()
    const until = Date.now() + 15_000
    while (!released()) {
      if (Date.now() > until) throw new Error('did not return to the cluster within 15 s')
      clock.advance(200)
      await attemptUntilDeadline(limiter, dead.id, clock)
      await sleep(50)
    }
    const direct = await node.client()
    const deadKey = `${keyPrefix}:{${dead.id}}:default:60`
    const count = async () => Number(await direct.get(deadKey))
    // Commands ioredis was still retrying when the shard came back may land late: wait for calm.
    let before = await count()
    for (let settled = -1; settled !== before; ) {
      settled = before
      await sleep(300)
      before = await count()
    }
    const eventsBefore = events.length
    expect((await attempt(limiter, dead.id)).status).toBe(200)
    expect(await count()).toBe(before + 1)
    expect(events.slice(eventsBefore)).toEqual([])
    await annotate(
      `fallback transitions: ${events
        .filter((event) => event.type === 'limiter_fallback')
        .map((event) => (event.engaged ? 'engaged' : 'released'))
        .join(' → ')}`,
    )
  })
})
