/**
 * Token Status Lists shared by a fleet through Redis (`statusList.store: { redis }`), against a
 * real redis-server this file starts (and kills, freezes): gate instances sharing it fetch a list
 * once per refresh; Redis is not the issuer, so what it holds is verified like a fetched list
 * (draft-ietf-oauth-status-list §8.3: signed by the referenced token's issuer, `sub` the URI),
 * never takes an instance back to an older list, and never keeps a list past its time; a Redis
 * that fails or stalls costs the fetch it was to save, never a 503.
 */
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { InvalidTokenError } from '../../src/errors.js'
import { ServiceUnavailableError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { encodeStatusList } from '../../src/status/bits.js'
import { normalizeStatusListOptions } from '../../src/status/options.js'
import { createStatusListStep, type StatusListStep } from '../../src/status/status-list.js'
import { createListStore } from '../../src/status/store.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { IssuerKeys } from '../../src/token/jwks.js'
import type { VerifiedToken } from '../../src/token/verify.js'
import { TEST_JWKS_OPTIONS } from '../helpers/jwks-options.js'
import { type RedisServer, startRedisCluster, startRedisServer } from '../helpers/redis.js'
import { type StatusListServer, startStatusListServer } from '../helpers/status-list-server.js'

let issuer: TestIssuer
let lists: StatusListServer
let server: RedisServer
let redis: Redis
const steps: StatusListStep[] = []
const extraServers: RedisServer[] = []
let prefixes = 0

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'other'] })
  lists = await startStatusListServer(issuer)
  server = await startRedisServer()
  redis = await server.client()
})
afterAll(async () => {
  await server.stop()
  await lists.close()
  await issuer.close()
})
afterEach(async () => {
  for (const step of steps.splice(0)) step.close()
  for (const extra of extraServers.splice(0)) await extra.stop()
  lists.fault = undefined
  lists.claims = {}
  lists.header = {}
  lists.realm = undefined
  lists.fetches.clear()
})

interface Instance {
  readonly step: StatusListStep
  readonly events: GateEvent[]
}

interface FleetSetup {
  readonly options?: Record<string, unknown>
  readonly clock: { now: number }
  readonly client?: { eval: Redis['eval'] }
  /** Key prefix shared by the instances (one per test unless given). */
  readonly keyPrefix?: string
}

const newPrefix = () => `tollgate-test:status:${++prefixes}`

/** One gate instance: its own key set, its own lists, the fleet's Redis. */
function instance({ options = {}, clock, client = redis, keyPrefix }: FleetSetup): Instance {
  const events: GateEvent[] = []
  const keys = new IssuerKeys(
    { issuer: issuer.issuer('acme'), jwksUri: issuer.jwksUri('acme'), discovery: false },
    ['RS256', 'ES256'],
    TEST_JWKS_OPTIONS,
    { emit: undefined, onKeysRetired: undefined },
  )
  const normalized = normalizeStatusListOptions({
    allowedUriPrefixes: [lists.origin],
    store: { redis: client },
    keyPrefix,
    minCacheSeconds: 10,
    maxCacheSeconds: 60,
    ...options,
  })
  if (normalized === undefined) throw new Error('options')
  const step = createStatusListStep(normalized, {
    keysOf: (name) => (name === issuer.issuer('acme') ? keys : undefined),
    algorithms: new Set(['RS256', 'ES256']),
    clockToleranceSeconds: 30,
    emit: (event) => events.push(event),
    now: () => clock.now,
  })
  steps.push(step)
  return { step, events }
}

function fleetOf(count: number, setup: Omit<FleetSetup, 'keyPrefix'>): Instance[] {
  const keyPrefix = newPrefix()
  return Array.from({ length: count }, () => instance({ ...setup, keyPrefix }))
}

