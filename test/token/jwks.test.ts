import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import { ServiceUnavailableError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate } from '../../src/gate/gate.js'
import type { TestIssuerFault } from '../../src/testing/faults.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  IssuerKeys,
  JWKS_WARNING_CODE,
  KeySets,
  type NormalizedJWKSOptions,
} from '../../src/token/jwks.js'
import { resetWarningsForTests } from '../../src/warnings.js'
import { TEST_JWKS_OPTIONS } from '../helpers/jwks-options.js'

const OPTIONS = TEST_JWKS_OPTIONS

let issuer: TestIssuer

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'beta'], algorithms: ['RS256', 'ES256'] })
})
afterAll(async () => {
  await issuer.close()
})
afterEach(() => {
  issuer.setFault(undefined)
  issuer.setFault(undefined, { realm: 'beta' })
  issuer.overrideJwks(undefined)
  issuer.resetCounts()
  vi.useRealTimers()
})

function keysOf(options: Partial<NormalizedJWKSOptions> = {}, realm = 'acme', discovery = false) {
  const events: GateEvent[] = []
  const keys = new IssuerKeys(
    {
      issuer: issuer.issuer(realm),
      jwksUri: discovery ? undefined : issuer.jwksUri(realm),
      discovery,
    },
    ['RS256', 'PS256', 'ES256', 'EdDSA'],
    { ...OPTIONS, ...options },
    { emit: (event) => events.push(event), onKeysRetired: undefined },
  )
  return { keys, events }
}

function kidOf(alg: string, realm = 'acme'): string {
  const jwk = issuer.jwks(realm).keys.find((key) => key.alg === alg)
  return jwk?.kid as string
}

