/**
 * Provider faults seen through every framework of the harness: the same 503 with
 * Retry-After (never 401 or 500) at a cold start with the provider down or answering garbage,
 * the same recovery, and stale keys served the same way, with the events each gate emits.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { bearer, OK, UNAVAILABLE, useApps } from '../security/helpers.js'
import { fakeClock, JWKS } from './helpers.js'

let issuer: TestIssuer
const clock = fakeClock()
const events: GateEvent[] = []
const MAX_AGE = JWKS.maxAgeMs as number
/** One gate per framework, each emitting its own events. */
const GATES = APPS.length

// One clock for the whole file, only ever moving forward: the gates outlive single tests.
beforeAll(async () => {
  clock.install()
  issuer = await createTestIssuer({ realms: ['cold', 'bad', 'warm'], audience: 'gateway' })
})
afterAll(async () => {
  clock.uninstall()
  await issuer.close()
})
beforeEach(() => {
  events.length = 0
})
afterEach(async () => {
  await issuer.start()
})

const appsFor = (realm: string) =>
  useApps(() => ({
    issuers: keycloak({ authUrl: issuer.url, realms: [realm] }),
    audience: 'gateway',
    jwks: JWKS,
    onEvent: (event) => events.push(event),
  }))

const count = (type: string, reason?: string) =>
  events.filter(
    (event) =>
      event.type === type &&
      (reason === undefined || (event as { reason?: string }).reason === reason),
  ).length

describe('a cold start with the provider down', () => {
  const apps = appsFor('cold')

  it('answers 503 with Retry-After on every framework, then 200 once the provider is back', async () => {
    await issuer.stop()
    const answers = await apps.expectAll(
      bearer(await issuer.mint({}, { realm: 'cold' })),
      UNAVAILABLE,
    )
    for (const answer of answers) {
      expect(answer.headers['retry-after']?.[0]).toMatch(/^[1-9]\d*$/)
      expect(answer.headers['cache-control']).toEqual(['no-store'])
    }
    expect(count('jwks_refresh_failed', 'network')).toBe(GATES)
    expect(count('rejected')).toBe(GATES)

    await issuer.start()
    clock.advance(1000)
    await apps.expectAll(bearer(await issuer.mint({}, { realm: 'cold' })), OK)
    expect(count('jwks_refreshed')).toBe(GATES)
    expect(count('accepted')).toBe(GATES)
  })
})

describe('a cold start with the provider answering garbage', () => {
  const apps = appsFor('bad')
  afterEach(() => {
    issuer.setFault(undefined, { realm: 'bad' })
    issuer.overrideJwks(undefined, { realm: 'bad' })
  })

  it.each([
    ['an HTML page', () => issuer.setFault({ kind: 'html' }, { realm: 'bad' }), 'invalid_json'],
    ['a 500', () => issuer.setFault({ kind: 'status', status: 500 }, { realm: 'bad' }), 'status'],
    [
      'a timeout',
      () => issuer.setFault({ kind: 'slow-headers', delayMs: 2000 }, { realm: 'bad' }),
      'timeout',
    ],
    ['a JSON null', () => issuer.overrideJwks(null, { realm: 'bad' }), 'invalid_json'],
    [
      'a key set whose "keys" is an object',
      () => issuer.overrideJwks({ keys: {} }, { realm: 'bad' }),
      'invalid_json',
    ],
  ])('answers 503, never 500, for %s', async (_name, breakProvider, reason) => {
    clock.advance(10_000)
    breakProvider()
    await apps.expectAll(bearer(await issuer.mint({}, { realm: 'bad' })), UNAVAILABLE)
    expect(count('jwks_refresh_failed', reason)).toBe(GATES)
  })
})

describe('stale keys through the adapters', () => {
  const apps = appsFor('warm')

  it('admits with stale keys past max age on every framework and reports it', async () => {
    await apps.expectAll(
      bearer(await issuer.mint({}, { realm: 'warm', expiresInSeconds: 3600 })),
      OK,
    )
    await issuer.stop()
    clock.advance(MAX_AGE + 1)
    await apps.expectAll(
      bearer(await issuer.mint({}, { realm: 'warm', expiresInSeconds: 3600 })),
      OK,
    )
    expect(count('jwks_stale')).toBe(GATES)
    expect(count('jwks_refresh_failed', 'network')).toBe(GATES)
  })
})
