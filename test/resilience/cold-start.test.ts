/**
 * Provider faults on an empty key cache: every way the certs endpoint can fail answers 503 with
 * Retry-After (never 401, never 500), reports `jwks_refresh_failed` with its reason, backs off
 * instead of hammering the provider, and recovers once the provider heals.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import type { GateOptions, JWKSOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer, type TestIssuerFault } from '../../src/testing/index.js'
import { attackerKey, type Json, privateKeyOf, signWith } from '../security/tokens.js'
import {
  acmeOptions,
  eventually,
  expectUnavailable,
  fakeClock,
  JWKS,
  outcome,
  recordingGate,
  turns,
} from './helpers.js'

let issuer: TestIssuer
let elsewhere: Server
let elsewhereUrl: string
let elsewhereHits = 0
const clock = fakeClock()

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  // Serves the provider's genuine keys: a redirect there would "work", and must still be refused.
  elsewhere = createServer((_req, res) => {
    elsewhereHits += 1
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(issuer.jwks('acme')))
  })
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve))
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/certs`
})
afterAll(async () => {
  elsewhere.closeAllConnections()
  await new Promise((resolve) => elsewhere.close(resolve))
  await issuer.close()
})
beforeEach(() => {
  clock.install()
  issuer.resetCounts()
})
afterEach(async () => {
  issuer.setFault(undefined)
  issuer.overrideJwks(undefined)
  await issuer.start()
  clock.uninstall()
})

const options = (jwks: JWKSOptions = {}): GateOptions => acmeOptions(issuer, jwks)

const mint = (claims: Json = {}) => issuer.mint({ aud: 'gateway', ...claims })

function failures(events: readonly GateEvent[]) {
  return events.flatMap((event) => (event.type === 'jwks_refresh_failed' ? [event.reason] : []))
}

describe('the provider is down at cold start', () => {
  it('answers 503 with Retry-After, then admits once the provider is back and the backoff has passed', async () => {
    await issuer.stop()
    const { gate, take } = recordingGate(options())
    expectUnavailable(await outcome(gate, await mint()))
    const events = take()
    expect(events.map((event) => event.type)).toEqual(['jwks_refresh_failed', 'rejected'])
    expect(failures(events)).toEqual(['network'])
    expect(events[1]).toMatchObject({ code: 'ERR_JWKS_UNAVAILABLE', issuer: undefined })

    await issuer.start()
    // Within the backoff: no new attempt, still 503.
    expectUnavailable(await outcome(gate, await mint()))
    expect(take().map((event) => event.type)).toEqual(['rejected'])
    expect(issuer.fetchCount()).toBe(0)

    clock.advance(1000)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200, subject: 'user-1' })
    expect(take().map((event) => event.type)).toEqual(['jwks_refreshed', 'accepted'])
    expect(issuer.fetchCount()).toBe(1)
  })

  it('reports the provider unavailable in ready() and never rejects it', async () => {
    await issuer.stop()
    const { gate } = recordingGate(options())
    const report = await gate.ready()
    expect(report.ready).toBe(false)
    expect(report.issuers).toEqual([
      expect.objectContaining({
        issuer: issuer.issuer('acme'),
        state: 'unavailable',
        lastFailure: 'network',
      }),
    ])
    await issuer.start()
    clock.advance(1000)
    const healed = await gate.ready()
    expect(healed.ready).toBe(true)
    expect(healed.issuers[0]).toMatchObject({ state: 'fresh', keys: 1, lastFailure: undefined })
  })
})

/**
 * A provider delay no test lives to see (real timers, src/testing/faults.ts): an answer that comes
 * at all came from the gate's own deadline, however slow the machine.
 */
const OUTLASTS_THE_TEST_MS = 10 * 60_000

const DELAYS: Array<[string, TestIssuerFault]> = [
  ['headers slower than the timeout', { kind: 'slow-headers', delayMs: OUTLASTS_THE_TEST_MS }],
  ['a body slower than the timeout', { kind: 'slow-body', delayMs: OUTLASTS_THE_TEST_MS }],
  ['a connection that never answers', { kind: 'hang' }],
]

