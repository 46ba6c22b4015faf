/**
 * Provider faults after warm-up: known keys keep working while they are fresh; past max age the
 * last good keys are served for a bounded time (stale-if-error) and the gate says so; beyond the
 * bound it answers 503, never 401; no bad response ever replaces good keys; refreshes happen in
 * the background without making requests wait or leaving a rejection unhandled.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import type { GateOptions, JWKSOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer, type TestIssuerFault } from '../../src/testing/index.js'
import {
  acmeOptions,
  eventually,
  expectUnavailable,
  fakeClock,
  holdingFetch,
  JWKS,
  outcome,
  recordingGate,
  turns,
} from './helpers.js'

let issuer: TestIssuer
const clock = fakeClock()
const MAX_AGE = JWKS.maxAgeMs as number
const STALE = JWKS.staleIfErrorMs as number

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})
beforeEach(() => {
  clock.install()
})
afterEach(async () => {
  issuer.setFault(undefined)
  issuer.overrideJwks(undefined)
  await issuer.start()
  clock.uninstall()
})

const options = (jwks: JWKSOptions = {}): GateOptions => acmeOptions(issuer, jwks)

const mint = () => issuer.mint({}, { expiresInSeconds: 3600 })

/** A gate whose keys were fetched at the current (fake) time, with its events cleared. */
async function warmGate(jwks: object = {}) {
  const recording = recordingGate(options(jwks))
  expect(await outcome(recording.gate, await mint())).toMatchObject({ status: 200 })
  recording.take()
  issuer.resetCounts()
  return recording
}

function reasons(events: readonly GateEvent[]) {
  return events.flatMap((event) => (event.type === 'jwks_refresh_failed' ? [event.reason] : []))
}

describe('the provider goes down after warm-up', () => {
  it('keeps admitting with known keys within max age, without asking the provider', async () => {
    const { gate, takeTypes } = await warmGate()
    await issuer.stop()
    clock.advance(MAX_AGE * 0.5)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(takeTypes()).toEqual(['accepted'])
  })

  it('serves the last good keys past max age and reports jwks_stale', async () => {
    const { gate, take } = await warmGate()
    await issuer.stop()
    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    const events = take()
    expect(events.map((event) => event.type)).toEqual([
      'jwks_refresh_failed',
      'jwks_stale',
      'accepted',
    ])
    expect(reasons(events)).toEqual(['network'])
    expect(events[1]).toMatchObject({ issuer: issuer.issuer('acme'), ageMs: MAX_AGE + 1 })
    expect((await gate.ready()).issuers[0]).toMatchObject({
      state: 'stale',
      lastFailure: 'network',
    })
  })

  it('still serves stale keys just before the bound', async () => {
    const { gate, takeTypes } = await warmGate()
    await issuer.stop()
    clock.advance(MAX_AGE + STALE - 1)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(takeTypes()).toEqual(['jwks_refresh_failed', 'jwks_stale', 'accepted'])
  })

  it('answers 503, never 401, beyond the stale bound', async () => {
    const { gate, take } = await warmGate()
    await issuer.stop()
    clock.advance(MAX_AGE + STALE + 1)
    expectUnavailable(await outcome(gate, await mint()))
    const events = take()
    expect(events.map((event) => event.type)).toEqual(['jwks_refresh_failed', 'rejected'])
    expect(events[1]).toMatchObject({ code: 'ERR_JWKS_UNAVAILABLE' })
    expect((await gate.ready()).ready).toBe(false)
  })

  it('does not admit a token verified before the outage beyond the stale bound either', async () => {
    const recording = recordingGate(options())
    const token = await mint()
    expect(await outcome(recording.gate, token)).toMatchObject({ status: 200 })
    await issuer.stop()
    clock.advance(MAX_AGE + STALE + 1)
    // The verdict cache (up to 300 s by default) must not outlive the keys it was built on.
    expectUnavailable(await outcome(recording.gate, token))
  })

  it('comes back to fresh keys as soon as the provider answers again', async () => {
    const { gate, takeTypes } = await warmGate()
    await issuer.stop()
    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    takeTypes()
    await issuer.start()
    clock.advance(1000)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(takeTypes()).toEqual(['jwks_refreshed', 'accepted'])
    expect((await gate.ready()).issuers[0]).toMatchObject({
      state: 'fresh',
      lastFailure: undefined,
    })
  })

  it('asks a failing provider at most once per backoff while serving stale keys', async () => {
    const { gate } = await warmGate()
    issuer.setFault({ kind: 'status', status: 500 })
    clock.advance(MAX_AGE + 1)
    for (let request = 0; request < 50; request++) {
      expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    }
    expect(issuer.fetchCount()).toBe(1)
    clock.advance(1000)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(issuer.fetchCount()).toBe(2)
  })
})

