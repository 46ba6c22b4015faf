/**
 * The stream in `gate.ready()` (SSF 1.0 §8.1.2, §8.1.4, §8.1.5): what `stream-updated` events and
 * status reads say, verifications asked for and received, the last SET, reported with the
 * `signal_stream` event; a `disabled` stream (the transmitter sends and holds nothing) and a
 * verification that never arrived make the gate not ready, a `paused` one (events held) is only
 * reported. In a fleet sharing Redis, every instance reports what any of them heard.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { SignalEvent } from '../../src/signals/events.js'
import { createSignalStreams } from '../../src/signals/stream.js'
import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import {
  nowSeconds,
  PUSH_AUTHORIZATION,
  pushRequest,
  type Receiving,
  receiving,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
let made: Receiving[] = []

beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})
afterEach(async () => {
  for (const instance of made) await instance.close()
  made = []
})

function open(...args: Parameters<typeof receiving> extends [unknown, ...infer R] ? R : never) {
  const instance = receiving(world, ...args)
  made.push(instance)
  return instance
}

const STREAM = { format: 'opaque', id: 'stream-1' }

/** Pushes a stream-updated event (`at`: its event_timestamp, seconds) to `to`. */
async function streamUpdated(to: Receiving, status: string, at = nowSeconds(), reason?: string) {
  const set = await world.transmitter.sign(SSF_EVENTS.streamUpdated, STREAM, {
    status,
    event_timestamp: at,
    ...(reason === undefined ? {} : { reason }),
  })
  return (await to.receiver.push(pushRequest(set.token))).status
}

async function verification(to: Receiving, state?: string) {
  const set = await world.transmitter.sign(
    SSF_EVENTS.verification,
    STREAM,
    state === undefined ? {} : { state },
  )
  return (await to.receiver.push(pushRequest(set.token))).status
}

const streamEvents = (events: readonly SignalEvent[]) =>
  events.flatMap((event) => (event.type === 'signal_stream' ? [event] : []))

describe('the stream in gate.ready()', () => {
  it('is reported once a receiver is built over the gate, and no longer once it is closed', async () => {
    const instance = open()
    const report = await instance.gate.ready()
    expect(report.ready).toBe(true)
    expect(report.signals).toEqual([
      {
        transmitter: world.transmitter.issuer,
        ready: true,
        status: undefined,
        reason: undefined,
        statusAt: undefined,
        verification: undefined,
        verificationRequestedAt: undefined,
        verifiedAt: undefined,
        lastEventAt: undefined,
        store: 'memory',
      },
    ])
    instance.receiver.close()
    expect((await instance.gate.ready()).signals).toBeUndefined()
  })

  it('a disabled stream makes the gate not ready, with the transmitter’s reason; enabled again, ready', async () => {
    const instance = open()
    expect(await streamUpdated(instance, 'disabled', nowSeconds(), 'admin')).toBe(202)
    const report = await instance.gate.ready()
    expect(report.ready).toBe(false)
    expect(report.signals?.[0]).toMatchObject({ ready: false, status: 'disabled', reason: 'admin' })
    expect(report.signals?.[0]?.statusAt).toBeTypeOf('number')
    expect(streamEvents(instance.events).at(-1)).toMatchObject({
      change: 'status',
      status: 'disabled',
      reason: 'admin',
    })
    expect(await streamUpdated(instance, 'enabled', nowSeconds() + 1)).toBe(202)
    expect((await instance.gate.ready()).ready).toBe(true)
  })

  it('a paused stream is reported and stays ready (the transmitter holds its events)', async () => {
    const instance = open()
    expect(
      await streamUpdated(instance, 'paused', nowSeconds(), 'SYSTEM_DOWN_FOR_MAINTENANCE'),
    ).toBe(202)
    const report = await instance.gate.ready()
    expect(report.ready).toBe(true)
    expect(report.signals?.[0]).toMatchObject({
      ready: true,
      status: 'paused',
      reason: 'SYSTEM_DOWN_FOR_MAINTENANCE',
    })
  })

  it('a stream-updated older than the status held (delivered out of order) changes nothing', async () => {
    const instance = open()
    await streamUpdated(instance, 'disabled', nowSeconds() - 10)
    await streamUpdated(instance, 'enabled', nowSeconds() - 5)
    await streamUpdated(instance, 'disabled', nowSeconds() - 20)
    expect((await instance.gate.ready()).signals?.[0]?.status).toBe('enabled')
    expect(instance.receiver.stream().status).toBe('enabled')
  })

  it('a status the transmitter does not define changes nothing', async () => {
    const instance = open()
    await streamUpdated(instance, 'paused')
    await streamUpdated(instance, 'on-fire', nowSeconds() + 1)
    expect((await instance.gate.ready()).signals?.[0]?.status).toBe('paused')
  })

  it('tells when the last SET and the last verification arrived', async () => {
    const instance = open()
    const before = Date.now()
    const set = await world.transmitter.sign(SSF_EVENTS.credentialChange, {
      format: 'iss_sub',
      iss: world.tokenIssuer,
      sub: 'someone',
    })
    await instance.receiver.push(pushRequest(set.token))
    expect(await verification(instance)).toBe(202)
    const report = (await instance.gate.ready()).signals?.[0]
    expect(report?.lastEventAt).toBeGreaterThanOrEqual(before)
    expect(report?.verifiedAt).toBeGreaterThanOrEqual(before)
    // A verification the transmitter sent on its own (no state): the stream delivers.
    expect(report?.verification).toBe('verified')
    expect(streamEvents(instance.events).map((event) => event.change)).toEqual(['verified'])
  })
})