const FAULTS: Array<[string, TestIssuerFault, string]> = [
  ['a 500', { kind: 'status', status: 500 }, 'status'],
  [
    'a 503 with Retry-After',
    { kind: 'status', status: 503, headers: { 'retry-after': '120' } },
    'status',
  ],
  [
    'a 502 with a JSON key set in the body',
    { kind: 'status', status: 502, body: '{"keys":[]}' },
    'status',
  ],
  ['a 404', { kind: 'status', status: 404 }, 'status'],
  ['a 429', { kind: 'status', status: 429, headers: { 'retry-after': '1' } }, 'status'],
  ['a 204 with no body', { kind: 'status', status: 204 }, 'status'],
  ['an HTML login page', { kind: 'html' }, 'invalid_json'],
  ['truncated JSON', { kind: 'invalid-json' }, 'invalid_json'],
  ['an empty key set', { kind: 'empty-keys' }, 'no_usable_keys'],
  [
    'a 1 MiB body streamed without Content-Length',
    { kind: 'huge', bytes: 1024 * 1024 },
    'too_large',
  ],
  ...DELAYS.map(([name, fault]): [string, TestIssuerFault, string] => [name, fault, 'timeout']),
]

describe.each(FAULTS)('the certs endpoint answers with %s', (_name, fault, reason) => {
  it(`answers 503 (reason ${reason}), backs off, and recovers once healed`, async () => {
    issuer.setFault(fault)
    const { gate, take } = recordingGate(options())
    expectUnavailable(await outcome(gate, await mint()))
    const events = take()
    expect(events.map((event) => event.type)).toEqual(['jwks_refresh_failed', 'rejected'])
    expect(failures(events)).toEqual([reason])
    expect(issuer.fetchCount()).toBe(1)

    // A burst during the backoff does not reach the provider.
    for (let request = 0; request < 20; request++)
      expectUnavailable(await outcome(gate, await mint()))
    expect(issuer.fetchCount()).toBe(1)

    issuer.setFault(undefined)
    clock.advance(1000)
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(
      take()
        .slice(-2)
        .map((event) => event.type),
    ).toEqual(['jwks_refreshed', 'accepted'])
  })
})

describe('the fetch deadline, on fake time', () => {
  // The deadline is the gate's own timer (src/token/fetch-json.ts). Faked, it fires only when the
  // test moves time, so the claim is proven as an order, whatever the machine's load: no answer
  // before timeoutMs, the 503 at timeoutMs, while the provider's delay has not run out.
  beforeEach(() => clock.install({ timers: true }))

  it.each(DELAYS)(
    'answers 503 (timeout) at the fetch timeout, not before, when %s',
    async (_name, fault) => {
      issuer.setFault(fault)
      const { gate, take } = recordingGate(options())
      const token = await mint()
      let settled = false
      const answer = outcome(gate, token).finally(() => {
        settled = true
      })
      // The provider has the request, so the deadline was set (before the fetch started).
      await eventually(() => issuer.fetchCount() === 1)
      await vi.advanceTimersByTimeAsync((JWKS.timeoutMs as number) - 1)
      await turns()
      expect(settled).toBe(false)
      expect(take()).toEqual([])

      await vi.advanceTimersByTimeAsync(1)
      await turns()
      expect(settled).toBe(true)
      expectUnavailable(await answer)
      expect(failures(take())).toEqual(['timeout'])
      expect(issuer.fetchCount()).toBe(1)
    },
  )
})

describe('the certs endpoint redirects', () => {
  it('does not follow a redirect, even to a server with the genuine keys', async () => {
    issuer.setFault({ kind: 'redirect', location: elsewhereUrl })
    const { gate, take } = recordingGate(options())
    expectUnavailable(await outcome(gate, await mint()))
    expect(failures(take())).toEqual(['redirect'])
    expect(elsewhereHits).toBe(0)
  })

  it.each([301, 303, 307, 308])('does not follow a %i either', async (status) => {
    issuer.setFault({ kind: 'status', status, headers: { location: elsewhereUrl } })
    const { gate, take } = recordingGate(options())
    expectUnavailable(await outcome(gate, await mint()))
    expect(failures(take())).toEqual(['redirect'])
    expect(elsewhereHits).toBe(0)
  })
})

