/**
 * Several realms behind one gate: a realm whose provider fails never affects another realm's
 * tokens, events name the failing issuer only, and `ready()` reports each issuer on its own.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  eventually,
  expectUnavailable,
  fakeClock,
  JWKS,
  outcome,
  recordingGate,
} from './helpers.js'

let issuer: TestIssuer
const clock = fakeClock()
const MAX_AGE = JWKS.maxAgeMs as number
const STALE = JWKS.staleIfErrorMs as number

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'globex'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})
beforeEach(() => {
  clock.install()
  issuer.resetCounts()
})
afterEach(() => {
  issuer.setFault(undefined, { realm: 'acme' })
  issuer.setFault(undefined, { realm: 'globex' })
  clock.uninstall()
})

const options = (): GateOptions => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'globex'] }),
  audience: 'gateway',
  jwks: JWKS,
})

const mint = (realm: 'acme' | 'globex') => issuer.mint({}, { realm, expiresInSeconds: 3600 })

describe('one realm down while another serves', () => {
  it('admits the healthy realm and answers 503 for the failing one, from a cold start', async () => {
    issuer.setFault({ kind: 'status', status: 503 }, { realm: 'globex' })
    const { gate, take } = recordingGate(options())
    expect(await outcome(gate, await mint('acme'))).toMatchObject({ status: 200 })
    expectUnavailable(await outcome(gate, await mint('globex')))
    expect(await outcome(gate, await mint('acme'))).toMatchObject({ status: 200 })
    const events = take()
    const keyEvents = events.filter((event) => event.type.startsWith('jwks_'))
    expect(keyEvents).toEqual([
      { type: 'jwks_refreshed', issuer: issuer.issuer('acme'), kids: [expect.any(String)] },
      {
        type: 'jwks_refresh_failed',
        issuer: issuer.issuer('globex'),
        reason: 'status',
        status: 503,
        url: issuer.jwksUri('globex'),
        error: expect.anything(),
      },
    ])
    expect(issuer.fetchCount('acme')).toBe(1)
    expect(issuer.fetchCount('globex')).toBe(1)

    const report = await gate.ready()
    expect(report.ready).toBe(false)
    expect(report.issuers).toEqual([
      expect.objectContaining({ issuer: issuer.issuer('acme'), state: 'fresh' }),
      expect.objectContaining({
        issuer: issuer.issuer('globex'),
        state: 'unavailable',
        lastFailure: 'status',
      }),
    ])
  })

  it('keeps the healthy realm fresh while the failing one goes stale and then unavailable', async () => {
    const { gate, take } = recordingGate(options())
    expect(await outcome(gate, await mint('acme'))).toMatchObject({ status: 200 })
    expect(await outcome(gate, await mint('globex'))).toMatchObject({ status: 200 })
    take()
    issuer.setFault({ kind: 'html' }, { realm: 'globex' })

    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await mint('acme'))).toMatchObject({ status: 200 })
    expect(await outcome(gate, await mint('globex'))).toMatchObject({ status: 200 })
    const stale = take().filter((event) => event.type === 'jwks_stale')
    expect(stale).toEqual([
      { type: 'jwks_stale', issuer: issuer.issuer('globex'), ageMs: MAX_AGE + 1 },
    ])

    clock.advance(STALE)
    expect(await outcome(gate, await mint('acme'))).toMatchObject({ status: 200 })
    expectUnavailable(await outcome(gate, await mint('globex')))
    const report = await gate.ready()
    expect(report.issuers.map((entry) => entry.state)).toEqual(['fresh', 'unavailable'])
  })

  it('does not let a slow realm hold up requests for another realm', async () => {
    // Fake timers: globex's fetch deadline fires only when the test moves time, so acme's answer
    // is proven to come while globex's fetch is still under way, whatever the machine's load.
    clock.install({ timers: true })
    issuer.setFault({ kind: 'hang' }, { realm: 'globex' })
    const { gate } = recordingGate({ ...options(), jwks: { ...JWKS, timeoutMs: 800 } })
    let slowSettled = false
    const slow = outcome(gate, await mint('globex')).finally(() => {
      slowSettled = true
    })
    await eventually(() => issuer.fetchCount('globex') === 1)
    expect(await outcome(gate, await mint('acme'))).toMatchObject({ status: 200 })
    expect(slowSettled).toBe(false)
    await vi.advanceTimersByTimeAsync(800)
    expectUnavailable(await slow)
  })

  it('warms every realm with ready() and reports them all', async () => {
    const { gate, take } = recordingGate(options())
    const report = await gate.ready()
    expect(report).toEqual({
      ready: true,
      issuers: [
        expect.objectContaining({ issuer: issuer.issuer('acme'), state: 'fresh', keys: 1 }),
        expect.objectContaining({ issuer: issuer.issuer('globex'), state: 'fresh', keys: 1 }),
      ],
    })
    expect(take().map((event) => event.type)).toEqual(['jwks_refreshed', 'jwks_refreshed'])
    expect(await outcome(gate, await mint('globex'))).toMatchObject({ status: 200 })
    expect(issuer.fetchCount('globex')).toBe(1)
  })
})
