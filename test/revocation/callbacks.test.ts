import { randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { CallbackRequest } from '../../src/revocation/callbacks.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

let issuer: TestIssuer
let base: GateOptions
let events: GateEvent[]
let gate: Gate
let unpublishedKid: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'beta'], audience: 'gateway' })
  base = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'beta'] }),
    audience: 'gateway',
    revocation: { callbacks: { clientIds: 'gateway' } },
  }
  // A key of the right realm and algorithm that the provider never published: a forger's key.
  unpublishedKid = await issuer.rotate({ realm: 'acme' })
  issuer.unpublish(unpublishedKid)
  await issuer.rotate({ realm: 'acme' })
})
afterAll(async () => {
  await issuer.close()
})
afterEach(async () => {
  await gate?.close()
})

function newGate(extra: Partial<GateOptions> = {}): Gate {
  events = []
  gate = createGate({ ...base, ...extra, onEvent: (event) => events.push(event) })
  return gate
}

const form = (fields: Record<string, string | string[]>): CallbackRequest => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) {
    for (const item of [value].flat()) params.append(name, item)
  }
  return { headers: FORM, method: 'POST', stream: Readable.from([Buffer.from(params.toString())]) }
}
const logout = (token: string) => gate.backchannelLogout(form({ logout_token: token }))
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
const decided = (token: string) =>
  gate.check(bearer(token)).then(
    () => 'admitted',
    (error: TollgateError) => error.reason,
  )
const now = () => Math.floor(Date.now() / 1000)
const refusals = () =>
  events.flatMap((event) => (event.type === 'logout_refused' ? [event.reason] : []))

const BAD_REQUEST = {
  status: 400,
  headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' },
}

