/**
 * Revocation shared through a real `redis-server` this file starts on a free loopback port, kills
 * and restarts, and through a real three-master Redis Cluster. Several gates with their own ioredis
 * clients stand for several gateway instances.
 */
import { performance } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { RevocationOptions } from '../../src/revocation/options.js'
import { RedisLink } from '../../src/revocation/redis-link.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { resetWarningsForTests } from '../../src/warnings.js'

import {
  failFast,
  type RedisCluster,
  type RedisServer,
  startRedisCluster,
  startRedisServer,
} from '../helpers/redis.js'

/** Polling bound: generous, a loaded 2-core machine must never fail on it. Not a timing assertion. */
const LIMIT_MS = 10_000

let issuer: TestIssuer
let server: RedisServer
let prefixCounter = 0
const gates: Gate[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  server = await startRedisServer()
})
afterAll(async () => {
  await issuer?.close()
  await server?.stop()
})
afterEach(async () => {
  for (const gate of gates.splice(0)) await gate.close()
})

interface Instance {
  readonly gate: Gate
  readonly events: GateEvent[]
  /** When each event arrived (performance.now()). */
  readonly at: WeakMap<GateEvent, number>
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + LIMIT_MS
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`not within ${LIMIT_MS} ms: ${what}`)
}

const synced = (instance: Instance) => () =>
  instance.events.some((event) => event.type === 'revocation_synced')

async function instance(
  redis: unknown,
  keyPrefix: string,
  extra: Partial<RevocationOptions> = {},
): Promise<Instance> {
  const events: GateEvent[] = []
  const at = new WeakMap<GateEvent, number>()
  const gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: {
      store: { redis: redis as never },
      keyPrefix,
      callbacks: { clientIds: 'gateway' },
      ...extra,
    },
    onEvent: (event) => {
      at.set(event, performance.now())
      events.push(event)
    },
  })
  gates.push(gate)
  const created = { gate, events, at }
  await until('the first synchronization', synced(created))
  return created
}