describe('IssuerKeys', () => {
  it('fetches once and resolves keys by kid and algorithm', async () => {
    const { keys, events } = keysOf()
    const found = await keys.resolve(kidOf('RS256'), 'RS256')
    expect(found).toHaveLength(1)
    expect(await keys.resolve(kidOf('ES256'), 'ES256')).toHaveLength(1)
    expect(issuer.fetchCount()).toBe(1)
    expect(events.map((event) => event.type)).toEqual(['jwks_refreshed'])
  })

  it('does not match a key with an algorithm its type cannot verify', async () => {
    const { keys } = keysOf()
    expect(await keys.resolve(kidOf('RS256'), 'ES256')).toEqual([])
    expect(await keys.resolve(kidOf('ES256'), 'RS256')).toEqual([])
  })

  it('shares one fetch between concurrent misses', async () => {
    const { keys } = keysOf()
    const results = await Promise.all(
      Array.from({ length: 200 }, () => keys.resolve(kidOf('RS256'), 'RS256')),
    )
    expect(results.every((found) => found.length === 1)).toBe(true)
    expect(issuer.fetchCount()).toBe(1)
  })

  describe('unknown kids', () => {
    /** Serves the test issuer's key set from memory and records when (fake clock) it was fetched. */
    function inMemoryKeys(options: Partial<NormalizedJWKSOptions> = {}) {
      const fetchedAt: number[] = []
      const fetch: typeof globalThis.fetch = async () => {
        fetchedAt.push(Date.now())
        return new Response(JSON.stringify(issuer.jwks('acme')), { status: 200 })
      }
      return { ...keysOf({ fetch, ...options }), fetchedAt }
    }
    /** Advances the fake clock until the lookup settles (it may wait for its refetch slot). */
    async function settle<T>(promise: Promise<T>): Promise<T> {
      let settled = false
      promise.then(
        () => (settled = true),
        () => (settled = true),
      )
      for (let step = 0; !settled && step < 10_000; step++) await vi.advanceTimersByTimeAsync(10)
      return promise
    }
    const intervals = (times: number[]) =>
      times.slice(1).map((time, index) => time - (times[index] as number))

    it('accepts a key rotated in just after a fetch on the first request that carries it', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      vi.advanceTimersByTime(100)
      const rotated = await issuer.rotate({ alg: 'RS256' })
      // It waits for the next refetch, minCooldownMs after the last one, instead of being refused.
      expect(await settle(keys.resolve(rotated, 'RS256'))).toHaveLength(1)
      expect(fetchedAt).toEqual([1_000_000, 1_000_500])
    })

    it('backs off refetches for kids that stay unknown, from minCooldownMs to one per cooldown', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      for (let index = 0; Date.now() < 1_000_000 + 100_000; index++) {
        expect(await settle(keys.resolve(`random-${index}`, 'RS256'))).toEqual([])
        vi.advanceTimersByTime(100)
      }
      expect(intervals(fetchedAt)).toEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000])
    })

    it('answers a kid that stays unknown at once while the next refetch is further than minCooldownMs away', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      await settle(keys.resolve('random-a', 'RS256'))
      // The interval is now 1000 ms from the refetch at 1_000_500: nothing is due within 500 ms.
      expect(await keys.resolve('random-b', 'RS256')).toEqual([])
      expect(fetchedAt).toHaveLength(2)
    })

    it('asks beforeFetch before a refetch it makes or waits for, not for a kid refused while backed off', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      const asked: string[] = []
      await settle(keys.resolve('random-a', 'RS256', () => asked.push('a')))
      // The interval is now 1000 ms from the refetch at 1_000_500: refused at once, nothing asked.
      expect(await keys.resolve('random-b', 'RS256', () => asked.push('b'))).toEqual([])
      expect(asked).toEqual(['a'])
      expect(fetchedAt).toHaveLength(2)
    })

    it('answers an unknown kid at once with no keys while refetches back off, and leaves the rest to resolve()', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      // The first unknown kid may be refetched for: resolve() decides.
      expect(keys.resolveNow('random-a', 'RS256')).toBeUndefined()
      await settle(keys.resolve('random-a', 'RS256'))
      // The next refetch is 1000 ms after the last: refused now, no fetch.
      expect(keys.resolveNow('random-b', 'RS256')).toEqual([])
      expect(fetchedAt).toHaveLength(2)
      // Once a refetch is due within minCooldownMs, resolve() decides again.
      vi.advanceTimersByTime(600)
      expect(keys.resolveNow('random-c', 'RS256')).toBeUndefined()
    })

    it('makes no fetch when beforeFetch throws, and rejects with what it threw', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      const refused = new Error('another issuer')
      const lookup = keys.resolve('random', 'RS256', () => {
        throw refused
      })
      await expect(settle(lookup)).rejects.toBe(refused)
      expect(fetchedAt).toHaveLength(1)
    })

    it('resets the back-off once a refetch finds the kid it was made for', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      for (let index = 0; index < 40; index++) {
        await settle(keys.resolve(`random-${index}`, 'RS256'))
        vi.advanceTimersByTime(100)
      }
      const rotated = await issuer.rotate({ alg: 'RS256' })
      while ((await settle(keys.resolve(rotated, 'RS256'))).length === 0)
        vi.advanceTimersByTime(100)
      const found = fetchedAt.length
      await settle(keys.resolve('random-after', 'RS256'))
      expect(fetchedAt).toHaveLength(found + 1)
      expect(intervals(fetchedAt).at(-1)).toBe(500)
    })

    it('resets the back-off after a cooldown without unknown kids', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      for (let index = 0; index < 80; index++) {
        await settle(keys.resolve(`random-${index}`, 'RS256'))
        vi.advanceTimersByTime(100)
      }
      vi.advanceTimersByTime(30_000)
      const before = fetchedAt.length
      const rotated = await issuer.rotate({ alg: 'RS256' })
      expect(await keys.resolve(rotated, 'RS256')).toHaveLength(1)
      expect(fetchedAt).toHaveLength(before + 1)
    })

    it('stops waiting for a refetch slot when the gate closes', async () => {
      vi.useFakeTimers({ now: 1_000_000 })
      const { keys, fetchedAt } = inMemoryKeys()
      await settle(keys.resolve(kidOf('RS256'), 'RS256'))
      const waiting = keys.resolve('random', 'RS256')
      keys.close()
      expect(await waiting).toEqual([])
      expect(fetchedAt).toHaveLength(1)
    })
  })

  it('retires a key that leaves the set, and reuses unchanged keys across refreshes', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { keys } = keysOf({ cooldownMs: 0 })
    const [kept] = await keys.resolve(kidOf('ES256'), 'ES256')
    const extra = await issuer.rotate({ alg: 'RS256' })
    const [leaving] = await keys.resolve(extra, 'RS256')
    issuer.unpublish(extra)
    vi.advanceTimersByTime(600_000)
    const [keptAgain] = await keys.resolve(kidOf('ES256'), 'ES256')
    expect(keptAgain).toBe(kept)
    expect(kept?.retired).toBe(false)
    expect(leaving?.retired).toBe(true)
  })

  it('refreshes in the background after 80% of the max age without making requests wait', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { keys, events } = keysOf({ maxAgeMs: 10_000 })
    await keys.resolve(kidOf('RS256'), 'RS256')
    vi.advanceTimersByTime(8_500)
    issuer.setFault({ kind: 'slow-headers', delayMs: 300 })
    // Order, not time: the request is answered while the refresh it started has yet to finish.
    expect(await keys.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
    expect(events.map((event) => event.type)).toEqual(['jwks_refreshed'])
    await vi.waitFor(() =>
      expect(events.map((event) => event.type)).toEqual(['jwks_refreshed', 'jwks_refreshed']),
    )
    expect(issuer.fetchCount()).toBe(2)
  })

  it('serves the last good keys after max age while refreshes fail, and says so', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { keys, events } = keysOf({ maxAgeMs: 10_000, staleIfErrorMs: 60_000 })
    await keys.resolve(kidOf('RS256'), 'RS256')
    issuer.setFault({ kind: 'status', status: 500 })
    vi.advanceTimersByTime(11_000)
    expect(await keys.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
    expect(keys.status().state).toBe('stale')
    expect(events.map((event) => event.type)).toEqual([
      'jwks_refreshed',
      'jwks_refresh_failed',
      'jwks_stale',
    ])
    expect(events[1]).toMatchObject({ reason: 'status' })
  })

  it('stops serving stale keys after the stale bound: 503, never 401', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { keys } = keysOf({ maxAgeMs: 10_000, staleIfErrorMs: 5_000 })
    await keys.resolve(kidOf('RS256'), 'RS256')
    issuer.setFault({ kind: 'status', status: 502 })
    vi.advanceTimersByTime(16_000)
    await expect(keys.resolve(kidOf('RS256'), 'RS256')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    )
    expect(keys.status()).toMatchObject({ state: 'unavailable', keys: 0, lastFailure: 'status' })
  })

  it('answers 503 with Retry-After on a cold start with the provider down, and recovers', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { keys } = keysOf({ cooldownMs: 30_000 })
    issuer.setFault({ kind: 'status', status: 503 })
    const error = await keys.resolve(kidOf('RS256'), 'RS256').catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ServiceUnavailableError)
    expect((error as ServiceUnavailableError).headers['Retry-After']).toBe('1')
    // Backing off: no new fetch within a second of the failure.
    await keys.resolve(kidOf('RS256'), 'RS256').catch(() => undefined)
    expect(issuer.fetchCount()).toBe(1)
    issuer.setFault(undefined)
    vi.advanceTimersByTime(1000)
    expect(await keys.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
  })

  it.each([
    ['HTML', { kind: 'html' as const }, 'invalid_json'],
    ['invalid JSON', { kind: 'invalid-json' as const }, 'invalid_json'],
    ['an empty key set', { kind: 'empty-keys' as const }, 'no_usable_keys'],
    ['a 404', { kind: 'status' as const, status: 404 }, 'status'],
    ['a 429', { kind: 'status' as const, status: 429 }, 'status'],
    ['a redirect', { kind: 'redirect' as const, location: 'http://127.0.0.1:1/certs' }, 'redirect'],
    ['a huge body', { kind: 'huge' as const, bytes: 2_000_000 }, 'too_large'],
    ['slow headers', { kind: 'slow-headers' as const, delayMs: 2000 }, 'timeout'],
    ['a slow body', { kind: 'slow-body' as const, delayMs: 2000 }, 'timeout'],
  ])('never replaces good keys with %s', async (_, fault, reason) => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { keys, events } = keysOf({ maxAgeMs: 10_000, timeoutMs: 300 })
    await keys.resolve(kidOf('RS256'), 'RS256')
    issuer.setFault(fault)
    vi.advanceTimersByTime(11_000)
    expect(await keys.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
    expect(events.find((event) => event.type === 'jwks_refresh_failed')).toMatchObject({ reason })
  })

  type Mutation = (jwk: Record<string, unknown>) => unknown
  it.each<[string, Mutation]>([
    ['encryption keys', (jwk: Record<string, unknown>) => ({ ...jwk, use: 'enc' })],
    [
      'keys whose key_ops exclude verify',
      (jwk: Record<string, unknown>) => ({ ...jwk, key_ops: ['encrypt'] }),
    ],
    [
      'keys whose alg contradicts their type',
      (jwk: Record<string, unknown>) => ({ ...jwk, alg: jwk.kty === 'RSA' ? 'ES256' : 'RS256' }),
    ],
    [
      'keys for algorithms not allowed',
      (jwk: Record<string, unknown>) => ({ ...jwk, alg: 'RS512' }),
    ],
    [
      'symmetric keys',
      (jwk: Record<string, unknown>) => ({ kid: jwk.kid, kty: 'oct', k: 'c2VjcmV0' }),
    ],
    ['keys carrying private members', (jwk: Record<string, unknown>) => ({ ...jwk, d: 'AQAB' })],
    [
      'EC keys on another curve',
      (jwk: Record<string, unknown>) =>
        jwk.kty === 'EC' ? { ...jwk, crv: 'P-384' } : { ...jwk, kty: 'EC' },
    ],
    ['malformed entries', () => 'not a key'],
  ])('ignores %s', async (_, mutate) => {
    const { keys, events } = keysOf()
    issuer.overrideJwks({ keys: issuer.jwks().keys.map(mutate) })
    await expect(keys.resolve(kidOf('RS256'), 'RS256')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    )
    expect(events.at(-1)).toMatchObject({ type: 'jwks_refresh_failed', reason: 'no_usable_keys' })
  })

  it('ignores RSA keys shorter than 2048 bits', async () => {
    const { generateKeyPairSync } = await import('node:crypto')
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 })
    const weak = { ...publicKey.export({ format: 'jwk' }), kid: 'weak', alg: 'RS256', use: 'sig' }
    issuer.overrideJwks({ keys: [weak, ...issuer.jwks().keys] })
    const { keys } = keysOf()
    expect(await keys.resolve('weak', 'RS256')).toEqual([])
    expect(await keys.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
  })

  it('keeps keys with a duplicated kid and offers both as candidates', async () => {
    const extra = await issuer.rotate({ alg: 'RS256' })
    const published = issuer.jwks().keys
    const twin = { ...published.find((key) => key.kid === extra), kid: kidOf('ES256') }
    issuer.overrideJwks({ keys: [...published, twin] })
    const { keys } = keysOf()
    expect(await keys.resolve(kidOf('ES256'), 'RS256')).toHaveLength(1)
    expect(await keys.resolve(kidOf('ES256'), 'ES256')).toHaveLength(1)
  })

  it('finds the key set through OpenID discovery', async () => {
    const { keys } = keysOf({}, 'acme', true)
    expect(await keys.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
    expect(issuer.discoveryCount()).toBe(1)
  })

  it('refuses a discovery document that names another issuer', async () => {
    const events: GateEvent[] = []
    const keys = new IssuerKeys(
      { issuer: `${issuer.issuer('acme')}/`, jwksUri: undefined, discovery: true },
      ['RS256'],
      OPTIONS,
      { emit: (event) => events.push(event), onKeysRetired: undefined },
    )
    await expect(keys.resolve(kidOf('RS256'), 'RS256')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    )
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'jwks_refresh_failed', reason: 'discovery' }),
    )
  })

  it('keeps one realm serving while another is down', async () => {
    const acme = keysOf({}, 'acme')
    const beta = keysOf({}, 'beta')
    issuer.setFault({ kind: 'status', status: 500 }, { realm: 'beta' })
    expect(await acme.keys.resolve(kidOf('RS256', 'acme'), 'RS256')).toHaveLength(1)
    await expect(beta.keys.resolve(kidOf('RS256', 'beta'), 'RS256')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    )
  })

  it('reports its state for readiness probes', async () => {
    const { keys } = keysOf()
    expect(keys.status()).toMatchObject({ state: 'unavailable', keys: 0, fetchedAt: undefined })
    expect(await keys.warm()).toMatchObject({ state: 'fresh', keys: issuer.jwks().keys.length })
  })
})