describe('gate.backchannelLogout', () => {
  it('answers 200 with no-store and refuses the session’s tokens, cache hits included', async () => {
    newGate()
    const session = await issuer.mint({ sub: 'alice', sid: 's-1', iat: now() - 10 })
    const otherSession = await issuer.mint({ sub: 'alice', sid: 's-2', iat: now() - 10 })
    expect(await decided(session)).toBe('admitted')
    const answer = await logout(await issuer.mintLogoutToken({ sub: 'alice', sid: 's-1' }))
    expect(answer).toEqual({ status: 200, headers: { 'Cache-Control': 'no-store' }, body: '' })
    expect(await decided(session)).toBe('revoked')
    expect(await decided(otherSession)).toBe('admitted')
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'revoked',
        by: 'sid',
        value: 's-1',
        source: 'backchannel_logout',
      }),
    )
  })

  it('ends every session of the user when the token carries only sub', async () => {
    newGate()
    const one = await issuer.mint({ sub: 'bob', sid: 's-3', iat: now() - 10 })
    const two = await issuer.mint({ sub: 'bob', sid: 's-4', iat: now() - 10 })
    expect((await logout(await issuer.mintLogoutToken({ sub: 'bob' }))).status).toBe(200)
    expect(await decided(one)).toBe('revoked')
    expect(await decided(two)).toBe('revoked')
  })

  it('accepts a token whose aud lists the client id among others', async () => {
    newGate()
    const token = await issuer.mintLogoutToken({ sid: 's-5', aud: ['office', 'gateway'] })
    expect((await logout(token)).status).toBe(200)
  })

  it('accepts a logout token typed JWT or untyped (providers before explicit typing)', async () => {
    newGate()
    const typed = await issuer.mintLogoutToken({ sid: 's-6' }, { header: { typ: 'JWT' } })
    const untyped = await issuer.mintLogoutToken({ sid: 's-7' }, { header: { typ: undefined } })
    expect((await logout(typed)).status).toBe(200)
    expect((await logout(untyped)).status).toBe(200)
  })

  it('refuses a replayed logout token', async () => {
    newGate()
    const token = await issuer.mintLogoutToken({ sid: 's-8' })
    expect((await logout(token)).status).toBe(200)
    expect(await logout(token)).toMatchObject({
      ...BAD_REQUEST,
      body: JSON.stringify({ error: 'invalid_request', error_description: 'invalid logout token' }),
    })
    expect(refusals()).toEqual(['replayed'])
  })

  const forged = async (): Promise<string> => {
    const token = await issuer.mintLogoutToken({ sid: 's-9' })
    const [header, , signature] = token.split('.')
    const payload = Buffer.from(
      JSON.stringify({
        iss: issuer.issuer('acme'),
        aud: 'gateway',
        sub: 'victim',
        iat: now(),
        exp: now() + 60,
        jti: randomUUID(),
        events: { [LOGOUT_EVENT]: {} },
      }),
    ).toString('base64url')
    return `${header}.${payload}.${signature}`
  }
  const claims = (extra: Record<string, unknown>): Promise<string> =>
    issuer.mintLogoutToken({ sid: 's-10', ...extra })

  it.each([
    ['a payload swapped under a valid signature', forged, 'signature'],
    [
      'a token signed with an unpublished key',
      () => issuer.mintLogoutToken({ sid: 'x' }, { kid: unpublishedKid }),
      'unknown_kid',
    ],
    ['alg none', () => issuer.sign({ alg: 'none', typ: 'logout+jwt' }, { sid: 'x' }), 'algorithm'],
    ['alg HS256', () => issuer.sign({ alg: 'HS256' }, { sid: 'x' }), 'algorithm'],
    [
      'a crit header',
      () => issuer.mintLogoutToken({ sid: 'x' }, { header: { crit: ['exp'] } }),
      'header',
    ],
    ['an empty kid', () => issuer.mintLogoutToken({ sid: 'x' }, { header: { kid: '' } }), 'header'],
    [
      'typ at+jwt (an access token)',
      () => issuer.mintLogoutToken({ sid: 'x' }, { header: { typ: 'at+jwt' } }),
      'token_type',
    ],
    [
      'an unknown issuer',
      () => claims({ iss: 'https://evil.example.com/realms/acme' }),
      'unknown_issuer',
    ],
    ['another audience', () => claims({ aud: 'office' }), 'audience'],
    [
      'an audience list without the client id',
      () => claims({ aud: ['office', 'desk'] }),
      'audience',
    ],
    ['a non-string audience entry', () => claims({ aud: ['gateway', 7] }), 'audience'],
    ['no iat', () => claims({ iat: undefined }), 'missing_claim'],
    ['a string iat', () => claims({ iat: String(now()) }), 'malformed_claim'],
    [
      'an iat in the future',
      () => claims({ iat: now() + 60, exp: now() + 120 }),
      'issued_in_future',
    ],
    ['an iat outside the window', () => claims({ iat: now() - 200, exp: now() + 60 }), 'too_old'],
    ['no exp (earlier drafts of the spec)', () => claims({ exp: undefined }), 'missing_exp'],
    ['an exp in the past', () => claims({ iat: now() - 60, exp: now() - 30 }), 'expired'],
    ['an nbf in the future', () => claims({ nbf: now() + 60 }), 'not_yet_valid'],
    ['no events claim (an access token)', () => issuer.mint({ sid: 'x' }), 'events'],
    ['events without the logout event', () => claims({ events: { 'urn:other': {} } }), 'events'],
    [
      'a logout event that is not an object',
      () => claims({ events: { [LOGOUT_EVENT]: true } }),
      'events',
    ],
    ['events as an array', () => claims({ events: [LOGOUT_EVENT] }), 'events'],
    ['a nonce (an ID token)', () => claims({ nonce: 'n-1' }), 'nonce'],
    ['neither sid nor sub', () => issuer.mintLogoutToken({ sub: undefined }), 'missing_claim'],
    ['a numeric sid', () => claims({ sid: 42 }), 'malformed_claim'],
    ['an empty sub', () => claims({ sub: '' }), 'malformed_claim'],
    ['no jti', () => claims({ jti: undefined }), 'missing_claim'],
    ['a numeric jti', () => claims({ jti: 7 }), 'malformed_claim'],
    ['three dots', async () => `${await claims({})}.x`, 'malformed'],
    ['not a JWS at all', async () => 'logout', 'malformed'],
    ['a 9 KB token', async () => 'a'.repeat(9000), 'too_large'],
  ] as ReadonlyArray<readonly [string, () => Promise<string>, string]>)(
    'refuses %s with 400 and says why to operators',
    async (_name, make, reason) => {
      newGate()
      const before = await issuer.mint({ sub: 'victim', sid: 'x', iat: now() - 10 })
      const answer = await logout(await make())
      expect(answer).toMatchObject(BAD_REQUEST)
      expect(JSON.parse(answer.body)).toEqual({
        error: 'invalid_request',
        error_description: 'invalid logout token',
      })
      expect(refusals()).toEqual([reason])
      expect(await decided(before)).toBe('admitted')
    },
  )

  describe('with requireExp: false (providers on earlier drafts)', () => {
    const withoutExp = (extra: Record<string, unknown> = {}) =>
      issuer.mintLogoutToken({ sub: 'draft', exp: undefined, ...extra })
    const draftGate = () =>
      newGate({ revocation: { callbacks: { clientIds: 'gateway', requireExp: false } } })

    it('accepts a recent logout token without exp and revokes its subject', async () => {
      draftGate()
      const before = await issuer.mint({ sub: 'draft', iat: now() - 10 })
      const answer = await logout(await withoutExp())
      expect(answer.status).toBe(200)
      expect(await decided(before)).toBe('revoked')
    })

    it('accepts it once: its jti is remembered for the iat window', async () => {
      draftGate()
      const token = await withoutExp()
      expect((await logout(token)).status).toBe(200)
      expect((await logout(token)).status).toBe(400)
      expect(refusals()).toEqual(['replayed'])
    })

    it.each([
      ['an iat outside the window', { iat: now() - 200 }, 'too_old'],
      ['no iat either', { iat: undefined }, 'missing_claim'],
      ['an exp that has passed', { iat: now() - 60, exp: now() - 30 }, 'expired'],
      ['a string exp', { exp: String(now() + 60) }, 'malformed_claim'],
    ])('still refuses %s', async (_name, extra, reason) => {
      draftGate()
      const before = await issuer.mint({ sub: 'draft', iat: now() - 10 })
      expect((await logout(await withoutExp(extra))).status).toBe(400)
      expect(refusals()).toEqual([reason])
      expect(await decided(before)).toBe('admitted')
    })
  })

  it.each([
    ['a GET', { headers: FORM, method: 'GET' }, 405],
    [
      'a JSON body',
      {
        headers: { 'content-type': 'application/json' },
        method: 'POST',
        body: { logout_token: 'x' },
      },
      400,
    ],
    ['no logout_token', form({ token: 'x' }), 400],
    ['two logout_token parameters', form({ logout_token: ['a', 'b'] }), 400],
    ['a body over 16 KiB', form({ logout_token: 'a'.repeat(17_000) }), 400],
    [
      'a parsed body with a repeated parameter',
      { headers: FORM, method: 'POST', body: { logout_token: ['a', 'b'] } },
      400,
    ],
    [
      'a parsed body inheriting logout_token',
      { headers: FORM, method: 'POST', body: Object.create({ logout_token: 'x' }) },
      400,
    ],
    [
      'a stream that breaks off',
      {
        headers: FORM,
        method: 'POST',
        stream: Readable.from(
          (async function* () {
            yield Buffer.from('logout_token=')
            throw new Error('reset')
          })(),
        ),
      },
      400,
    ],
  ] as const)('refuses %s as a bad request', async (_name, request, status) => {
    newGate()
    const answer = await gate.backchannelLogout(request as CallbackRequest)
    expect(answer.status).toBe(status)
    expect(answer.headers['Cache-Control']).toBe('no-store')
    expect(refusals()).toEqual(['request'])
  })

  it('reads the token from a body the application already parsed', async () => {
    newGate()
    const token = await issuer.mintLogoutToken({ sid: 's-11' })
    // What a body parser leaves behind: a consumed stream and the parsed fields.
    const stream = Readable.from([Buffer.from(`logout_token=${token}`)])
    for await (const _chunk of stream) {
    }
    const parsed = { headers: FORM, method: 'POST', body: { logout_token: token }, stream }
    expect((await gate.backchannelLogout(parsed)).status).toBe(200)
  })

  it('answers 503 with Retry-After, not 400, to a token of a key rotated in while unknown kids back refetches off; the retry is accepted', async () => {
    newGate()
    expect(await decided(await issuer.mint())).toBe('admitted')
    // A flood of unknown kids: the first is worth a refetch that finds nothing, then refetches
    // back off and the next ones are refused at once.
    for (let index = 0; index < 3; index++) {
      await decided(await issuer.mint({}, { header: { kid: `flood-${index}` } }))
    }
    await issuer.rotate({ realm: 'acme' })
    const token = await issuer.mintLogoutToken({ sid: 's-rotated' })
    const session = await issuer.mint({ sid: 's-rotated', iat: now() - 10 })
    const answer = await logout(token)
    expect(answer).toEqual({
      status: 503,
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'Cache-Control': 'no-store',
        'Retry-After': '30',
      },
      body: JSON.stringify({
        error: 'temporarily_unavailable',
        error_description: 'signing keys unavailable',
      }),
    })
    expect(refusals()).toEqual(['keys_unavailable'])
    // The provider's retry, once the key is fetched, ends the session: the first try spent nothing.
    await gate.refresh()
    expect((await logout(token)).status).toBe(200)
    expect(await decided(session)).toBe('revoked')
  })

  it('accepts a token of a key rotated in when no flood backs refetches off', async () => {
    newGate()
    expect(await decided(await issuer.mint())).toBe('admitted')
    await issuer.rotate({ realm: 'acme' })
    expect((await logout(await issuer.mintLogoutToken({ sid: 's-rotated-quiet' }))).status).toBe(
      200,
    )
  })

  it('answers 503 with the key set’s Retry-After while its issuer’s keys cannot be fetched', async () => {
    newGate()
    issuer.setFault({ kind: 'status', status: 500 }, { realm: 'acme' })
    try {
      const answer = await logout(await issuer.mintLogoutToken({ sid: 's-down' }))
      expect(answer.status).toBe(503)
      expect(Number(answer.headers['Retry-After'])).toBeGreaterThanOrEqual(1)
      expect(refusals()).toEqual(['keys_unavailable'])
    } finally {
      issuer.setFault(undefined, { realm: 'acme' })
    }
  })

  it('still refuses with 400 a token whose kid is absent from keys fetched for it', async () => {
    newGate()
    expect((await logout(await issuer.mintLogoutToken({}, { kid: unpublishedKid }))).status).toBe(
      400,
    )
    expect(refusals()).toEqual(['unknown_kid'])
  })

  it('rejects without revocation.callbacks', async () => {
    newGate({ revocation: {} })
    await expect(gate.backchannelLogout(form({ logout_token: 'x' }))).rejects.toThrow(TypeError)
  })
})