describe('verification (SSF 1.0 §8.1.4) and status reads (§8.1.2) through createSignalStreams', () => {
  const MANAGEMENT = 'Bearer readiness-management'
  let managed: SignalsWorld

  beforeAll(async () => {
    managed = await startWorld({ managementAuthorization: MANAGEMENT })
  })
  afterAll(async () => {
    await managed.close()
  })

  it('a verification that never arrives: not ready, and reported; one that arrives later: ready again', async () => {
    // The transmitter delivers by poll and nobody polls: the verification asked for stays queued.
    const instance = receiving(managed)
    made.push(instance)
    const streams = createSignalStreams({ receiver: instance.receiver, authorization: MANAGEMENT })
    const { stream_id } = await streams.create({ delivery: { method: 'urn:ietf:rfc:8936' } })
    await expect(streams.verify(stream_id, { waitMs: 100 })).rejects.toThrow('did not arrive')
    const report = await instance.gate.ready()
    expect(report.ready).toBe(false)
    expect(report.signals?.[0]).toMatchObject({ ready: false, verification: 'missing' })
    expect(report.signals?.[0]?.verificationRequestedAt).toBeTypeOf('number')
    expect(streamEvents(instance.events).map((event) => event.change)).toEqual([
      'verification_requested',
      'verification_missing',
    ])
    // The queued verification, delivered late (the transmitter's own queue): ready again.
    const [token] = [...managed.transmitter.queued.values()]
    expect((await instance.receiver.receive(token as string, 'poll')).kind).toBe('acknowledged')
    expect((await instance.gate.ready()).signals?.[0]).toMatchObject({
      ready: true,
      verification: 'verified',
    })
  })

  it('while a verification is awaited the stream is pending, and stays ready', async () => {
    const instance = receiving(managed)
    made.push(instance)
    const streams = createSignalStreams({ receiver: instance.receiver, authorization: MANAGEMENT })
    const { stream_id } = await streams.create({ delivery: { method: 'urn:ietf:rfc:8936' } })
    const queued = new Set(managed.transmitter.queued.keys())
    const waiting = streams.verify(stream_id, { waitMs: 10_000 })
    waiting.catch(() => {})
    // Bounded by count: until the transmitter queued the verification asked for.
    for (let i = 0; i < 200 && managed.transmitter.queued.size === queued.size; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const report = await instance.gate.ready()
    expect(report.ready).toBe(true)
    expect(report.signals?.[0]).toMatchObject({ ready: true, verification: 'pending' })
    const [token] = [...managed.transmitter.queued].filter(([jti]) => !queued.has(jti))
    await instance.receiver.receive(token?.[1] as string, 'poll')
    await waiting
    expect((await instance.gate.ready()).signals?.[0]?.verification).toBe('verified')
  })

  it('a status read is kept and reported: a disabled stream read at start-up is not ready', async () => {
    const instance = receiving(managed)
    made.push(instance)
    const streams = createSignalStreams({ receiver: instance.receiver, authorization: MANAGEMENT })
    const { stream_id } = await streams.create({ delivery: { method: 'urn:ietf:rfc:8936' } })
    // The transmitter disables the stream; its stream-updated event is queued, never polled.
    const changed = await fetch(`${managed.transmitter.issuer}/status`, {
      method: 'POST',
      headers: { authorization: MANAGEMENT, 'content-type': 'application/json' },
      body: JSON.stringify({ stream_id, status: 'disabled' }),
    })
    expect(changed.status).toBe(200)
    expect((await instance.gate.ready()).ready).toBe(true)
    expect(await streams.status(stream_id)).toMatchObject({ status: 'disabled' })
    const report = await instance.gate.ready()
    expect(report.ready).toBe(false)
    expect(report.signals?.[0]).toMatchObject({ status: 'disabled' })
    expect(streamEvents(instance.events)).toEqual([
      expect.objectContaining({ change: 'status', status: 'disabled' }),
    ])
    // Read again unchanged: no new event.
    await streams.status(stream_id)
    expect(streamEvents(instance.events)).toHaveLength(1)
  })
})

describe('a fleet sharing Redis', () => {
  let redis: RedisServer

  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  async function instance(client: Redis, prefix: string, on = world): Promise<Receiving> {
    const one = receiving(
      on,
      { store: { redis: client }, keyPrefix: `${prefix}:ssf`, timeoutMs: 300 },
      {
        revocation: { store: { redis: client as never }, keyPrefix: `${prefix}:rv` },
        // A listener, so that the volatile test Redis is reported as an event, not a warning.
        onEvent: () => {},
      },
    )
    made.push(one)
    await one.gate.ready()
    return one
  }

  it('a status one instance heard is reported by the other', async () => {
    const a = await instance(await redis.client(), 'r1')
    const b = await instance(await redis.client(), 'r1')
    expect(await streamUpdated(a, 'disabled')).toBe(202)
    const report = await b.gate.ready()
    expect(report.ready).toBe(false)
    expect(report.signals?.[0]).toMatchObject({ status: 'disabled', store: 'redis' })
    expect(report.signals?.[0]?.lastEventAt).toBeTypeOf('number')
    // B never heard it itself.
    expect(b.receiver.stream().status).toBeUndefined()
  })

  it('a verification asked for by one instance and pushed to the other: verify() resolves, both ready', async () => {
    const pushing = await startWorld()
    const a = await instance(await redis.client(), 'r2', pushing)
    const b = await instance(await redis.client(), 'r2', pushing)
    // The transmitter pushes to B only; A asks for the verification.
    const server = createServer((req, res) => {
      b.receiver.push({ headers: req.headers, method: req.method, stream: req }).then((answer) => {
        res.writeHead(answer.status, answer.headers).end(answer.body)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const streams = createSignalStreams({ receiver: a.receiver, authorization: 'Bearer admin' })
      const { stream_id } = await streams.create({
        delivery: {
          method: 'urn:ietf:rfc:8935',
          endpoint_url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ssf/events`,
          authorization_header: PUSH_AUTHORIZATION,
        },
      })
      await streams.verify(stream_id, { waitMs: 5000 })
      expect(a.receiver.stream().verifiedAt).toBeUndefined()
      expect(b.receiver.stream().verifiedAt).toBeTypeOf('number')
      for (const one of [a, b]) {
        expect((await one.gate.ready()).signals?.[0]).toMatchObject({
          ready: true,
          verification: 'verified',
          store: 'redis',
        })
      }
    } finally {
      server.close()
      await pushing.close()
    }
  })

  it('Redis down: the stream is reported from what this instance heard, marked unavailable', async () => {
    const a = await instance(await redis.client(), 'r4')
    await streamUpdated(a, 'paused')
    await redis.kill()
    try {
      const report = (await a.gate.ready()).signals?.[0]
      expect(report).toMatchObject({ status: 'paused', store: 'unavailable' })
    } finally {
      await redis.restart()
    }
  })
})
