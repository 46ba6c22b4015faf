/**
 * What an attacker controls against the push endpoint (RFC 8935 §5 Security Considerations,
 * RFC 8417 §5, SSF 1.0 §4 and §9), one test each: the request's headers and body, the SET's
 * header, claims and signature, and when it sends it again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { createSignalReceiver } from '../../src/signals/receiver.js'
import { SSF_EVENTS, type TestSetOverrides } from '../../src/testing/ssf-transmitter.js'
import {
  AUDIENCE,
  decided,
  nowSeconds,
  PUSH_AUTHORIZATION,
  pushRequest,
  type Receiving,
  receiving,
  refusals,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
let current: Receiving

beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})
afterEach(async () => {
  await current?.close()
})

const user = (sub: string) => ({ format: 'iss_sub', iss: world.tokenIssuer, sub })

/** An `account-disabled` SET for user `a`, signed with the attacker's variations. */
const forged = (overrides: TestSetOverrides = {}) =>
  world.transmitter.sign(SSF_EVENTS.accountDisabled, user('a'), {}, overrides)

/**
 * Pushes `token` to the current receiver as a transmitter would (RFC 8935 §2), with `headers`
 * replacing the transmitter's (`undefined` leaves one out) and another `method` if given; the
 * answer's status, parsed body (if any), and the answer itself.
 */
async function push(
  token: string,
  options: { headers?: Record<string, string | undefined>; method?: string } = {},
) {
  const request = pushRequest(token)
  const headers: Record<string, string> = { ...request.headers }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === undefined) delete headers[name]
    else headers[name] = value
  }
  const answer = await current.receiver.push({
    ...request,
    headers,
    ...(options.method === undefined ? {} : { method: options.method }),
  })
  return {
    status: answer.status,
    body: answer.body === '' ? undefined : JSON.parse(answer.body),
    raw: answer,
  }
}

async function expectRefused(
  token: string,
  err: string,
  reason: string,
  headers: Record<string, string> = {},
) {
  const sub = `victim-${Math.random()}`
  const victim = await world.issuer.mint({ sub, iat: nowSeconds() - 30 })
  const { status, body, raw } = await push(token, { headers })
  expect({ status, body }).toEqual({ status: 400, body: { err, description: expect.any(String) } })
  expect(raw.headers['Content-Type']).toBe('application/json; charset=utf-8')
  // Nothing of the request is echoed.
  expect(raw.body).not.toContain(token.slice(0, 20))
  expect(raw.body).not.toContain('push-secret')
  expect(refusals(current.events)).toContain(reason)
  expect(current.events.some((event) => event.type === 'signal_applied')).toBe(false)
  expect(await decided(current.gate, victim)).toBe('admitted')
}