describe('gate.keycloakPushNotBefore', () => {
  const kidOf = (realm: string) => issuer.jwks(realm).keys[0]?.['kid'] as string
  const push = (
    payload: Record<string, unknown>,
    realm = 'acme',
    header: Record<string, unknown> = {},
  ) =>
    issuer.sign(
      { alg: 'RS256', typ: 'JWT', kid: kidOf(realm), ...header },
      {
        id: randomUUID(),
        expiration: now() + 30,
        resource: 'gateway',
        action: 'PUSH_NOT_BEFORE',
        notBefore: now(),
        ...payload,
      },
      { realm, kid: kidOf(realm) },
    )
  const send = async (jws: string) =>
    gate.keycloakPushNotBefore({
      headers: { 'content-type': 'text/plain' },
      method: 'POST',
      stream: Readable.from([Buffer.from(jws)]),
    })

  it('refuses every token of that realm issued before the pushed not-before', async () => {
    newGate()
    const old = await issuer.mint({ iat: now() - 10 })
    const otherRealm = await issuer.mint({ iat: now() - 10 }, { realm: 'beta' })
    expect(await send(await push({}))).toEqual({
      status: 200,
      headers: { 'Cache-Control': 'no-store' },
      body: '',
    })
    expect(await decided(old)).toBe('revoked')
    expect(await decided(otherRealm)).toBe('admitted')
    expect(await decided(await issuer.mint({ iat: now() + 1 }))).toBe('admitted')
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'revoked', by: 'all', source: 'keycloak_push' }),
    )
  })

  it('clears the realm not-before when Keycloak pushes 0', async () => {
    newGate()
    const old = await issuer.mint({ iat: now() - 10 })
    await send(await push({}))
    expect(await decided(old)).toBe('revoked')
    expect((await send(await push({ notBefore: 0 }))).status).toBe(200)
    expect(await decided(old)).toBe('admitted')
  })

  it.each([
    ['another action', { action: 'LOGOUT' }, {}, 'events'],
    ['another client', { resource: 'office' }, {}, 'audience'],
    ['an expired action', { expiration: now() - 60 }, {}, 'expired'],
    ['no expiration', { expiration: undefined }, {}, 'missing_claim'],
    ['no id', { id: undefined }, {}, 'missing_claim'],
    ['a not-before an hour ahead', { notBefore: now() + 3600 }, {}, 'malformed_claim'],
    ['a fractional not-before', { notBefore: now() + 0.5 }, {}, 'malformed_claim'],
    ['no kid', {}, { kid: undefined }, 'header'],
    ['a kid no issuer knows', {}, { kid: 'nobody' }, 'unknown_kid'],
    // A token signed by the realm that happens to carry the push's members is still a token.
    ['an iss claim', { iss: 'https://sso.example.test/realms/acme' }, {}, 'token_type'],
    ['a typ claim (Keycloak access tokens: Bearer)', { typ: 'Bearer' }, {}, 'token_type'],
    ['an aud claim', { aud: 'gateway' }, {}, 'token_type'],
  ] as const)('refuses %s with 400', async (_name, payload, header, reason) => {
    newGate()
    const answer = await send(await push(payload, 'acme', header))
    expect(answer.status).toBe(400)
    expect(refusals()).toEqual([reason])
  })

  it('refuses a replayed push', async () => {
    newGate()
    const jws = await push({})
    expect((await send(jws)).status).toBe(200)
    expect((await send(jws)).status).toBe(400)
    expect(refusals()).toEqual(['replayed'])
  })

  it('accepts a push signed by one realm while another realm’s keys cannot be fetched', async () => {
    newGate()
    const beta = await issuer.mint({ iat: now() - 10 }, { realm: 'beta' })
    issuer.setFault({ kind: 'status', status: 500 }, { realm: 'acme' })
    try {
      expect((await send(await push({}, 'beta'))).status).toBe(200)
      expect(refusals()).toEqual([])
    } finally {
      issuer.setFault(undefined, { realm: 'acme' })
    }
    expect(await decided(beta)).toBe('revoked')
  })

  it('answers 503, not 400, to a push no realm could verify while one realm’s keys are down', async () => {
    newGate()
    issuer.setFault({ kind: 'status', status: 500 }, { realm: 'acme' })
    try {
      const answer = await send(await push({}, 'acme'))
      expect(answer.status).toBe(503)
      expect(answer.headers['Retry-After']).toBeDefined()
      expect(refusals()).toEqual(['keys_unavailable'])
    } finally {
      issuer.setFault(undefined, { realm: 'acme' })
    }
  })

  it('refuses a push signed by another realm’s key naming this realm’s kid', async () => {
    newGate()
    const jws = await issuer.sign(
      { alg: 'RS256', typ: 'JWT', kid: kidOf('acme') },
      {
        id: randomUUID(),
        expiration: now() + 30,
        resource: 'gateway',
        action: 'PUSH_NOT_BEFORE',
        notBefore: now(),
      },
      { realm: 'beta', kid: kidOf('beta') },
    )
    expect((await send(jws)).status).toBe(400)
    expect(refusals()).toEqual(['signature'])
  })
})