function at(idx: number, uri = lists.uri()): VerifiedToken {
  const iss = issuer.issuer('acme')
  return {
    header: { alg: 'RS256' },
    claims: { iss, sub: 'alice', status: { status_list: { idx, uri } } },
    issuer: iss,
    realm: 'acme',
  } as unknown as VerifiedToken
}

async function judged(step: StatusListStep, token: VerifiedToken): Promise<unknown> {
  const answer = step.judge(token)
  if (answer instanceof Promise) {
    return answer.then(
      () => undefined,
      (error: unknown) => error,
    )
  }
  return answer
}

const reasonOf = (outcome: unknown) => (outcome as InvalidTokenError | undefined)?.reason
const fetched = (events: readonly GateEvent[], from?: 'issuer' | 'store') =>
  events.filter(
    (event) => event.type === 'status_list_fetched' && (from ?? event.from) === event.from,
  ).length

/** Waits (real time, bounded) until `check` holds: background flights and writes settle. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** The Redis key of the list at `uri` under `keyPrefix` (the gate's own derivation). */
function keyOf(keyPrefix: string, uri = lists.uri()): string {
  return createListStore(redis, keyPrefix, 'test', {
    timeoutMs: 1000,
    lockMs: 1000,
    maxBytes: 1,
  }).keyOf(issuer.issuer('acme'), uri)
}

/** A list as the issuer would sign it, its claims given. */
async function listToken(
  payload: Record<string, unknown>,
  options: { realm?: string; header?: Record<string, unknown> } = {},
): Promise<string> {
  const kid = issuer.jwks(options.realm).keys.find((jwk) => jwk.kty === 'RSA')?.kid
  return issuer.sign(
    { alg: 'RS256', typ: 'statuslist+jwt', kid, ...options.header },
    { sub: lists.uri(), ...payload },
    { realm: options.realm },
  )
}

const seconds = (clock: { now: number }) => Math.floor(clock.now / 1000)

describe('a fleet sharing Redis', () => {
  it('fetches a list once for N instances, and once again per refresh', async () => {
    lists.setStatuses([0, 0, 0])
    lists.claims = { ttl: 30 }
    const clock = { now: Date.now() }
    const fleet = fleetOf(5, { clock })
    const answers = await Promise.all(fleet.map(({ step }) => judged(step, at(1))))
    expect(answers).toEqual([undefined, undefined, undefined, undefined, undefined])
    expect(lists.fetches.get('/lists/1')).toBe(1)
    const all = fleet.flatMap(({ events }) => events)
    expect(fetched(all, 'issuer')).toBe(1)
    expect(fetched(all, 'store')).toBe(4)

    // The issuer revokes index 1; past four fifths of the 30 s, every instance refreshes.
    lists.setStatus(1, 1)
    clock.now += 25_000
    lists.claims = { ttl: 30, iat: seconds(clock) }
    for (const { step } of fleet) expect(step.judge(at(1))).toBeUndefined()
    await until('every instance refreshed', () =>
      fleet.every(({ events }) => fetched(events) === 2),
    )
    expect(lists.fetches.get('/lists/1')).toBe(2)
    for (const { step } of fleet) expect(reasonOf(step.judge(at(1)))).toBe('status_invalid')

    // And once more.
    lists.setStatus(1, 0)
    clock.now += 25_000
    lists.claims = { ttl: 30, iat: seconds(clock) }
    for (const { step } of fleet) step.judge(at(1))
    await until('every instance refreshed again', () =>
      fleet.every(({ events }) => fetched(events) === 3),
    )
    expect(lists.fetches.get('/lists/1')).toBe(3)
    for (const { step } of fleet) expect(step.judge(at(1))).toBeUndefined()
  })

  it('never calls Redis for a request whose list is held (the hit path)', async () => {
    lists.setStatuses([0, 1])
    const clock = { now: Date.now() }
    let calls = 0
    const counting = {
      eval: ((...args: Parameters<Redis['eval']>) => {
        calls++
        return redis.eval(...args)
      }) as Redis['eval'],
    }
    const keyPrefix = newPrefix()
    const { step } = instance({ clock, client: counting, keyPrefix })
    expect(await judged(step, at(0))).toBeUndefined()
    // The list stored for the others, in the background.
    await until('the list stored', async () => (await redis.exists(keyOf(keyPrefix))) === 1)
    const before = calls
    for (let i = 0; i < 10_000; i++) {
      const answer = step.judge(at(i % 2))
      expect(answer instanceof Promise).toBe(false)
    }
    expect(calls).toBe(before)
  })
})