describe('a key set the provider refuses', () => {
  it('names the status and the URL of a JWKS answering 404 in the event and in ready()', async () => {
    const events: GateEvent[] = []
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      onEvent: (event) => events.push(event),
    })
    issuer.setFault({ kind: 'status', status: 404 })
    const report = await gate.ready()
    await gate.close()
    const place = { lastFailureStatus: 404, lastFailureUrl: issuer.jwksUri('acme') }
    expect(report.issuers[0]).toMatchObject({
      state: 'unavailable',
      lastFailure: 'status',
      ...place,
    })
    const failed = events.find((event) => event.type === 'jwks_refresh_failed')
    expect(failed).toMatchObject({ reason: 'status', status: 404, url: issuer.jwksUri('acme') })
    expect(String((failed as { error: Error }).error.message)).toBe(
      `JWKS fetch failed: status 404 from ${issuer.jwksUri('acme')}`,
    )
  })

  it('names the discovery document when discovery answers 404', async () => {
    const { keys, events } = keysOf({}, 'acme', true)
    issuer.setFault({ kind: 'status', status: 404 }, { endpoint: 'discovery' })
    await expect(keys.resolve(kidOf('RS256'), 'RS256')).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    )
    const discoveryUrl = `${issuer.issuer('acme')}/.well-known/openid-configuration`
    expect(events.at(-1)).toMatchObject({ reason: 'discovery', status: 404, url: discoveryUrl })
    expect(keys.status()).toMatchObject({
      lastFailure: 'discovery',
      lastFailureStatus: 404,
      lastFailureUrl: discoveryUrl,
    })
  })

  it('puts the status and the URL in the detail of the 503 for operators', async () => {
    const { keys } = keysOf()
    issuer.setFault({ kind: 'status', status: 410 })
    const error = await keys.resolve(kidOf('RS256'), 'RS256').catch((caught: unknown) => caught)
    expect(error).toMatchObject({
      code: 'ERR_JWKS_UNAVAILABLE',
      detail: { lastFailure: 'status', lastFailureStatus: 410, lastFailureUrl: issuer.jwksUri() },
    })
  })

  it('shows a query of the JWKS URL as ?… only', async () => {
    const withQuery = new IssuerKeys(
      {
        issuer: issuer.issuer('acme'),
        jwksUri: `${issuer.jwksUri()}?api_key=hidden`,
        discovery: false,
      },
      ['RS256'],
      OPTIONS,
      { emit: () => undefined, onKeysRetired: undefined },
    )
    issuer.setFault({ kind: 'status', status: 404 })
    expect(await withQuery.warm()).toMatchObject({ lastFailureUrl: `${issuer.jwksUri()}?…` })
  })
})