async function pair(extra: Partial<RevocationOptions> = {}): Promise<[Instance, Instance]> {
  prefixCounter += 1
  const prefix = `rv${prefixCounter}`
  return [
    await instance(await server.client(), prefix, extra),
    await instance(await server.client(), prefix, extra),
  ]
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
const decided = (gate: Gate, token: string) =>
  gate.check(bearer(token)).then(
    () => 'admitted',
    (error: TollgateError) => error.reason,
  )
const issuedBefore = (claims: Record<string, unknown>) =>
  issuer.mint({ iat: Math.floor(Date.now() / 1000) - 10, ...claims })

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

describe('revocation shared through Redis', () => {
  it('enforces a revocation made on one instance at the other, and reports how long it took', async ({
    annotate,
  }) => {
    const [a, b] = await pair()
    const token = await issuedBefore({ sub: 'alice' })
    expect(await decided(b.gate, token)).toBe('admitted')
    await expect(a.gate.revoke({ sub: 'alice' })).resolves.toEqual({ stored: 'redis' })
    await until('instance B refuses', async () => (await decided(b.gate, token)) === 'revoked')

    // The distribution, from a.revoke() being called to B applying the change (its event).
    const rounds = 200
    const elapsed: number[] = []
    for (let i = 0; i < rounds; i++) {
      const seen = b.events.length
      const started = performance.now()
      await a.gate.revoke({ jti: `token-${i}` })
      let received: GateEvent | undefined
      await until('B learns the revocation', () => {
        received = b.events.slice(seen).find((event) => event.type === 'revocation_received')
        return received !== undefined
      })
      elapsed.push((b.at.get(received as GateEvent) as number) - started)
    }
    elapsed.sort((x, y) => x - y)
    const figures = [50, 90, 99].map((p) => `p${p} ${percentile(elapsed, p).toFixed(2)} ms`)
    await annotate(
      `propagation over ${rounds} revocations (revoke() called → peer enforcing): ${figures.join(', ')}, max ${(elapsed.at(-1) as number).toFixed(2)} ms`,
    )
    const received = b.events.filter((event) => event.type === 'revocation_received')
    expect(received.length).toBeGreaterThanOrEqual(rounds + 1)
  })

  it('enforces an unrevoke everywhere', async () => {
    const [a, b] = await pair()
    const token = await issuedBefore({ sid: 'session-1' })
    await a.gate.revoke({ sid: 'session-1' })
    await until('B refuses', async () => (await decided(b.gate, token)) === 'revoked')
    await b.gate.unrevoke({ sid: 'session-1' })
    await until('A admits again', async () => (await decided(a.gate, token)) === 'admitted')
    // The tombstone that tells an instance which missed the message to let the entry go.
    const admin = await server.client()
    const tombstone = await admin.hget(
      `{rv${prefixCounter}}:removed`,
      JSON.stringify([issuer.issuer('acme'), 'sid', 'session-1']),
    )
    expect(Number(tombstone)).toBeGreaterThan(Date.now())
  })

  it('keeps the tombstone of an unrevoke as long as the entry it removed would have lived', async () => {
    const [a] = await pair()
    const admin = await server.client()
    const field = JSON.stringify([issuer.issuer('acme'), 'sub', 'nora'])
    const notBefore = Math.floor(Date.now() / 1000) + 3000
    await a.gate.revoke({ sub: 'nora', notBefore })
    const expiresAt = Number(
      ((await admin.hget(`{rv${prefixCounter}}:entries`, field)) as string).split(':')[1],
    )
    expect(expiresAt).toBeGreaterThan(notBefore * 1000)
    // Redis lost the entry (an older snapshot): only this instance knows how long it lives.
    await admin.hdel(`{rv${prefixCounter}}:entries`, field)
    await a.gate.unrevoke({ sub: 'nora' })
    expect(Number(await admin.hget(`{rv${prefixCounter}}:removed`, field))).toBe(expiresAt)
  })

  it('gives a new instance every revocation already made (full synchronization)', async () => {
    const [a] = await pair()
    await a.gate.revoke({ sub: 'bob' })
    const late = await instance(await server.client(), `rv${prefixCounter}`)
    expect(await decided(late.gate, await issuedBefore({ sub: 'bob' }))).toBe('revoked')
  })

  it('catches up with a change whose message was lost (a gap in the sequence)', async () => {
    const [a, b] = await pair()
    const admin = await server.client()
    const prefix = `rv${prefixCounter}`
    // A change stored without its message, as when a subscriber misses one.
    await admin.hset(
      `{${prefix}}:entries`,
      JSON.stringify([issuer.issuer('acme'), 'sub', 'carol']),
      `${Math.floor(Date.now() / 1000) + 1}:${Date.now() + 3_600_000}`,
    )
    await admin.incr(`{${prefix}}:seq`)
    const carol = await issuedBefore({ sub: 'carol' })
    expect(await decided(b.gate, carol)).toBe('admitted')
    await a.gate.revoke({ sub: 'someone-else' })
    await until('B resynchronizes', async () => (await decided(b.gate, carol)) === 'revoked')
  })

  it('ignores malformed messages and entries from a foreign writer on its keys', async () => {
    const [a, b] = await pair()
    const admin = await server.client()
    const prefix = `rv${prefixCounter}`
    for (const message of [
      'garbage',
      '[]',
      '{"seq":1}',
      JSON.stringify([1, 'drop', 'x', 0, 0, 0, 'o']),
      JSON.stringify([1, 'add', 'not json', 0, 0, 0, 'o']),
      JSON.stringify([1, 'add', JSON.stringify(['i', 'email', 'v']), 0, 0, 0, 'o']),
      JSON.stringify([1, 'add', JSON.stringify([1, 'sub', 'v']), 0, 0, 0, 'o']),
      JSON.stringify([1, 'add', JSON.stringify(['i', 'sub', 'v']), 'nb', null, 0, 'o']),
    ]) {
      await admin.publish(`${prefix}:events`, message)
    }
    await admin.hset(`{${prefix}}:entries`, 'not json', '1:99999999999999')
    await admin.hset(`{${prefix}}:entries`, JSON.stringify(['i', 'sub', 'x']), 'no-colon')
    const token = await issuedBefore({ sub: 'judy' })
    await a.gate.revoke({ sub: 'judy' })
    await until(
      'B still learns genuine revocations',
      async () => (await decided(b.gate, token)) === 'revoked',
    )
    const late = await instance(await server.client(), prefix)
    expect(await decided(late.gate, token)).toBe('revoked')
  })

  it('synchronizes through a client created with lazyConnect', async () => {
    prefixCounter += 1
    const lazy = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true, ...failFast })
    lazy.on('error', () => {})
    try {
      const a = await instance(await server.client(), `rv${prefixCounter}`)
      const b = await instance(lazy, `rv${prefixCounter}`)
      const token = await issuedBefore({ sub: 'ivan' })
      await a.gate.revoke({ sub: 'ivan' })
      await until('B refuses', async () => (await decided(b.gate, token)) === 'revoked')
    } finally {
      lazy.disconnect()
    }
  })

  it('waits within its deadline for a client still connecting, as right after a gateway starts (no store error)', async () => {
    // The guides' client: no offline queue, so ioredis refuses a command outright while it connects.
    const client = server.starting()
    const events: GateEvent[] = []
    try {
      expect(client.status).toBe('connecting')
      const link = new RedisLink(client, { storeTimeoutMs: 1000, keyPrefix: 'rv-start' }, (event) =>
        events.push(event),
      )
      expect(await link.claimOnce('logout-token', 60_000)).toBe(true)
      expect(await link.claimOnce('logout-token', 60_000)).toBe(false)
      expect(events).toEqual([])
    } finally {
      client.disconnect()
    }
  })

  it('shares the replay memory of logout tokens between instances', async () => {
    const [a, b] = await pair()
    const token = await issuer.mintLogoutToken({ sid: 'session-2' })
    const post = (gate: Gate) =>
      gate.backchannelLogout({
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        method: 'POST',
        body: `logout_token=${token}`,
      })
    expect((await post(a.gate)).status).toBe(200)
    expect((await post(b.gate)).status).toBe(400)
    expect(b.events).toContainEqual(
      expect.objectContaining({ type: 'logout_refused', reason: 'replayed' }),
    )
  })
})