describe('Redis is not the issuer (§8.3: the list is verified with the issuer’s keys)', () => {
  it('refuses a forged list written into Redis (signature) and keeps the issuer’s verdict', async () => {
    lists.setStatuses([0, 1])
    const clock = { now: Date.now() }
    const keyPrefix = newPrefix()
    const now = seconds(clock)
    // Index 1 VALID in the forgery, signed by another key under the issuer's kid.
    const acmeKid = issuer.jwks('acme').keys.find((jwk) => jwk.kty === 'RSA')?.kid
    const forged = await listToken(
      {
        iat: now,
        exp: now + 3600,
        ttl: 300,
        status_list: { bits: 1, lst: encodeStatusList([0, 0], 1) },
      },
      { realm: 'other', header: { kid: acmeKid } },
    )
    await redis.set(keyOf(keyPrefix), forged, 'PX', 60_000)
    const { step, events } = instance({ clock, keyPrefix })
    expect(reasonOf(await judged(step, at(1)))).toBe('status_invalid')
    expect(step.judge(at(0))).toBeUndefined()
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'status_list_failed', from: 'store', problem: 'signature' }),
    )
    expect(lists.fetches.get('/lists/1')).toBe(1)
    // The genuine list replaced it: the next instance takes that one, without a fetch.
    await until(
      'the genuine list stored',
      async () => (await redis.get(keyOf(keyPrefix))) !== forged,
    )
    const next = instance({ clock, keyPrefix })
    expect(reasonOf(await judged(next.step, at(1)))).toBe('status_invalid')
    expect(fetched(next.events, 'store')).toBe(1)
    expect(lists.fetches.get('/lists/1')).toBe(1)
  })

  it('refuses in Redis what it refuses from the network: alg none, another key set, another list’s sub, a wrong typ', async () => {
    lists.setStatuses([0, 1])
    const now = Math.floor(Date.now() / 1000)
    const claims = {
      iat: now,
      exp: now + 3600,
      status_list: { bits: 1, lst: encodeStatusList([0, 0], 1) },
    }
    const enc = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
    for (const [entry, problem] of [
      [
        `${enc({ alg: 'none', typ: 'statuslist+jwt' })}.${enc({ sub: lists.uri(), ...claims })}.`,
        /^(malformed|algorithm)$/,
      ],
      [await listToken(claims, { realm: 'other' }), /^(keys|signature)$/],
      [await listToken({ ...claims, sub: lists.uri('/lists/2') }), /^subject$/],
      [await listToken(claims, { header: { typ: 'at+jwt' } }), /^token_type$/],
      ['not a list at all', /^malformed$/],
    ] as const) {
      const keyPrefix = newPrefix()
      await redis.set(keyOf(keyPrefix), entry, 'PX', 60_000)
      const { step, events } = instance({ clock: { now: Date.now() }, keyPrefix })
      expect(reasonOf(await judged(step, at(1))), String(problem)).toBe('status_invalid')
      expect(events, String(problem)).toContainEqual(
        expect.objectContaining({
          type: 'status_list_failed',
          from: 'store',
          problem: expect.stringMatching(problem),
        }),
      )
    }
  })

  it('never takes an instance back to an older list replayed into Redis, and a fresh one only within its time', async () => {
    lists.setStatuses([0, 0])
    lists.claims = { ttl: 30 }
    const clock = { now: Date.now() }
    const keyPrefix = newPrefix()
    const key = keyOf(keyPrefix)
    const a = instance({ clock, keyPrefix })
    expect(await judged(a.step, at(1))).toBeUndefined()
    await until('the first list stored', async () => (await redis.exists(key)) === 1)
    const old = (await redis.get(key)) as string

    // The issuer revokes index 1; the instance refreshes.
    lists.setStatus(1, 1)
    clock.now += 25_000
    lists.claims = { ttl: 30, iat: seconds(clock) }
    a.step.judge(at(1))
    await until('the refresh', () => fetched(a.events) === 2)
    expect(reasonOf(a.step.judge(at(1)))).toBe('status_invalid')

    // Redis is given the older list back: genuine, signed by the issuer, index 1 VALID.
    await redis.set(key, old, 'PX', 60_000)
    clock.now += 25_000
    lists.claims = { ttl: 30, iat: seconds(clock) }
    a.step.judge(at(1))
    await until('the next refresh', () => fetched(a.events) === 3)
    expect(fetched(a.events, 'store')).toBe(0)
    expect(reasonOf(a.step.judge(at(1)))).toBe('status_invalid')
    expect(lists.fetches.get('/lists/1')).toBe(3)

    // A fresh instance is offered the older list too: issued 50 s ago, past its 30 s, not taken.
    await redis.set(key, old, 'PX', 60_000)
    const fresh = instance({ clock, keyPrefix })
    expect(reasonOf(await judged(fresh.step, at(1)))).toBe('status_invalid')
    expect(fetched(fresh.events, 'store')).toBe(0)
    expect(lists.fetches.get('/lists/1')).toBe(4)
  })

  it('does not read an entry larger than maxListTokenBytes, and fetches the list', async () => {
    lists.setStatuses([0, 1])
    const keyPrefix = newPrefix()
    await redis.set(keyOf(keyPrefix), 'A'.repeat(70_000), 'PX', 60_000)
    const { step, events } = instance({
      clock: { now: Date.now() },
      keyPrefix,
      options: { maxListTokenBytes: 65_536 },
    })
    expect(reasonOf(await judged(step, at(1)))).toBe('status_invalid')
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'status_list_failed', from: 'store', problem: 'too_large' }),
    )
    expect(lists.fetches.get('/lists/1')).toBe(1)
  })
})

