/**
 * Poll-based delivery (RFC 8936) from the receiver's side: `ack` of what was applied, `setErrs`
 * (§2.4.3) for what was refused, nothing for what could not be judged; one poller per fleet;
 * long polling; backoff on errors; a transmitter answering 10,000 SETs.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { SignalEvent } from '../../src/signals/events.js'
import {
  createSignalPoller,
  type SignalPoller,
  type SignalPollerOptions,
} from '../../src/signals/poll.js'
import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import {
  decided,
  nowSeconds,
  type Receiving,
  receiving,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
let current: Receiving[] = []
let pollers: SignalPoller[] = []

beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})
afterEach(async () => {
  for (const poller of pollers) await poller.stop()
  for (const made of current) await made.close()
  pollers = []
  current = []
  // Whatever a test left queued is not the next test's.
  ;(world.transmitter.queued as Map<string, string>).clear()
  world.transmitter.failPolls({ times: 0 })
})

const user = (sub: string) => ({ format: 'iss_sub', iss: world.tokenIssuer, sub })

function open(extra: Parameters<typeof receiving>[1] = {}) {
  const made = receiving(world, extra)
  current.push(made)
  return made
}

function poller(made: Receiving, extra: Partial<SignalPollerOptions> = {}, events?: SignalEvent[]) {
  const created = createSignalPoller({
    receiver: made.receiver,
    endpoint: world.transmitter.pollEndpoint,
    returnImmediately: true,
    ...(events === undefined ? {} : { onEvent: (event) => events.push(event) }),
    ...extra,
  })
  pollers.push(created)
  return created
}

async function queue(event: string, subject: object, overrides = {}) {
  const set = await world.transmitter.sign(event, subject as Record<string, unknown>, {}, overrides)
  await world.transmitter.deliver(set)
  return set
}

describe('poll (RFC 8936)', () => {
  it('applies what it receives and acknowledges it in the next request', async () => {
    const made = open()
    const token = await world.issuer.mint({ sub: 'p1', iat: nowSeconds() - 30 })
    const set = await queue(SSF_EVENTS.accountDisabled, user('p1'))
    const polling = poller(made)
    expect(await polling.pollOnce()).toBe(1)
    expect(await decided(made.gate, token)).toBe('revoked')
    expect(polling.pending.ack).toEqual([set.jti])
    expect(world.transmitter.acknowledged.has(set.jti)).toBe(false)
    expect(await polling.pollOnce()).toBe(0)
    expect(world.transmitter.acknowledged.has(set.jti)).toBe(true)
    expect(polling.pending.ack).toEqual([])
    expect(made.events.find((event) => event.type === 'signal_applied')).toMatchObject({
      delivery: 'poll',
    })
  })

  it('reports a refused SET in setErrs with its RFC 8935 code, and does not acknowledge it', async () => {
    const made = open()
    const set = await queue(SSF_EVENTS.accountDisabled, user('p2'), { key: 'other' })
    const polling = poller(made)
    await polling.pollOnce()
    await polling.pollOnce()
    expect(world.transmitter.errors.get(set.jti)).toEqual({
      err: 'invalid_key',
      description: expect.any(String),
    })
    expect(world.transmitter.acknowledged.has(set.jti)).toBe(false)
  })

  it('neither acknowledges nor refuses a SET it could not judge: the transmitter keeps it', async () => {
    const made = open({
      transmitter: { issuer: world.transmitter.issuer, jwksUri: 'http://127.0.0.1:9/jwks' },
    })
    const set = await queue(SSF_EVENTS.accountDisabled, user('p3'))
    const polling = poller(made)
    await expect(polling.pollOnce()).rejects.toThrow('store_unavailable')
    expect(polling.pending).toEqual({ ack: [], setErrs: {} })
    expect(world.transmitter.queued.has(set.jti)).toBe(true)
  })

  it('a poll answer of 10,000 SETs: at most maxEvents are judged, the rest come again', async () => {
    const made = open()
    const sets = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, index) => [`j-${index}`, 'x.y.z']),
    )
    world.transmitter.failPolls({ times: 1, answer: { sets, moreAvailable: false } })
    const polling = poller(made, { maxEvents: 50 })
    expect(await polling.pollOnce()).toBe(50)
    expect(Object.keys(polling.pending.setErrs)).toHaveLength(50)
    expect(polling.pending.ack).toEqual([])
  })

  it('backs off exponentially on errors, up to maxBackoffMs', async () => {
    const made = open()
    const events: SignalEvent[] = []
    world.transmitter.failPolls({ times: 4, status: 500 })
    const start = world.transmitter.polls
    const polling = poller(made, { minBackoffMs: 10, maxBackoffMs: 40 }, events)
    polling.start()
    for (let wait = 0; wait < 200 && world.transmitter.polls < start + 5; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await polling.stop()
    const errors = events.filter((event) => event.type === 'signal_poll_error')
    expect(
      errors.slice(0, 4).map((event) => [event.reason, event.status, event.retryInMs]),
    ).toEqual([
      ['status', 500, 10],
      ['status', 500, 20],
      ['status', 500, 40],
      ['status', 500, 40],
    ])
  })

  it('long polling (returnImmediately: false): a SET queued while the request waits is applied', async () => {
    const made = open()
    const token = await world.issuer.mint({ sub: 'p5', iat: nowSeconds() - 30 })
    const polling = poller(made, { returnImmediately: false })
    const round = polling.pollOnce()
    await queue(SSF_EVENTS.credentialChange, user('p5'))
    expect(await round).toBe(1)
    expect(await decided(made.gate, token)).toBe('revoked')
  })

  it('options are validated with messages that say what to change', () => {
    const made = open()
    expect(() =>
      createSignalPoller({ receiver: made.receiver, endpoint: 'http://idp.example.com/poll' }),
    ).toThrow('createSignalPoller(options): "endpoint" must be https')
    expect(() =>
      createSignalPoller({ receiver: {} as never, endpoint: world.transmitter.pollEndpoint }),
    ).toThrow('"receiver" must be createSignalReceiver(…)')
  })
})

describe('one poller per fleet (a Redis lock)', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('of two instances only one polls; the other takes over once it stops', async () => {
    const a = poller(open(), { store: { redis: await redis.client() } })
    const b = poller(open(), { store: { redis: await redis.client() } })
    const before = world.transmitter.polls
    expect(await a.pollOnce()).toBe(0)
    expect(await b.pollOnce()).toBeUndefined()
    expect(world.transmitter.polls).toBe(before + 1)
    await a.stop()
    expect(await b.pollOnce()).toBe(0)
  })
})