describe('revocation while Redis is down', () => {
  let down = false
  const kill = async () => {
    down = true
    await server.kill()
  }
  const restart = async () => {
    await server.restart()
    down = false
  }
  afterEach(async () => {
    if (down) await restart()
  })

  it('keeps enforcing what it knows, queues what is made meanwhile, and heals a Redis restarted empty', async () => {
    const [a, b] = await pair()
    const before = await issuedBefore({ sub: 'dave' })
    const during = await issuedBefore({ sub: 'erin' })
    await a.gate.revoke({ sub: 'dave' })
    await until('B refuses dave', async () => (await decided(b.gate, before)) === 'revoked')

    await kill()
    await until('B notices', () =>
      b.events.some((event) => event.type === 'revocation_fallback' && event.engaged),
    )
    expect(await decided(b.gate, before)).toBe('revoked')
    await expect(a.gate.revoke({ sub: 'erin' })).resolves.toEqual({ stored: 'queued' })
    expect(await decided(a.gate, during)).toBe('revoked')
    expect(await decided(b.gate, during)).toBe('admitted')

    // A fresh server: no persistence, so Redis comes back empty.
    await restart()
    await until(
      'B learns the revocation queued on A',
      async () => (await decided(b.gate, during)) === 'revoked',
    )
    expect(await decided(b.gate, before)).toBe('revoked')
    expect(await decided(a.gate, before)).toBe('revoked')
    // A third instance, started after the restart, learns both from Redis.
    const late = await instance(await server.client(), `rv${prefixCounter}`)
    expect(await decided(late.gate, before)).toBe('revoked')
    expect(await decided(late.gate, during)).toBe('revoked')
    // And new revocations flow again.
    const after = await issuedBefore({ sub: 'frank' })
    await b.gate.revoke({ sub: 'frank' })
    await until('A refuses frank', async () => (await decided(a.gate, after)) === 'revoked')
    await until('B says it is synchronized again', () =>
      b.events.some((event) => event.type === 'revocation_fallback' && !event.engaged),
    )
    const fallbacks = b.events.filter((event) => event.type === 'revocation_fallback')
    expect(fallbacks).toEqual([
      { type: 'revocation_fallback', engaged: true, policy: 'enforce-known' },
      { type: 'revocation_fallback', engaged: false, policy: 'enforce-known' },
    ])
  })

  it('keeps and writes back revocations a Redis restarted from an older RDB snapshot lost', async () => {
    // Its own server: the RDB file it leaves in its directory must not leak into other tests.
    const own = await startRedisServer()
    try {
      prefixCounter += 1
      const prefix = `rv${prefixCounter}`
      const a = await instance(await own.client(), prefix)
      const alice = await issuedBefore({ sub: 'alice' })
      const bob = await issuedBefore({ sub: 'bob' })
      await a.gate.revoke({ sub: 'alice' })
      const admin = await own.client()
      await admin.save() // what "save 60 10000" does now and then: same epoch key in the file
      await a.gate.revoke({ sub: 'bob' }) // after the last save
      await own.kill()
      await own.restart() // loads dump.rdb: alice's entry and the old epoch, an older sequence
      const seen = a.events.length
      await until('A resynchronizes', () =>
        a.events.slice(seen).some((event) => event.type === 'revocation_synced'),
      )
      expect(await decided(a.gate, bob)).toBe('revoked')
      expect(await decided(a.gate, alice)).toBe('revoked')
      // Written back: an instance started now learns both from Redis.
      const late = await instance(await own.client(), prefix)
      expect(await decided(late.gate, bob)).toBe('revoked')
      expect(await decided(late.gate, alice)).toBe('revoked')
      expect(a.events).toContainEqual(
        expect.objectContaining({ type: 'revocation_store_error', error: expect.any(Error) }),
      )
    } finally {
      await own.stop()
    }
  })

  it('writes back entries evicted from Redis (allkeys-lru) while the epoch key stayed', async () => {
    const [a, b] = await pair()
    const prefix = `rv${prefixCounter}`
    const admin = await server.client()
    const token = await issuedBefore({ sub: 'kim' })
    await a.gate.revoke({ sub: 'kim' })
    await until('B refuses kim', async () => (await decided(b.gate, token)) === 'revoked')
    await admin.del(`{${prefix}}:entries`)
    // A gap in the sequence makes both instances resynchronize.
    const seen = b.events.length
    await admin.incr(`{${prefix}}:seq`)
    await a.gate.revoke({ sub: 'someone-else' })
    await until('B resynchronizes', () =>
      b.events.slice(seen).some((event) => event.type === 'revocation_synced'),
    )
    expect(await decided(b.gate, token)).toBe('revoked')
    await until(
      'the entry is back in Redis',
      async () =>
        (await admin.hexists(
          `{${prefix}}:entries`,
          JSON.stringify([issuer.issuer('acme'), 'sub', 'kim']),
        )) === 1,
    )
    const late = await instance(await server.client(), prefix)
    expect(await decided(late.gate, token)).toBe('revoked')
  })

  it('lets an entry go when its removal was missed but left a tombstone', async () => {
    const [a, b] = await pair()
    const prefix = `rv${prefixCounter}`
    const admin = await server.client()
    const token = await issuedBefore({ sub: 'lea' })
    await a.gate.revoke({ sub: 'lea' })
    await until('B refuses lea', async () => (await decided(b.gate, token)) === 'revoked')
    // An unrevoke whose message B never received: the hash and tombstone as REMOVE leaves them.
    const field = JSON.stringify([issuer.issuer('acme'), 'sub', 'lea'])
    await admin.hdel(`{${prefix}}:entries`, field)
    await admin.hset(`{${prefix}}:removed`, field, String(Date.now() + 3_600_000))
    await admin.incr(`{${prefix}}:seq`)
    await a.gate.revoke({ sub: 'someone-else' })
    await until('B admits lea again', async () => (await decided(b.gate, token)) === 'admitted')
    expect(await admin.hexists(`{${prefix}}:entries`, field)).toBe(0)
  })

  it("with onStoreError 'deny', answers 503 with Retry-After once out of sync past the bound, then recovers", async () => {
    const [, b] = await pair({ onStoreError: 'deny', denyAfterMs: 50 })
    const token = await issuedBefore({ sub: 'gina' })
    expect(await decided(b.gate, token)).toBe('admitted')
    await kill()
    await until(
      'B refuses with 503',
      async () => (await decided(b.gate, token)) === 'revocation_unavailable',
    )
    const error = await b.gate.check(bearer(token)).catch((caught: TollgateError) => caught)
    expect(error).toMatchObject({
      status: 503,
      code: 'ERR_REVOCATION_UNAVAILABLE',
      headers: { 'Retry-After': '1' },
    })
    expect(b.events).toContainEqual({ type: 'revocation_fallback', engaged: true, policy: 'deny' })
    await restart()
    await until('B admits again', async () => (await decided(b.gate, token)) === 'admitted')
  })

  it('refuses a logout token replayed to the same instance while Redis is down', async () => {
    const [a] = await pair()
    await kill()
    await until('A notices', () =>
      a.events.some((event) => event.type === 'revocation_fallback' && event.engaged),
    )
    const token = await issuer.mintLogoutToken({ sid: 'session-9' })
    const post = () =>
      a.gate.backchannelLogout({
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        method: 'POST',
        body: `logout_token=${token}`,
      })
    // Redis cannot say whether it was seen: this instance's own memory does.
    expect((await post()).status).toBe(200)
    expect((await post()).status).toBe(400)
    expect(a.events).toContainEqual(
      expect.objectContaining({ type: 'logout_refused', reason: 'replayed' }),
    )
  })

  it("with onStoreError 'enforce-known', never answers 503", async () => {
    const [, b] = await pair({ denyAfterMs: 0 })
    const token = await issuedBefore({ sub: 'hana' })
    await kill()
    await until('B notices', () =>
      b.events.some((event) => event.type === 'revocation_fallback' && event.engaged),
    )
    expect(await decided(b.gate, token)).toBe('admitted')
  })
})

