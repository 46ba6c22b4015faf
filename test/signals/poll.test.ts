/**
 * Poll-based delivery (RFC 8936) from the receiver's side: `ack` of what was applied, `setErrs`
 * (§2.4.3) for what was refused, nothing for what could not be judged; one poller per fleet;
 * long polling, and the pace of polls (none between held long polls, no busy loop against a
 * transmitter that does not hold them); backoff on errors; a transmitter answering 10,000 SETs.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

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

/** Real time, whatever timers a test fakes. */
const realSetTimeout = globalThis.setTimeout
async function until(check: () => boolean, what: string): Promise<void> {
  for (let round = 0; round < 500 && !check(); round += 1) {
    await new Promise((resolve) => realSetTimeout(resolve, 10))
  }
  if (!check()) throw new Error(`never happened: ${what}`)
}

/**
 * Timers and the monotonic clock are the test's: a pause the poller takes ends only when the
 * test moves time on, so a test sees whether the poller waits by counting requests.
 */
const fakeTimers = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })

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

describe('the pace of polls (RFC 8936 §2.1, §2.4)', () => {
  it('default options: the next long poll leaves the moment one ends empty, so a SET queued then is applied with no pause', async () => {
    // §2.4: returnImmediately false (the default) is an RFC 6202 long poll, answered when SETs
    // are available or when the transmitter's hold ends; §2.1: the recipient then polls again,
    // its acknowledgements in that request. A pause after an empty answer is time in which a
    // revocation waits at the transmitter while nobody asks for it.
    fakeTimers()
    const made = open()
    const token = await world.issuer.mint({ sub: 'p6', iat: nowSeconds() - 30 })
    const polling = createSignalPoller({
      receiver: made.receiver,
      endpoint: world.transmitter.pollEndpoint,
    })
    pollers.push(polling)
    const before = world.transmitter.polls
    try {
      polling.start()
      await until(() => world.transmitter.polls === before + 1, 'the first long poll')
      // The test transmitter holds a long poll two seconds, then answers with nothing.
      await vi.advanceTimersByTimeAsync(2000)
      // From here no timer fires: a pause before the next request would never end.
      await until(() => world.transmitter.polls === before + 2, 'a second long poll')
      const set = await queue(SSF_EVENTS.credentialChange, user('p6'))
      await until(() => world.transmitter.acknowledged.has(set.jti), 'the SET acknowledged')
      // The held second request took it, the third acknowledged it (and is held in turn).
      expect(world.transmitter.polls).toBe(before + 3)
      expect(made.events.filter((event) => event.type === 'signal_applied')).toHaveLength(1)
    } finally {
      vi.useRealTimers()
    }
    expect(await decided(made.gate, token)).toBe('revoked')
  })

  it.each([
    ['long polls (the default), at most one a minBackoffMs', {}, 1000],
    [
      'short polls (returnImmediately: true), at most one an intervalMs',
      { returnImmediately: true },
      5000,
    ],
  ] as const)(
    'a transmitter answering every request at once with nothing is not polled in a loop: %s',
    async (_name, extra, spacingMs) => {
      fakeTimers()
      world.transmitter.failPolls({ times: 1_000_000, answer: { sets: {} } })
      const polling = createSignalPoller({
        receiver: open().receiver,
        endpoint: world.transmitter.pollEndpoint,
        ...extra,
      })
      pollers.push(polling)
      const before = world.transmitter.polls
      const periodMs = 20_000
      try {
        polling.start()
        await until(() => world.transmitter.polls === before + 1, 'the first poll')
        // Time moves on in steps, the answers travel between them (a busy loop would poll
        // hundreds of times meanwhile, in no time at all).
        for (let elapsed = 0; elapsed < periodMs; elapsed += 100) {
          await vi.advanceTimersByTimeAsync(100)
          await new Promise((resolve) => realSetTimeout(resolve, 2))
        }
      } finally {
        vi.useRealTimers()
      }
      const asked = world.transmitter.polls - before
      expect(asked).toBeGreaterThanOrEqual(2)
      expect(asked).toBeLessThanOrEqual(periodMs / spacingMs + 1)
    },
  )

  it('long polling: a failed poll is asked again after minBackoffMs, not at once', async () => {
    fakeTimers()
    const events: SignalEvent[] = []
    world.transmitter.failPolls({ times: 1, status: 500 })
    const polling = createSignalPoller({
      receiver: open().receiver,
      endpoint: world.transmitter.pollEndpoint,
      onEvent: (event) => events.push(event),
    })
    pollers.push(polling)
    const before = world.transmitter.polls
    try {
      polling.start()
      await until(() => events.length === 1, 'the failure reported')
      expect(events[0]).toMatchObject({ type: 'signal_poll_error', status: 500, retryInMs: 1000 })
      await vi.advanceTimersByTimeAsync(999)
      await new Promise((resolve) => realSetTimeout(resolve, 50))
      expect(world.transmitter.polls).toBe(before + 1)
      await vi.advanceTimersByTimeAsync(1)
      await until(() => world.transmitter.polls === before + 2, 'the retry')
    } finally {
      vi.useRealTimers()
    }
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