const BAD_RESPONSES: Array<[string, () => void, string]> = [
  ['a 500', () => issuer.setFault({ kind: 'status', status: 500 }), 'status'],
  ['a 404', () => issuer.setFault({ kind: 'status', status: 404 }), 'status'],
  ['an HTML page', () => issuer.setFault({ kind: 'html' }), 'invalid_json'],
  ['truncated JSON', () => issuer.setFault({ kind: 'invalid-json' }), 'invalid_json'],
  ['an empty key set', () => issuer.setFault({ kind: 'empty-keys' }), 'no_usable_keys'],
  ['a huge body', () => issuer.setFault({ kind: 'huge', bytes: 1024 * 1024 }), 'too_large'],
  [
    'a timeout',
    () => issuer.setFault({ kind: 'slow-headers', delayMs: 3000 } satisfies TestIssuerFault),
    'timeout',
  ],
  [
    'a redirect',
    () => issuer.setFault({ kind: 'redirect', location: 'http://127.0.0.1:1/' }),
    'redirect',
  ],
  [
    'only encryption keys',
    () =>
      issuer.overrideJwks({
        keys: issuer.jwks('acme').keys.map((key) => ({ ...key, use: 'enc' })),
      }),
    'no_usable_keys',
  ],
  [
    'only private keys',
    () =>
      issuer.overrideJwks({
        keys: issuer.jwks('acme').keys.map((key) => issuer.privateKey(key['kid'] as string).jwk),
      }),
    'no_usable_keys',
  ],
  ['a JSON null', () => issuer.overrideJwks(null), 'invalid_json'],
  ['"keys" as an object', () => issuer.overrideJwks({ keys: {} }), 'invalid_json'],
]

describe.each(BAD_RESPONSES)('a refresh past max age gets %s', (_name, breakProvider, reason) => {
  it(`keeps the good keys (stale, reason ${reason}) and takes fresh ones once healed`, async () => {
    const { gate, take } = await warmGate()
    breakProvider()
    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    const events = take()
    expect(events.map((event) => event.type)).toEqual([
      'jwks_refresh_failed',
      'jwks_stale',
      'accepted',
    ])
    expect(reasons(events)).toEqual([reason])

    issuer.setFault(undefined)
    issuer.overrideJwks(undefined)
    clock.advance(1000)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(take().map((event) => event.type)).toEqual(['jwks_refreshed', 'accepted'])
  })
})

describe('background refresh', () => {
  it('refreshes after 80% of max age without making the request wait', async () => {
    // The refresh's fetch is held until the test lets it go, and the fetch deadline is on fake
    // timers: a request that waited for the refresh could not be answered before the release
    // below, however fast or slow the machine, and `eventually(() => answered)` would fail.
    clock.install({ timers: true })
    const held = holdingFetch()
    const { gate, events } = await warmGate({ fetch: held.fetch })
    held.hold()
    clock.advance(MAX_AGE * 0.85)
    let answered = false
    const answer = outcome(gate, await mint()).finally(() => {
      answered = true
    })
    await eventually(() => answered)
    expect(await answer).toMatchObject({ status: 200 })
    expect(events.map((event) => event.type)).toEqual(['accepted'])
    // The refresh had started, and is still held.
    await eventually(() => held.waiting() === 1)

    held.release()
    await eventually(() => events.some((event) => event.type === 'jwks_refreshed'))
    expect(events.map((event) => event.type)).toEqual(['accepted', 'jwks_refreshed'])
    expect(issuer.fetchCount()).toBe(1)
  })

  it.each([
    ['a 500', () => issuer.setFault({ kind: 'status', status: 500 }), 'status'],
    ['a JSON null', () => issuer.overrideJwks(null), 'invalid_json'],
    ['"keys" as a string', () => issuer.overrideJwks({ keys: 'none' }), 'invalid_json'],
  ])(
    'reports a failed background refresh (%s) as an event, never as an unhandled rejection',
    async (_name, breakProvider, reason) => {
      const unhandled: unknown[] = []
      const listener = (error: unknown) => unhandled.push(error)
      process.on('unhandledRejection', listener)
      try {
        const { gate, events } = await warmGate()
        breakProvider()
        clock.advance(MAX_AGE * 0.85)
        expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
        // After the failure is reported, one more trip round the event loop: Node reports a
        // rejection left unhandled once the microtasks of the tick that made it have run.
        await eventually(() => reasons(events).length > 0)
        await turns()
        expect(unhandled).toEqual([])
        expect(reasons(events)).toEqual([reason])
        expect(issuer.fetchCount()).toBe(1)
        expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
      } finally {
        process.off('unhandledRejection', listener)
      }
    },
  )
})