describe('revocation shared through a Redis Cluster', () => {
  let cluster: RedisCluster
  beforeAll(async () => {
    cluster = await startRedisCluster()
  }, 60_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('enforces a revocation made on one instance at the other', async () => {
    const a = await instance(await cluster.client(), 'rvc')
    const b = await instance(await cluster.client(), 'rvc')
    const token = await issuedBefore({ sid: 'session-3' })
    expect(await decided(b.gate, token)).toBe('admitted')
    await expect(a.gate.revoke({ sid: 'session-3' })).resolves.toEqual({ stored: 'redis' })
    await until('B refuses', async () => (await decided(b.gate, token)) === 'revoked')
    const late = await instance(await cluster.client(), 'rvc')
    expect(await decided(late.gate, token)).toBe('revoked')
  })
})

describe('a freshly started instance on a Redis that already holds revocations', () => {
  let fresh: RedisServer
  let admin: Redis
  beforeAll(async () => {
    fresh = await startRedisServer()
    admin = await fresh.client()
  })
  afterAll(async () => {
    await fresh?.stop()
  })
  afterEach(async () => {
    await admin.call('CLIENT', 'UNPAUSE')
  })

  /** A token of `sub`, revoked through an instance that is up before the new one starts. */
  async function revokedEarlier(prefix: string, sub: string): Promise<string> {
    const running = await instance(await fresh.client(), prefix)
    const token = await issuedBefore({ sub })
    await running.gate.revoke({ sub })
    await running.gate.close()
    return token
  }

  /**
   * Holds the new instance's first synchronization: with writes paused, Redis still answers the
   * connection's handshake and SUBSCRIBE but runs no script (the snapshot) until unpaused.
   */
  const pauseScripts = () => admin.call('CLIENT', 'PAUSE', '600000', 'WRITE')
  const subscribed = async () =>
    ((await admin.call('CLIENT', 'LIST')) as string).includes('cmd=subscribe')

  function startGate(prefix: string, extra: Partial<RevocationOptions>, client: Redis): Gate {
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      revocation: { store: { redis: client as never }, keyPrefix: prefix, ...extra },
      // The test Redis persists nothing: said by an event (asserted elsewhere), not a warning.
      onEvent: () => {},
    })
    gates.push(gate)
    return gate
  }

  it('admits no revoked token before its first synchronization: requests wait for the list', async () => {
    prefixCounter += 1
    const prefix = `rv${prefixCounter}`
    const token = await revokedEarlier(prefix, 'long-gone')
    const client = await fresh.client()
    await pauseScripts()
    const gate = startGate(prefix, { storeTimeoutMs: 60_000 }, client)
    let unpaused = false
    const settledWhilePaused: string[] = []
    const decide = () =>
      decided(gate, token).then((outcome) => {
        if (!unpaused) settledWhilePaused.push(outcome)
        return outcome
      })
    // Before the subscriber is even connected, then while the snapshot waits on Redis.
    const before = Array.from({ length: 20 }, decide)
    await until('the subscriber is connected', subscribed)
    const during = Array.from({ length: 20 }, decide)
    unpaused = true
    await admin.call('CLIENT', 'UNPAUSE')
    const outcomes = await Promise.all([...before, ...during])
    expect(settledWhilePaused).toEqual([])
    expect(new Set(outcomes)).toEqual(new Set(['revoked']))
  })

  it('makes ready() wait for the revocation list', async () => {
    prefixCounter += 1
    const prefix = `rv${prefixCounter}`
    await revokedEarlier(prefix, 'ready-wait')
    const client = await fresh.client()
    await pauseScripts()
    const gate = startGate(prefix, { storeTimeoutMs: 60_000 }, client)
    const order: string[] = []
    const ready = gate.ready().then((report) => {
      order.push('ready')
      return report
    })
    await until('the subscriber is connected', subscribed)
    order.push('unpause')
    await admin.call('CLIENT', 'UNPAUSE')
    expect(await ready).toMatchObject({ ready: true, revocation: 'held' })
    expect(order).toEqual(['unpause', 'ready'])
  })

  it('reports not ready when the list is still not held after storeTimeoutMs', async () => {
    prefixCounter += 1
    const prefix = `rv${prefixCounter}`
    const client = await fresh.client()
    await pauseScripts()
    const gate = startGate(prefix, { storeTimeoutMs: 50 }, client)
    expect(await gate.ready()).toMatchObject({ ready: false, revocation: 'not_held' })
  })

  it("answers 503 ERR_REVOCATION_UNAVAILABLE by default (untilSynced: 'deny') when the list is not held by the deadline", async () => {
    prefixCounter += 1
    const prefix = `rv${prefixCounter}`
    const token = await revokedEarlier(prefix, 'deadline')
    const client = await fresh.client()
    await pauseScripts()
    const gate = startGate(prefix, { storeTimeoutMs: 50 }, client)
    const error = (await gate
      .check(bearer(token))
      .catch((caught: unknown) => caught)) as TollgateError
    expect(error).toMatchObject({
      status: 503,
      code: 'ERR_REVOCATION_UNAVAILABLE',
      headers: { 'Retry-After': '1' },
    })
    // A token nobody revoked is not admitted either: nothing is, before the list is held.
    const other = await issuedBefore({ sub: 'innocent' })
    expect(await decided(gate, other)).toBe('revocation_unavailable')
    await admin.call('CLIENT', 'UNPAUSE')
    await until('the list is held', async () => (await decided(gate, token)) === 'revoked')
    expect(await decided(gate, other)).toBe('admitted')
  })

  it("with untilSynced: 'enforce-known', decides with what it knows once the deadline passed", async () => {
    prefixCounter += 1
    const prefix = `rv${prefixCounter}`
    const token = await revokedEarlier(prefix, 'known-risk')
    const client = await fresh.client()
    await pauseScripts()
    const gate = startGate(prefix, { storeTimeoutMs: 50, untilSynced: 'enforce-known' }, client)
    // The documented risk of this policy: the revocation made elsewhere is not known yet.
    expect(await decided(gate, token)).toBe('admitted')
    await admin.call('CLIENT', 'UNPAUSE')
    await until('the list is held', async () => (await decided(gate, token)) === 'revoked')
  })
})

