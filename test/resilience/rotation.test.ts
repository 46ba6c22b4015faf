/**
 * Key rotation and key-set surprises under traffic: hundreds of concurrent requests on an empty
 * cache share one fetch; a rotation is picked up within one cooldown without disturbing tokens of
 * the previous key; a retired key stops verifying, cached verdicts included; a kid reused for a
 * different key and duplicate kids are handled by key material, not by name.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  accessClaims,
  attackerKey,
  decode,
  type Json,
  parts,
  signWith,
} from '../security/tokens.js'
import { fakeClock, JWKS, outcome, recordingGate } from './helpers.js'

let issuer: TestIssuer
const clock = fakeClock()
const COOLDOWN = JWKS.cooldownMs as number
const MAX_AGE = JWKS.maxAgeMs as number

beforeAll(async () => {
  issuer = await createTestIssuer({
    realms: ['acme', 'spare', 'gone'],
    algorithms: ['RS256', 'ES256'],
    audience: 'gateway',
  })
})
afterAll(async () => {
  await issuer.close()
})
beforeEach(() => {
  clock.install()
  issuer.resetCounts()
})
afterEach(() => {
  issuer.setFault(undefined)
  issuer.overrideJwks(undefined)
  clock.uninstall()
})

const options = (realm = 'acme'): GateOptions => ({
  issuers: keycloak({ authUrl: issuer.url, realms: [realm] }),
  audience: 'gateway',
  jwks: JWKS,
})

const kidOfToken = (token: string) => decode(parts(token)[0])['kid'] as string
const claims = (realm = 'acme'): Json =>
  accessClaims(issuer, { exp: Math.floor(Date.now() / 1000) + 3600 }, realm)

describe('concurrency on an empty cache', () => {
  it('serves 300 concurrent requests with exactly one fetch', async () => {
    const { gate, events } = recordingGate(options())
    const tokens = await Promise.all(
      Array.from({ length: 300 }, (_, index) =>
        issuer.mint({ sub: `u${index}` }, { alg: 'ES256' }),
      ),
    )
    const results = await Promise.all(tokens.map((token) => outcome(gate, token)))
    expect(results.every((result) => result.status === 200)).toBe(true)
    expect(issuer.fetchCount()).toBe(1)
    expect(events.filter((event) => event.type === 'jwks_refreshed')).toHaveLength(1)
    expect(events.filter((event) => event.type === 'accepted')).toHaveLength(300)
  })

  it('serves 300 concurrent requests with one fetch while the provider is slow', async () => {
    issuer.setFault({ kind: 'slow-headers', delayMs: 150 })
    const { gate } = recordingGate(options())
    const tokens = await Promise.all(
      Array.from({ length: 300 }, () => issuer.mint({}, { alg: 'ES256' })),
    )
    const results = await Promise.all(tokens.map((token) => outcome(gate, token)))
    expect(results.every((result) => result.status === 200)).toBe(true)
    expect(issuer.fetchCount()).toBe(1)
  })

  it('answers 300 concurrent requests 503 with one fetch when the provider is down', async () => {
    issuer.setFault({ kind: 'status', status: 503 })
    const { gate, events } = recordingGate(options())
    const tokens = await Promise.all(
      Array.from({ length: 300 }, () => issuer.mint({}, { alg: 'ES256' })),
    )
    const results = await Promise.all(tokens.map((token) => outcome(gate, token)))
    expect(results.every((result) => result.status === 503)).toBe(true)
    expect(issuer.fetchCount()).toBe(1)
    expect(events.filter((event) => event.type === 'jwks_refresh_failed')).toHaveLength(1)
  })

  it('shares one refresh among concurrent requests once max age has passed', async () => {
    const { gate } = recordingGate(options())
    expect(await outcome(gate, await issuer.mint())).toMatchObject({ status: 200 })
    clock.advance(MAX_AGE + 1)
    const tokens = await Promise.all(
      Array.from({ length: 200 }, () => issuer.mint({}, { alg: 'ES256' })),
    )
    const results = await Promise.all(tokens.map((token) => outcome(gate, token)))
    expect(results.every((result) => result.status === 200)).toBe(true)
    expect(issuer.fetchCount()).toBe(2)
  })
})

describe('rotation', () => {
  it('picks up a new signing key within one cooldown, while tokens of the old key keep working', async () => {
    const { gate, take } = recordingGate(options('spare'))
    const old = await issuer.mint({}, { realm: 'spare' })
    expect(await outcome(gate, old)).toMatchObject({ status: 200 })
    take()
    const newKid = await issuer.rotate({ realm: 'spare' })
    const fresh = await issuer.mint({}, { realm: 'spare' })
    expect(kidOfToken(fresh)).toBe(newKid)

    clock.advance(COOLDOWN)
    // Mid-traffic: old-key tokens and the first new-key tokens arrive together.
    const olds = await Promise.all(
      Array.from({ length: 40 }, () => issuer.mint({}, { realm: 'spare', kid: kidOfToken(old) })),
    )
    const news = await Promise.all(
      Array.from({ length: 40 }, () => issuer.mint({}, { realm: 'spare' })),
    )
    const results = await Promise.all(
      [...olds, ...news, fresh].map((token) => outcome(gate, token)),
    )
    expect(results.map((result) => result.status)).toEqual(results.map(() => 200))
    const refreshed = take().filter((event) => event.type === 'jwks_refreshed')
    expect(refreshed).toHaveLength(1)
    expect(refreshed[0]).toMatchObject({ kids: expect.arrayContaining([kidOfToken(old), newKid]) })
    expect(issuer.fetchCount('spare')).toBe(2)
  })

  it('stops admitting tokens of a key that left the set, including verdicts already cached', async () => {
    const { gate } = recordingGate(options('spare'))
    const old = await issuer.mint({}, { realm: 'spare' })
    expect(await outcome(gate, old)).toMatchObject({ status: 200 })
    await issuer.rotate({ realm: 'spare', keepPrevious: false })
    clock.advance(COOLDOWN)
    expect(await outcome(gate, await issuer.mint({}, { realm: 'spare' }))).toMatchObject({
      status: 200,
    })
    expect(await outcome(gate, old)).toMatchObject({ status: 401, code: 'ERR_TOKEN_INVALID' })
    const another = await issuer.mint({ sub: 'late' }, { realm: 'spare', kid: kidOfToken(old) })
    expect(await outcome(gate, another)).toMatchObject({ status: 401, code: 'ERR_TOKEN_INVALID' })
  })

  it('drops a key the provider unpublished at the next refresh', async () => {
    const { gate } = recordingGate(options('gone'))
    const token = await issuer.mint({}, { alg: 'ES256', realm: 'gone' })
    expect(await outcome(gate, token)).toMatchObject({ status: 200 })
    issuer.unpublish(kidOfToken(token))
    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await issuer.mint({}, { realm: 'gone' }))).toMatchObject({
      status: 200,
    })
    expect(await outcome(gate, token)).toMatchObject({ status: 401 })
  })
})

describe('kids that do not identify one key', () => {
  it('follows the key material when a kid is reused for a different key', async () => {
    const real = issuer.jwks('acme').keys.find((key) => key['kty'] === 'RSA') as Json
    const kid = real['kid'] as string
    const { gate, take } = recordingGate(options())
    const before = await issuer.mint({}, { kid })
    expect(await outcome(gate, before)).toMatchObject({ status: 200 })

    const replacement = attackerKey('rsa')
    issuer.overrideJwks({
      keys: [
        {
          ...(replacement.publicKey.export({ format: 'jwk' }) as Json),
          kid,
          alg: 'RS256',
          use: 'sig',
        },
      ],
    })
    clock.advance(MAX_AGE + 1)
    const after = signWith(replacement.privateKey, 'RS256', { alg: 'RS256', kid }, claims())
    expect(await outcome(gate, after)).toMatchObject({ status: 200 })
    expect(take().map((event) => event.type)).toContain('jwks_refreshed')
    // The old key is gone under that kid: its tokens fail, cached or new.
    expect(await outcome(gate, before)).toMatchObject({ status: 401 })
    expect(await outcome(gate, await issuer.mint({ sub: 'new' }, { kid }))).toMatchObject({
      status: 401,
    })
  })

  it('tries every key published under a duplicated kid', async () => {
    const first = attackerKey('rsa')
    const second = attackerKey('rsa')
    const stranger = attackerKey('rsa')
    issuer.overrideJwks({
      keys: [first, second].map((pair) => ({
        ...(pair.publicKey.export({ format: 'jwk' }) as Json),
        kid: 'dup',
        alg: 'RS256',
        use: 'sig',
      })),
    })
    const { gate, take } = recordingGate(options())
    expect(
      await outcome(
        gate,
        signWith(first.privateKey, 'RS256', { alg: 'RS256', kid: 'dup' }, claims()),
      ),
    ).toMatchObject({ status: 200 })
    expect(
      await outcome(
        gate,
        signWith(second.privateKey, 'RS256', { alg: 'RS256', kid: 'dup' }, claims()),
      ),
    ).toMatchObject({ status: 200 })
    expect(
      await outcome(
        gate,
        signWith(stranger.privateKey, 'RS256', { alg: 'RS256', kid: 'dup' }, claims()),
      ),
    ).toMatchObject({ status: 401 })
    expect(take().find((event) => event.type === 'jwks_refreshed')).toMatchObject({
      kids: ['dup', 'dup'],
    })
  })

  it('keeps duplicated kids of different key types apart', async () => {
    const rsa = attackerKey('rsa')
    const ec = attackerKey('ec')
    issuer.overrideJwks({
      keys: [
        { ...(rsa.publicKey.export({ format: 'jwk' }) as Json), kid: 'k1', alg: 'RS256' },
        { ...(ec.publicKey.export({ format: 'jwk' }) as Json), kid: 'k1', alg: 'ES256' },
      ],
    })
    const { gate } = recordingGate(options())
    expect(
      await outcome(gate, signWith(rsa.privateKey, 'RS256', { alg: 'RS256', kid: 'k1' }, claims())),
    ).toMatchObject({ status: 200 })
    expect(
      await outcome(gate, signWith(ec.privateKey, 'ES256', { alg: 'ES256', kid: 'k1' }, claims())),
    ).toMatchObject({ status: 200 })
    expect(
      await outcome(gate, signWith(rsa.privateKey, 'RS256', { alg: 'ES256', kid: 'k1' }, claims())),
    ).toMatchObject({ status: 401 })
  })

  it('does not keep trusting a key the provider now marks for encryption', async () => {
    const real = issuer.jwks('acme').keys.find((key) => key['kty'] === 'RSA') as Json
    const { gate } = recordingGate(options())
    expect(
      await outcome(gate, await issuer.mint({}, { kid: real['kid'] as string })),
    ).toMatchObject({ status: 200 })
    const others = issuer
      .jwks('acme')
      .keys.filter((key) => key !== real && key['kid'] !== real['kid'])
    issuer.overrideJwks({ keys: [{ ...real, use: 'enc' }, ...others] })
    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await issuer.mint({}, { alg: 'ES256' }))).toMatchObject({
      status: 200,
    })
    expect(
      await outcome(gate, await issuer.mint({ sub: 'after' }, { kid: real['kid'] as string })),
    ).toMatchObject({ status: 401 })
  })

  it('does not keep trusting a key the provider now publishes with its private members', async () => {
    const real = issuer.jwks('acme').keys.find((key) => key['kty'] === 'RSA') as Json
    const kid = real['kid'] as string
    const { gate } = recordingGate(options())
    expect(await outcome(gate, await issuer.mint({}, { kid }))).toMatchObject({ status: 200 })
    const others = issuer.jwks('acme').keys.filter((key) => key['kid'] !== kid)
    issuer.overrideJwks({ keys: [issuer.privateKey(kid).jwk, ...others] })
    clock.advance(MAX_AGE + 1)
    expect(await outcome(gate, await issuer.mint({}, { alg: 'ES256' }))).toMatchObject({
      status: 200,
    })
    expect(await outcome(gate, await issuer.mint({ sub: 'after' }, { kid }))).toMatchObject({
      status: 401,
    })
  })
})