describe('the time a shared list is kept', () => {
  it('is the entry’s TTL in Redis: the list’s ttl clamped by min/maxCacheSeconds, never past its exp', async () => {
    lists.setStatuses([0])
    const clock = { now: Date.now() }
    const now = seconds(clock)
    for (const [claims, options, keptMs] of [
      [{ ttl: 30 }, {}, 30_000],
      [{ ttl: 300 }, { maxCacheSeconds: 60 }, 60_000],
      [{ ttl: 2 }, { minCacheSeconds: 10 }, 10_000],
      [{ ttl: 300, exp: now + 20 }, {}, 20_000],
    ] as const) {
      lists.claims = { iat: now, ...claims }
      const keyPrefix = newPrefix()
      const { step } = instance({ clock, keyPrefix, options })
      expect(await judged(step, at(0))).toBeUndefined()
      const key = keyOf(keyPrefix)
      await until('the list stored', async () => (await redis.exists(key)) === 1)
      const ttl = await redis.pttl(key)
      expect(ttl, JSON.stringify(claims)).toBeLessThanOrEqual(keptMs)
      expect(ttl, JSON.stringify(claims)).toBeGreaterThan(keptMs - 2_000)
    }
  })

  it('bounds an instance that takes the list: no longer than the entry’s TTL, and never past iat plus maxCacheSeconds whatever TTL Redis says', async () => {
    lists.setStatuses([0])
    lists.claims = { ttl: 30 }
    const clock = { now: Date.now() }
    const keyPrefix = newPrefix()
    const key = keyOf(keyPrefix)
    const writer = instance({ clock, keyPrefix })
    expect(await judged(writer.step, at(0))).toBeUndefined()
    await until('the list stored', async () => (await redis.exists(key)) === 1)

    // The entry has 2 s left: an instance taking it holds it 2 s, not the list's 30 s.
    await redis.pexpire(key, 2_000)
    const start = clock.now
    const short = instance({ clock, keyPrefix })
    expect(await judged(short.step, at(0))).toBeUndefined()
    expect(fetched(short.events, 'store')).toBe(1)
    clock.now = start + 1_500
    expect(short.step.judge(at(0))).toBeUndefined()
    clock.now = start + 2_100
    const reload = short.step.judge(at(0))
    expect(reload).toBeInstanceOf(Promise)
    await reload

    // An entry without expiry (PERSIST), or with a day: held no longer than iat + 30 s.
    clock.now = start
    await redis.set(key, (await redis.get(key)) ?? '', 'PX', 60_000)
    await redis.persist(key)
    const long = instance({ clock, keyPrefix })
    expect(await judged(long.step, at(0))).toBeUndefined()
    expect(fetched(long.events, 'store')).toBe(1)
    // The issuer is down from now on: what decides is the list taken from Redis, while it may.
    lists.fault = { kind: 'status', status: 503 }
    clock.now = start + 28_000
    expect(long.step.judge(at(0))).toBeUndefined()
    clock.now = start + 32_000
    expect(await judged(long.step, at(0))).toBeInstanceOf(ServiceUnavailableError)
  })
})