describe('push endpoint attacks (RFC 8935 §2.3 error codes)', () => {
  it('a SET signed by a key the transmitter never published: invalid_key', async () => {
    current = receiving(world)
    const set = await forged({ key: 'other' })
    await expectRefused(set.token, 'invalid_key', 'unknown_kid')
  })

  it('a SET signed by another key under the kid of a published one: invalid_key', async () => {
    current = receiving(world)
    const genuine = await forged()
    const kid = JSON.parse(
      Buffer.from(genuine.token.split('.')[0] as string, 'base64url').toString(),
    ).kid
    const set = await forged({ key: 'other', header: { kid } })
    await expectRefused(set.token, 'invalid_key', 'signature')
  })

  it('alg none: invalid_request, never applied', async () => {
    current = receiving(world)
    const set = await forged({ key: 'none' })
    // Unsigned (empty signature part): not even a JWS the parser accepts.
    await expectRefused(set.token, 'invalid_request', 'malformed')
    // `none` with a signature part attached: refused by the algorithm allow-list.
    await expectRefused(`${set.token}c2ln`, 'invalid_request', 'algorithm')
  })

  it('a forged iss (signed with the transmitter’s key, naming another issuer): invalid_issuer', async () => {
    current = receiving(world)
    const set = await forged({ claims: { iss: 'https://attacker.example' } })
    await expectRefused(set.token, 'invalid_issuer', 'unknown_issuer')
  })

  it('another audience: invalid_audience', async () => {
    current = receiving(world)
    const set = await forged({ claims: { aud: 'https://other-receiver.example' } })
    await expectRefused(set.token, 'invalid_audience', 'audience')
  })

  it('no Authorization header, or a wrong one: authentication_failed, before any key is fetched', async () => {
    current = receiving(world, {
      transmitter: { issuer: world.transmitter.issuer, jwksUri: 'http://127.0.0.1:9/jwks' },
    })
    const set = await forged()
    expect(await push(set.token, { headers: { authorization: undefined } })).toMatchObject({
      status: 400,
      body: { err: 'authentication_failed', description: expect.any(String) },
    })
    // The key set is unreachable: a 400 (not 503) proves it was never asked.
    await expectRefused(set.token, 'authentication_failed', 'authentication', {
      authorization: 'Bearer guess',
    })
    await expectRefused(set.token, 'authentication_failed', 'authentication', {
      authorization: `${PUSH_AUTHORIZATION}x`,
    })
  })

  it('an oversized body: invalid_request, read no further than the cap', async () => {
    current = receiving(world)
    const set = await world.transmitter.sign(SSF_EVENTS.accountDisabled, user('a'), {
      padding: 'x'.repeat(20_000),
    })
    await expectRefused(set.token, 'invalid_request', 'request')
  })

  it.each([
    ['no typ', { header: { typ: undefined } }, 'token_type'],
    ['typ at+jwt (an access token)', { header: { typ: 'at+jwt' } }, 'token_type'],
    ['typ JWT', { header: { typ: 'JWT' } }, 'token_type'],
    ['no jti', { claims: { jti: undefined } }, 'missing_claim'],
    ['no iat', { claims: { iat: undefined } }, 'missing_claim'],
    ['iat in the future', { claims: { iat: nowSeconds() + 3600 } }, 'issued_in_future'],
    ['iat past the window', { claims: { iat: nowSeconds() - 200_000 } }, 'too_old'],
    ['two events in one SET', { claims: { events: { a: {}, b: {} } } }, 'events'],
    ['no events', { claims: { events: undefined } }, 'events'],
    ['no subject', { claims: { sub_id: undefined } }, 'subject'],
  ])('%s: invalid_request', async (_name, overrides, reason) => {
    current = receiving(world)
    const set = await forged(overrides)
    await expectRefused(set.token, 'invalid_request', reason)
  })

  it('a body that is not a SET, or the wrong media type: invalid_request', async () => {
    current = receiving(world)
    await expectRefused('not-a-jwt', 'invalid_request', 'malformed')
    const set = await forged()
    await expectRefused(set.token, 'invalid_request', 'request', {
      'content-type': 'application/json',
    })
  })

  it('a replayed jti is acknowledged and not applied again', async () => {
    current = receiving(world)
    const token = await world.issuer.mint({ sub: 'replay', iat: nowSeconds() - 300 })
    const disable = await world.transmitter.sign(SSF_EVENTS.accountDisabled, user('replay'), {
      event_timestamp: nowSeconds() - 100,
    })
    expect((await push(disable.token)).status).toBe(202)
    const enable = await world.transmitter.sign(SSF_EVENTS.accountEnabled, user('replay'))
    expect((await push(enable.token)).status).toBe(202)
    expect(await decided(current.gate, token)).toBe('admitted')
    // Replaying the disable after the enable would lock the user out again.
    expect((await push(disable.token)).status).toBe(202)
    expect(await decided(current.gate, token)).toBe('admitted')
    expect(refusals(current.events)).toEqual(['duplicate'])
  })

  it('not a POST: 405, nothing read', async () => {
    current = receiving(world)
    const set = await forged()
    const answer = await push(set.token, { method: 'GET' })
    expect(answer.status).toBe(405)
    expect(answer.raw.headers['Allow']).toBe('POST')
    expect(refusals(current.events)).toEqual(['request'])
  })
})