describe('configuration failures without an onEvent listener', () => {
  let warnings: Array<Error & { code?: string }> = []
  const onWarning = (warning: Error) => warnings.push(warning)
  beforeAll(() => {
    process.on('warning', onWarning)
  })
  afterAll(() => {
    process.off('warning', onWarning)
  })
  afterEach(() => {
    warnings = []
    resetWarningsForTests()
  })
  /** process.emitWarning reports on the next tick. */
  const settled = () => new Promise((resolve) => setImmediate(resolve))
  const jwksWarnings = () => warnings.filter((warning) => warning.code === JWKS_WARNING_CODE)

  it('warns once, naming the status and the URL, for a JWKS answering 404, however many requests fail', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
    })
    const token = await issuer.mint()
    issuer.setFault({ kind: 'status', status: 404 })
    for (let request = 0; request < 4; request++) {
      const refused = await gate
        .check({ headers: { authorization: `Bearer ${token}` } })
        .catch((error: unknown) => error)
      expect(refused).toMatchObject({ status: 503 })
      // Past the failure backoff: every request fetches again.
      vi.advanceTimersByTime(2_000)
    }
    await gate.close()
    await settled()
    expect(issuer.fetchCount()).toBe(4)
    expect(jwksWarnings()).toHaveLength(1)
    const [warning] = jwksWarnings()
    expect(warning?.message).toContain(issuer.jwksUri('acme'))
    expect(warning?.message).toContain('404')
    expect(warning?.message).not.toContain(token)
  })

  it.each<[string, TestIssuerFault]>([
    ['a 404', { kind: 'status', status: 404 }],
    ['a 401', { kind: 'status', status: 401 }],
    ['a redirect', { kind: 'redirect', location: 'http://127.0.0.1:1/certs' }],
    ['invalid JSON', { kind: 'invalid-json' }],
    ['an HTML page', { kind: 'html' }],
    ['no usable keys', { kind: 'empty-keys' }],
  ])('warns about %s', async (_case, fault) => {
    const { keys } = unheard()
    issuer.setFault(fault)
    await keys.warm()
    await settled()
    expect(jwksWarnings()).toHaveLength(1)
    expect(jwksWarnings()[0]?.message).toContain(issuer.jwksUri('acme'))
  })

  it('warns about a discovery document that names another issuer', async () => {
    const keys = new IssuerKeys(
      { issuer: `${issuer.issuer('acme')}/`, jwksUri: undefined, discovery: true },
      ['RS256'],
      OPTIONS,
      { emit: undefined, onKeysRetired: undefined },
    )
    await keys.warm()
    await settled()
    expect(jwksWarnings()).toHaveLength(1)
    expect(jwksWarnings()[0]?.message).toContain('/.well-known/openid-configuration')
  })

  it.each<[string, TestIssuerFault]>([
    ['a 503', { kind: 'status', status: 503 }],
    ['a 500', { kind: 'status', status: 500 }],
    ['a 429', { kind: 'status', status: 429 }],
    ['a 408', { kind: 'status', status: 408 }],
    ['a timeout', { kind: 'slow-headers', delayMs: 1000 }],
  ])('stays silent about %s, which may pass', async (_case, fault) => {
    const { keys } = unheard({ timeoutMs: 200 })
    issuer.setFault(fault)
    const status = await keys.warm()
    await settled()
    expect(status.state).toBe('unavailable')
    expect(jwksWarnings()).toEqual([])
  })

  it('stays silent about a provider that refuses connections', async () => {
    const keys = new IssuerKeys(
      { issuer: issuer.issuer('acme'), jwksUri: 'http://127.0.0.1:1/certs', discovery: false },
      ['RS256'],
      OPTIONS,
      { emit: undefined, onKeysRetired: undefined },
    )
    expect(await keys.warm()).toMatchObject({ lastFailure: 'network' })
    await settled()
    expect(jwksWarnings()).toEqual([])
  })

  it('leaves the report to onEvent when the application listens', async () => {
    const events: GateEvent[] = []
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      onEvent: (event) => events.push(event),
    })
    issuer.setFault({ kind: 'status', status: 404 })
    await gate.ready()
    await gate.close()
    await settled()
    expect(events.map((event) => event.type)).toContain('jwks_refresh_failed')
    expect(jwksWarnings()).toEqual([])
  })

  function unheard(options: Partial<NormalizedJWKSOptions> = {}) {
    const keys = new IssuerKeys(
      { issuer: issuer.issuer('acme'), jwksUri: issuer.jwksUri('acme'), discovery: false },
      ['RS256', 'ES256'],
      { ...OPTIONS, ...options },
      { emit: undefined, onKeysRetired: undefined },
    )
    return { keys }
  }
})