describe('a Redis that fails', () => {
  it('killed: every instance still answers, fetching directly, never 503; Redis is used again once back', async () => {
    lists.setStatuses([0, 1])
    lists.claims = { ttl: 30 }
    const own = await startRedisServer()
    extraServers.push(own)
    const client = await own.client()
    const clock = { now: Date.now() }
    const keyPrefix = newPrefix()
    const options = { storeTimeoutMs: 200 }
    const a = instance({ clock, client, keyPrefix, options })
    const b = instance({ clock, client, keyPrefix, options })
    expect(await judged(a.step, at(0))).toBeUndefined()
    expect(await judged(b.step, at(0))).toBeUndefined()
    expect(lists.fetches.get('/lists/1')).toBe(1)

    await own.kill()
    const c = instance({ clock, client, keyPrefix, options })
    expect(await judged(c.step, at(0))).toBeUndefined()
    expect(reasonOf(c.step.judge(at(1)))).toBe('status_invalid')
    expect(c.events).toContainEqual(expect.objectContaining({ type: 'status_list_store_error' }))
    expect(lists.fetches.get('/lists/1')).toBe(2)
    // The instances holding the list refresh it without Redis.
    clock.now += 25_000
    lists.claims = { ttl: 30, iat: seconds(clock) }
    a.step.judge(at(0))
    b.step.judge(at(0))
    await until('both refreshed', () => fetched(a.events) === 2 && fetched(b.events) === 2)
    expect(a.step.judge(at(0))).toBeUndefined()
    expect(reasonOf(b.step.judge(at(1)))).toBe('status_invalid')
    for (const { events } of [a, b, c]) {
      expect(events.some((event) => event.type === 'rejected')).toBe(false)
      const error = events.find((event) => event.type === 'status_list_store_error')
      // Name and message only: what ioredis attaches (the command, its arguments) is not carried.
      if (error?.type === 'status_list_store_error') {
        expect(Object.keys(error.error)).not.toContain('command')
      }
    }

    // Back (empty): past the 5 s it is left alone, the fleet shares through it again.
    await own.restart()
    await until('the client reconnected', () => client.status === 'ready')
    clock.now += 6_000
    const d = instance({ clock, client, keyPrefix, options })
    const e = instance({ clock, client, keyPrefix, options })
    const fetches = lists.fetches.get('/lists/1') ?? 0
    expect(await judged(d.step, at(0))).toBeUndefined()
    await until('the list stored', async () => (await client.exists(keyOf(keyPrefix))) === 1)
    expect(await judged(e.step, at(0))).toBeUndefined()
    expect(fetched(e.events, 'store')).toBe(1)
    expect(lists.fetches.get('/lists/1')).toBe(fetches + 1)
  })

  it('frozen (SIGSTOP): the list is fetched directly once storeTimeoutMs has passed, never 503', async () => {
    lists.setStatuses([0, 1])
    const own = await startRedisServer()
    extraServers.push(own)
    const client = await own.client()
    const clock = { now: Date.now() }
    own.freeze()
    try {
      const { step, events } = instance({
        clock,
        client,
        keyPrefix: newPrefix(),
        options: { storeTimeoutMs: 100 },
      })
      const answer = await judged(step, at(1))
      expect(answer).not.toBeInstanceOf(ServiceUnavailableError)
      expect(reasonOf(answer)).toBe('status_invalid')
      expect(events).toContainEqual(expect.objectContaining({ type: 'status_list_store_error' }))
      expect(fetched(events, 'issuer')).toBe(1)
    } finally {
      own.thaw()
    }
  })

  it('a lock held by an instance that never stores the list: the others fetch once the lock’s time is over', async () => {
    lists.setStatuses([0])
    const clock = { now: Date.now() }
    const keyPrefix = newPrefix()
    await redis.set(`${keyOf(keyPrefix)}:lock`, 'an instance that died', 'PX', 600_000)
    const { step, events } = instance({ clock, keyPrefix, options: { timeoutMs: 200 } })
    expect(await judged(step, at(0))).toBeUndefined()
    expect(fetched(events, 'issuer')).toBe(1)
    expect(lists.fetches.get('/lists/1')).toBe(1)
  })
})