describe('the key set is unusable', () => {
  const publicJwk = () => issuer.jwks('acme').keys[0] as Json
  const privateJwk = () => {
    const kid = publicJwk()['kid'] as string
    return issuer.privateKey(kid).jwk
  }

  const unusable: Array<[string, () => unknown, string]> = [
    [
      'the only key has use "enc"',
      () => ({ keys: [{ ...publicJwk(), use: 'enc' }] }),
      'no_usable_keys',
    ],
    [
      'the only key has key_ops ["encrypt"]',
      () => ({ keys: [{ ...publicJwk(), use: undefined, key_ops: ['encrypt'] }] }),
      'no_usable_keys',
    ],
    [
      'the only key has an alg that is not allowed (RS512)',
      () => ({ keys: [{ ...publicJwk(), alg: 'RS512' }] }),
      'no_usable_keys',
    ],
    [
      'the only key has an HMAC alg (HS256)',
      () => ({ keys: [{ ...publicJwk(), alg: 'HS256' }] }),
      'no_usable_keys',
    ],
    [
      'the only key is symmetric (kty oct)',
      () => ({ keys: [{ kty: 'oct', k: 'c2VjcmV0', alg: 'HS256', kid: 'oct' }] }),
      'no_usable_keys',
    ],
    [
      'the only key is a P-384 key labelled ES256',
      () => ({
        keys: [
          {
            ...(attackerKey('ec').publicKey.export({ format: 'jwk' }) as Json),
            crv: 'P-384',
            alg: 'ES256',
            kid: 'ec',
          },
        ],
      }),
      'no_usable_keys',
    ],
    [
      'the only key is a private key (d, p, q…)',
      () => ({ keys: [privateJwk()] }),
      'no_usable_keys',
    ],
    [
      'the only key has a malformed modulus',
      () => ({ keys: [{ ...publicJwk(), n: 'not-a-modulus' }] }),
      'no_usable_keys',
    ],
    [
      'the keys are numbers and strings',
      () => ({ keys: [1, 'key', null, true, []] }),
      'no_usable_keys',
    ],
    ['"keys" is an object', () => ({ keys: { 0: publicJwk() } }), 'invalid_json'],
    ['the document is an array of keys', () => [publicJwk()], 'invalid_json'],
    ['the document is null', () => null, 'invalid_json'],
    [
      'the document is a JSON string',
      () => JSON.stringify(JSON.stringify({ keys: [publicJwk()] })),
      'invalid_json',
    ],
  ]

  it.each(unusable)('answers 503 when %s', async (_name, document, reason) => {
    issuer.overrideJwks(document())
    const { gate, take } = recordingGate(options())
    expectUnavailable(await outcome(gate, await mint()))
    expect(failures(take())).toEqual([reason])
  })

  it('answers 503 (too_large) for a body over the cap that declares its length', async () => {
    issuer.overrideJwks({ keys: [publicJwk()], padding: 'x'.repeat(300 * 1024) })
    const { gate, take } = recordingGate(options())
    expectUnavailable(await outcome(gate, await mint()))
    expect(failures(take())).toEqual(['too_large'])
  })

  it('uses the good key of a set that also holds unusable ones', async () => {
    issuer.overrideJwks({
      keys: [
        { ...privateJwk(), kid: 'private-copy' },
        { ...publicJwk(), kid: 'enc-copy', use: 'enc' },
        { kty: 'oct', k: 'c2VjcmV0', kid: 'oct' },
        'junk',
        publicJwk(),
      ],
    })
    const { gate, take } = recordingGate(options())
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    const refreshed = take().find((event) => event.type === 'jwks_refreshed')
    expect(refreshed).toMatchObject({ kids: [publicJwk()['kid']] })
  })

  it('never verifies with a key published with its private members, even when others are usable', async () => {
    const { kid: goodKid, ...good } = publicJwk()
    const attacker = attackerKey('rsa')
    issuer.overrideJwks({
      keys: [
        { ...(attacker.privateKey.export({ format: 'jwk' }) as Json), kid: 'leaked', alg: 'RS256' },
        { ...good, kid: goodKid },
      ],
    })
    const { gate } = recordingGate(options())
    const leaked = signWith(
      attacker.privateKey,
      'RS256',
      { alg: 'RS256', kid: 'leaked' },
      {
        iss: issuer.issuer('acme'),
        aud: 'gateway',
        exp: Math.floor(Date.now() / 1000) + 300,
      },
    )
    expect(await outcome(gate, leaked)).toMatchObject({ status: 401, code: 'ERR_TOKEN_INVALID' })
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
  })

  it('verifies with a key without kid, alg or use (a minimal JWK)', async () => {
    const { kty, n, e } = publicJwk()
    issuer.overrideJwks({ keys: [{ kty, n, e }] })
    const { gate } = recordingGate(options())
    const token = signWith(
      privateKeyOf(issuer, publicJwk()['kid'] as string),
      'RS256',
      { alg: 'RS256' },
      {
        iss: issuer.issuer('acme'),
        aud: 'gateway',
        exp: Math.floor(Date.now() / 1000) + 300,
      },
    )
    expect(await outcome(gate, token)).toMatchObject({ status: 200 })
  })
})