describe('the transmitter’s keys (same rules as access-token keys)', () => {
  it('a key rotated in is accepted at once (unknown kid refetches)', async () => {
    current = receiving(world)
    const first = await world.transmitter.sign(SSF_EVENTS.credentialChange, user('r1'))
    expect((await push(first.token)).status).toBe(202)
    await world.transmitter.rotate()
    const second = await world.transmitter.sign(SSF_EVENTS.credentialChange, user('r2'))
    expect((await push(second.token)).status).toBe(202)
  })

  it('keys that cannot be had: 503 with Retry-After, nothing applied, and the retry is applied', async () => {
    current = receiving(world, {
      transmitter: {
        issuer: world.transmitter.issuer,
        configurationUrl: 'http://127.0.0.1:9/.well-known/ssf-configuration',
      },
    })
    const token = await world.issuer.mint({ sub: 'outage', iat: nowSeconds() - 30 })
    const set = await world.transmitter.sign(SSF_EVENTS.accountDisabled, user('outage'))
    const answer = await push(set.token)
    expect(answer.status).toBe(503)
    expect(answer.raw.headers['Retry-After']).toMatch(/^\d+$/)
    expect(refusals(current.events)).toEqual(['keys_unavailable'])
    expect(await decided(current.gate, token)).toBe('admitted')
    await current.close()
    // The same SET, retried once the keys can be had: its jti was not remembered.
    current = receiving(world)
    expect((await push(set.token)).status).toBe(202)
    expect(await decided(current.gate, token)).toBe('revoked')
  })

  it('a configuration document naming another issuer is not trusted: 503', async () => {
    current = receiving(world, {
      transmitter: {
        issuer: 'http://127.0.0.1:1/impostor',
        configurationUrl: `${world.transmitter.issuer}/.well-known/ssf-configuration`,
      },
    })
    const set = await forged({ claims: { iss: 'http://127.0.0.1:1/impostor' } })
    expect((await push(set.token)).status).toBe(503)
  })
})

describe('options', () => {
  it('are validated at construction with messages that say what to change', () => {
    const gate = receiving(world)
    current = gate
    const base = {
      gate: gate.gate,
      transmitter: { issuer: world.transmitter.issuer },
      audience: AUDIENCE,
    }
    expect(() => receivingWith({ ...base, audience: '' })).toThrow(
      /createSignalReceiver\(options\): "audience" must be a non-empty string/,
    )
    expect(() =>
      receivingWith({ ...base, transmitter: { issuer: 'http://idp.example.com' } }),
    ).toThrow(/"transmitter.issuer" must be https/)
    expect(() => receivingWith({ ...base, subjects: { email: 'mail' } })).toThrow(
      /"subjects.email" must be 'sub' or 'sid'/,
    )
    expect(() => receivingWith({ ...base, authorization: 42 })).toThrow(/"authorization" must be/)
    expect(() => receivingWith({ ...base, authorization: 42 })).not.toThrow(/42/)
    expect(() => receivingWith({ ...base, extra: 1 })).toThrow(/"extra" is not an option/)
  })
})

function receivingWith(options: Record<string, unknown>) {
  return createSignalReceiver(options as never)
}

describe('what the receiver tells operators', () => {
  it('events never carry a token or the Authorization header', async () => {
    current = receiving(world)
    const good = await forged()
    const bad = await forged({ key: 'other' })
    await push(good.token)
    await push(bad.token)
    await push(good.token, { headers: { authorization: 'Bearer wrong-secret' } })
    const text = JSON.stringify(current.events)
    expect(current.events.length).toBeGreaterThanOrEqual(4)
    for (const secret of [good.token, bad.token, 'push-secret', 'wrong-secret']) {
      expect(text).not.toContain(secret)
    }
    for (const part of good.token.split('.')) expect(text).not.toContain(part)
  })
})

describe('a flood of unknown key ids', () => {
  it('costs a handful of key fetches, not one per SET (the access-token key rules)', async () => {
    current = receiving(world)
    const before = world.transmitter.jwksFetches
    for (let index = 0; index < 30; index += 1) {
      const set = await forged({ key: 'other', header: { kid: `random-${index}` } })
      const answer = await push(set.token)
      expect([400, 503]).toContain(answer.status)
    }
    expect(world.transmitter.jwksFetches - before).toBeLessThanOrEqual(5)
  })
})

describe('the transmitter down', () => {
  it('SETs signed with keys already held are still verified and applied', async () => {
    const { createTestTransmitter } = await import('../../src/testing/ssf-transmitter.js')
    const down = await createTestTransmitter({ audience: AUDIENCE })
    current = receiving(world, { transmitter: { issuer: down.issuer } })
    const first = await down.sign(SSF_EVENTS.credentialChange, user('held-1'))
    expect((await push(first.token)).status).toBe(202)
    await down.close()
    const token = await world.issuer.mint({ sub: 'held-2', iat: nowSeconds() - 30 })
    const second = await down.sign(SSF_EVENTS.credentialChange, user('held-2'))
    expect((await push(second.token)).status).toBe(202)
    expect(await decided(current.gate, token)).toBe('revoked')
  })
})