describe('revocations and a Redis that persists nothing', () => {
  const servers: RedisServer[] = []
  afterEach(async () => {
    for (const gate of gates.splice(0)) await gate.close()
    for (const started of servers.splice(0)) await started.stop()
  })

  async function redisWith(args: string[] = []): Promise<RedisServer> {
    const started = await startRedisServer(args)
    servers.push(started)
    return started
  }

  function gateOn(
    client: Redis,
    keyPrefix: string,
    extra: Partial<RevocationOptions> = {},
    events: GateEvent[] | 'no listener' = [],
  ): Gate {
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      revocation: { store: { redis: client as never }, keyPrefix, ...extra },
      ...(events === 'no listener'
        ? {}
        : { onEvent: (event: GateEvent) => void events.push(event) }),
    })
    gates.push(gate)
    return gate
  }

  const volatile = (events: GateEvent[]) =>
    events.filter((event) => event.type === 'revocation_store_volatile')

  it.each([
    ['no AOF and no RDB save points', [], 'none'],
    ['CONFIG refused (managed Redis) and no AOF', ['--rename-command', 'CONFIG', '""'], 'unknown'],
  ] as const)(
    'reports a Redis with %s at start (revocation_store_volatile)',
    async (_case, args, persistence) => {
      const redis = await redisWith([...args])
      const events: GateEvent[] = []
      const gate = gateOn(await redis.client(), 'volatile', {}, events)
      expect(await gate.ready()).toMatchObject({ ready: true, revocation: 'held' })
      expect(volatile(events)).toEqual([
        { type: 'revocation_store_volatile', persistence, loader: false },
      ])
    },
  )

  it.each([
    ['AOF', ['--appendonly', 'yes']],
    ['RDB save points', ['--save', '3600 1']],
  ])('says nothing of a Redis with %s', async (_case, args) => {
    const redis = await redisWith(args)
    const events: GateEvent[] = []
    const gate = gateOn(await redis.client(), 'durable', {}, events)
    expect(await gate.ready()).toMatchObject({ ready: true, revocation: 'held' })
    expect(volatile(events)).toEqual([])
  })

  it('warns through process.emitWarning when no onEvent listener was given, and not with a loader', async () => {
    resetWarningsForTests()
    const warnings: { code?: string | undefined; message: string }[] = []
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code?.startsWith('TOLLGATE_REVOCATION') === true) {
        warnings.push({ code: warning.code, message: warning.message })
      }
    }
    process.on('warning', onWarning)
    try {
      const redis = await redisWith()
      const withLoader = gateOn(
        await redis.client(),
        'warned-loader',
        { load: () => [] },
        'no listener',
      )
      await withLoader.ready()
      const gate = gateOn(await redis.client(), 'warned', {}, 'no listener')
      await gate.ready()
      await until('the warning', () => warnings.length > 0)
      expect(warnings).toEqual([
        {
          code: 'TOLLGATE_REVOCATION_STORE_VOLATILE',
          message: expect.stringContaining('persists nothing'),
        },
      ])
      expect(warnings[0]?.message).toContain('revocation.load')
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('forgets every revocation when that Redis and every instance restart (without load)', async () => {
    const redis = await redisWith()
    const token = await issuedBefore({ sub: 'forgotten' })
    const before = gateOn(await redis.client(), 'restart')
    await before.ready()
    await before.revoke({ sub: 'forgotten' })
    expect(await decided(before, token)).toBe('revoked')
    await before.close()
    await redis.kill()
    await redis.restart()
    const after = gateOn(await redis.client(), 'restart')
    await after.ready()
    // What the README warns of: nothing remembers the revocation.
    expect(await decided(after, token)).toBe('admitted')
  })

  it("reloads revocations from the application's records when every instance and Redis restart", async () => {
    const redis = await redisWith()
    const token = await issuedBefore({ sub: 'recorded' })
    const records: { sub: string; notBefore: number }[] = []
    const before = gateOn(await redis.client(), 'reload', { load: () => records })
    await before.ready()
    await before.revoke({ sub: 'recorded' })
    // The application records what it revoked, with the not-before it got.
    records.push({ sub: 'recorded', notBefore: Math.floor(Date.now() / 1000) + 6 })
    await before.close()
    await redis.kill()
    await redis.restart()
    const events: GateEvent[] = []
    const after = gateOn(await redis.client(), 'reload', { load: async () => records }, events)
    expect(await after.ready()).toMatchObject({ ready: true, revocation: 'held' })
    expect(await decided(after, token)).toBe('revoked')
    expect(events).toContainEqual({
      type: 'revocation_loaded',
      trigger: 'start',
      entries: 1,
      skipped: 0,
    })
    // Written back to Redis: an instance started without a loader learns it from there.
    const plain = gateOn(await redis.client(), 'reload')
    await plain.ready()
    expect(await decided(plain, token)).toBe('revoked')
  })

  it('calls load again when a running instance finds Redis lost its data', async () => {
    const redis = await redisWith()
    const triggers: string[] = []
    const events: GateEvent[] = []
    const gate = gateOn(
      await redis.client(),
      'lost',
      {
        load: () => {
          triggers.push('called')
          return []
        },
      },
      events,
    )
    await gate.ready()
    await redis.kill()
    await redis.restart()
    await until('load after the loss', () =>
      events.some((event) => event.type === 'revocation_loaded' && event.trigger === 'store_lost'),
    )
    expect(
      events.filter((event) => event.type === 'revocation_loaded').map((event) => event.trigger),
    ).toEqual(['start', 'store_lost'])
  })
})
