/**
 * The claims of a back-channel logout token that OpenID Back-Channel Logout 1.0 §2.4 and §2.6
 * make the receiver check, each at its boundary, through `gate.backchannelLogout`: a token
 * refused keeps the session's tokens admitted (nothing revoked), one accepted revokes them. Written
 * from the specification: `nonce` MUST NOT be present (whatever its value: the prohibition is
 * what makes a logout token unusable as an ID token, §4.1), `iat` is not in the future (beyond
 * the clock tolerance), and `nbf`, when present, is a NumericDate.
 */
import { Readable } from 'node:stream'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { CallbackRequest } from '../../src/revocation/callbacks.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

let issuer: TestIssuer
let gate: Gate
let events: GateEvent[]
let sessions = 0

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})
afterEach(async () => {
  await gate?.close()
})

function newGate(): Gate {
  events = []
  gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: { callbacks: { clientIds: 'gateway' } },
    onEvent: (event) => events.push(event),
  })
  return gate
}

const now = () => Math.floor(Date.now() / 1000)
const logout = (token: string): ReturnType<Gate['backchannelLogout']> => {
  const body = new URLSearchParams({ logout_token: token }).toString()
  const request: CallbackRequest = {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    method: 'POST',
    stream: Readable.from([Buffer.from(body)]),
  }
  return gate.backchannelLogout(request)
}
const decided = (token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
    () => 'admitted',
    (error: TollgateError) => error.reason,
  )
const refusals = () =>
  events.flatMap((event) => (event.type === 'logout_refused' ? [event.reason] : []))

/** A session's access token, the logout token for that session with `claims`, and the outcome. */
async function outcome(claims: Record<string, unknown>) {
  sessions += 1
  const sid = `claims-${sessions}`
  const session = await issuer.mint({ sub: 'alice', sid, iat: now() - 10 })
  expect(await decided(session)).toBe('admitted')
  const answer = await logout(await issuer.mintLogoutToken({ sid, ...claims }))
  return { status: answer.status, session: await decided(session), refusals: refusals() }
}

describe('logout token claims (OpenID Back-Channel Logout §2.4, §2.6)', () => {
  it.each<[string, unknown]>([
    ['a string', 'n-0S6_WzA2Mj'],
    ['an empty string', ''],
    ['zero', 0],
    ['false', false],
    ['null', null],
  ])('refuses a logout token with a nonce that is %s, revoking nothing', async (_label, nonce) => {
    newGate()
    expect(await outcome({ nonce })).toEqual({
      status: 400,
      session: 'admitted',
      refusals: ['nonce'],
    })
  })

  it('refuses a logout token issued beyond the clock tolerance in the future, and accepts one within it', async () => {
    newGate()
    // The default tolerance is 5 seconds.
    expect(await outcome({ iat: now() + 30 })).toEqual({
      status: 400,
      session: 'admitted',
      refusals: ['issued_in_future'],
    })
    newGate()
    expect(await outcome({ iat: now() + 2 })).toMatchObject({ status: 200, session: 'revoked' })
  })

  it.each<[string, unknown]>([
    ['a string', String(now() - 10)],
    ['an object', { at: now() - 10 }],
    ['null', null],
  ])('refuses a logout token whose nbf is %s, revoking nothing', async (_label, nbf) => {
    newGate()
    expect(await outcome({ nbf })).toMatchObject({ status: 400, session: 'admitted' })
  })

  it('accepts a logout token whose nbf is a NumericDate in the past', async () => {
    newGate()
    expect(await outcome({ nbf: now() - 10 })).toMatchObject({ status: 200, session: 'revoked' })
  })
})