describe('a Redis Cluster', () => {
  it('keeps a list and its lock in one slot: two instances, one fetch', async () => {
    lists.setStatuses([0, 1])
    const cluster = await startRedisCluster()
    try {
      const client = await cluster.client()
      const clock = { now: Date.now() }
      const keyPrefix = newPrefix()
      const a = instance({ clock, client, keyPrefix })
      const b = instance({ clock, client, keyPrefix })
      const answers = await Promise.all([judged(a.step, at(1)), judged(b.step, at(1))])
      expect(answers.map(reasonOf)).toEqual(['status_invalid', 'status_invalid'])
      expect(lists.fetches.get('/lists/1')).toBe(1)
      expect(
        [...a.events, ...b.events].filter((e) => e.type === 'status_list_store_error'),
      ).toEqual([])
    } finally {
      await cluster.stop()
    }
  })
})

describe('the store option', () => {
  it('takes an ioredis client, and says what to change otherwise', () => {
    expect(normalizeStatusListOptions({ store: 'memory' })?.redis).toBeUndefined()
    expect(normalizeStatusListOptions({ store: { redis } })?.redis).toBe(redis)
    expect(normalizeStatusListOptions({ store: { redis } })?.keyPrefix).toBe('tollgate:status')
    expect(() => normalizeStatusListOptions({ store: 'redis' })).toThrow(
      /"statusList\.store" must be 'memory' or \{ redis: client \}/,
    )
    expect(() => normalizeStatusListOptions({ store: { redis: {} } })).toThrow(
      /"statusList\.store\.redis" must be an ioredis Redis or Cluster client/,
    )
    expect(() => normalizeStatusListOptions({ store: { redis, shared: {} } })).toThrow(
      /"statusList\.store"/,
    )
    expect(() => normalizeStatusListOptions({ keyPrefix: 'a{b}' })).toThrow(
      /"statusList\.keyPrefix"/,
    )
    expect(() => normalizeStatusListOptions({ storeTimeoutMs: 0 })).toThrow(
      /"statusList\.storeTimeoutMs"/,
    )
  })
})