describe('gate.ready() fetches only what is not fresh', () => {
  const START = Date.UTC(2032, 0, 1)

  it('fetches each key set on the first call, and nothing on a second call within maxAgeMs', async () => {
    vi.useFakeTimers({ now: START, toFake: ['Date'] })
    const gate = createGate({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'beta'] }),
      audience: 'gateway',
      jwks: { maxAgeMs: 60_000 },
    })
    expect((await gate.ready()).ready).toBe(true)
    expect([issuer.fetchCount('acme'), issuer.fetchCount('beta')]).toEqual([1, 1])
    vi.setSystemTime(START + 59_999)
    const again = await gate.ready()
    expect(again.issuers.map((status) => status.state)).toEqual(['fresh', 'fresh'])
    expect([issuer.fetchCount('acme'), issuer.fetchCount('beta')]).toEqual([1, 1])
    // Past maxAgeMs the keys are not fresh: the next call fetches them again.
    vi.setSystemTime(START + 60_000)
    await gate.ready()
    expect([issuer.fetchCount('acme'), issuer.fetchCount('beta')]).toEqual([2, 2])
    await gate.close()
  })

  it('makes no fetch for an IssuerKeys whose keys are fresh', async () => {
    const { keys } = keysOf()
    expect((await keys.warm()).state).toBe('fresh')
    expect((await keys.warm()).state).toBe('fresh')
    expect(issuer.fetchCount()).toBe(1)
  })
})