describe('discovery', () => {
  const discoveryOptions = (jwks: object = {}): GateOptions => ({
    issuers: [{ issuer: issuer.issuer('acme'), discovery: true }],
    audience: 'gateway',
    jwks: { ...JWKS, ...jwks },
  })

  /** A fetch that answers discovery with `document(real)` and passes everything else through. */
  function discoveryFetch(document: (real: Json) => Json, seen: string[]): typeof fetch {
    return async (input, init) => {
      const url = String(input instanceof Request ? input.url : input)
      seen.push(url)
      if (url.endsWith('/.well-known/openid-configuration')) {
        const real = (await (await fetch(url, init)).json()) as Json
        return Response.json(document(real))
      }
      if (!url.startsWith(issuer.url)) return Response.json(issuer.jwks('acme'))
      return fetch(url, init)
    }
  }

  it('finds the keys through the discovery document (control)', async () => {
    const { gate, take } = recordingGate(discoveryOptions())
    expect(await outcome(gate, await mint())).toMatchObject({ status: 200 })
    expect(take().map((event) => event.type)).toEqual(['jwks_refreshed', 'accepted'])
    expect(issuer.discoveryCount()).toBe(1)
    expect(issuer.fetchCount()).toBe(1)
  })

  it('answers 503 (discovery) when the discovery document fails', async () => {
    issuer.setFault({ kind: 'status', status: 500 }, { endpoint: 'discovery' })
    const { gate, take } = recordingGate(discoveryOptions())
    expectUnavailable(await outcome(gate, await mint()))
    expect(failures(take())).toEqual(['discovery'])
    expect(issuer.fetchCount()).toBe(0)
  })

  it('refuses a discovery document that names another issuer', async () => {
    const seen: string[] = []
    const fetchImpl = discoveryFetch((real) => ({ ...real, issuer: `${real['issuer']}/` }), seen)
    const { gate, take } = recordingGate(discoveryOptions({ fetch: fetchImpl }))
    expectUnavailable(await outcome(gate, await mint()))
    expect(failures(take())).toEqual(['discovery'])
    expect(seen.filter((url) => url.endsWith('/certs'))).toEqual([])
  })

  it.each([
    ['a file: URL', 'file:///etc/passwd'],
    ['a relative URL', '/protocol/openid-connect/certs'],
    ['plain http on a remote host', 'http://keys.attacker.example/certs'],
  ])(
    'refuses a discovery document whose jwks_uri is %s, and never fetches it',
    async (_name, jwksUri) => {
      const seen: string[] = []
      const fetchImpl = discoveryFetch((real) => ({ ...real, jwks_uri: jwksUri }), seen)
      const { gate, take } = recordingGate(discoveryOptions({ fetch: fetchImpl }))
      expectUnavailable(await outcome(gate, await mint()))
      expect(failures(take())).toEqual(['discovery'])
      expect(seen.filter((url) => !url.endsWith('/.well-known/openid-configuration'))).toEqual([])
    },
  )
})