describe('issuers sharing one jwksUri', () => {
  /** Two issuers whose keys are both at acme's JWKS (realms behind one proxy, Entra's `common`). */
  const OTHER = 'https://proxy.example/realms/other'
  function sharedOptions(events: GateEvent[] = []) {
    return {
      issuers: [
        { issuer: issuer.issuer('acme'), jwksUri: issuer.jwksUri('acme') },
        { issuer: OTHER, jwksUri: issuer.jwksUri('acme') },
      ],
      audience: 'gateway',
      onEvent: (event: GateEvent) => events.push(event),
    }
  }

  it('fetch their key set once for ready(), report each issuer, and name the first in the events', async () => {
    const events: GateEvent[] = []
    const gate = createGate(sharedOptions(events))
    const report = await gate.ready()
    expect(issuer.fetchCount('acme')).toBe(1)
    expect(report.issuers.map(({ issuer: name, state }) => [name, state])).toEqual([
      [issuer.issuer('acme'), 'fresh'],
      [OTHER, 'fresh'],
    ])
    expect(report.issuers[0]?.fetchedAt).toBe(report.issuers[1]?.fetchedAt)
    expect(events.filter((event) => event.type === 'jwks_refreshed')).toEqual([
      expect.objectContaining({ issuer: issuer.issuer('acme') }),
    ])
    await gate.refresh()
    expect(issuer.fetchCount('acme')).toBe(2)
    await gate.close()
  })

  it('report a failed fetch of their key set once, naming the first issuer, and each issuer unavailable', async () => {
    issuer.setFault({ kind: 'status', status: 500 })
    const events: GateEvent[] = []
    const gate = createGate(sharedOptions(events))
    const report = await gate.ready()
    expect(report.ready).toBe(false)
    expect(report.issuers.map(({ state, lastFailure }) => [state, lastFailure])).toEqual([
      ['unavailable', 'status'],
      ['unavailable', 'status'],
    ])
    expect(events.filter((event) => event.type === 'jwks_refresh_failed')).toEqual([
      expect.objectContaining({ issuer: issuer.issuer('acme'), status: 500 }),
    ])
    await gate.close()
  })

  it('admit tokens of both issuers with one fetch', async () => {
    const gate = createGate(sharedOptions())
    const own = await issuer.mint({ aud: 'gateway' })
    const other = await issuer.mint({ aud: 'gateway', iss: OTHER })
    expect((await gate.check({ headers: { authorization: `Bearer ${own}` } })).auth?.issuer).toBe(
      issuer.issuer('acme'),
    )
    expect((await gate.check({ headers: { authorization: `Bearer ${other}` } })).auth?.issuer).toBe(
      OTHER,
    )
    expect(issuer.fetchCount('acme')).toBe(1)
    await gate.close()
  })

  it('let a refetch for a rotated key, made for one issuer, serve the other', async () => {
    const gate = createGate(sharedOptions())
    await gate.ready()
    const rotated = await issuer.rotate({ alg: 'RS256' })
    const other = await issuer.mint({ aud: 'gateway', iss: OTHER }, { kid: rotated })
    const own = await issuer.mint({ aud: 'gateway' }, { kid: rotated })
    expect((await gate.check({ headers: { authorization: `Bearer ${other}` } })).auth?.issuer).toBe(
      OTHER,
    )
    expect(issuer.fetchCount('acme')).toBe(2)
    expect((await gate.check({ headers: { authorization: `Bearer ${own}` } })).auth?.issuer).toBe(
      issuer.issuer('acme'),
    )
    expect(issuer.fetchCount('acme')).toBe(2)
    await gate.close()
  })

  it('share the unknown-kid backoff: a kid unknown to one is refused at once for the other while refetches back off', async () => {
    vi.useFakeTimers({ now: 1_000_000 })
    const fetchedAt: number[] = []
    const fetch: typeof globalThis.fetch = async () => {
      fetchedAt.push(Date.now())
      return new Response(JSON.stringify(issuer.jwks('acme')), { status: 200 })
    }
    const sets = new KeySets()
    const hooks = { emit: undefined, onKeysRetired: undefined }
    const options = { ...OPTIONS, fetch }
    const uri = issuer.jwksUri('acme')
    const algorithms = ['RS256'] as const
    const a = new IssuerKeys(
      { issuer: 'https://a.example', jwksUri: uri, discovery: false },
      algorithms,
      options,
      hooks,
      sets,
    )
    const b = new IssuerKeys(
      { issuer: 'https://b.example', jwksUri: uri, discovery: false },
      algorithms,
      options,
      hooks,
      sets,
    )
    expect(a.keySet).toBe(b.keySet)
    expect(await b.resolve(kidOf('RS256'), 'RS256')).toHaveLength(1)
    const lookup = a.resolve('random-a', 'RS256')
    await vi.advanceTimersByTimeAsync(600)
    expect(await lookup).toEqual([])
    expect(fetchedAt).toEqual([1_000_000, 1_000_500])
    // The next refetch is 1000 ms after the last, for b's kids as for a's.
    expect(await b.resolve('random-b', 'RS256')).toEqual([])
    expect(fetchedAt).toHaveLength(2)
  })

  it('keeps separate key sets for issuers with their own jwksUri, and without KeySets', () => {
    const sets = new KeySets()
    const hooks = { emit: undefined, onKeysRetired: undefined }
    const entry = (name: string, realm: string) => ({
      issuer: name,
      jwksUri: issuer.jwksUri(realm),
      discovery: false,
    })
    const a = new IssuerKeys(entry('a', 'acme'), ['RS256'], OPTIONS, hooks, sets)
    const b = new IssuerKeys(entry('b', 'beta'), ['RS256'], OPTIONS, hooks, sets)
    const c = new IssuerKeys(entry('c', 'acme'), ['RS256'], OPTIONS, hooks)
    expect(a.keySet).not.toBe(b.keySet)
    expect(a.keySet).not.toBe(c.keySet)
  })
})
