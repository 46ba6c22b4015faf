import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import {
  decided,
  nowSeconds,
  pushRequest,
  type Receiving,
  receiving,
  refusals,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
let current: Receiving | undefined

beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})
afterEach(async () => {
  await current?.close()
  current = undefined
})

function open(
  ...args: Parameters<typeof receiving> extends [unknown, ...infer Rest] ? Rest : never
) {
  current = receiving(world, ...args)
  return current
}

const user = (sub: string) => ({ format: 'iss_sub', iss: world.tokenIssuer, sub })
const session = (sub: string, sid: string) => ({
  format: 'complex',
  user: user(sub),
  session: { format: 'opaque', id: sid },
})
const mint = (claims: Record<string, unknown>) =>
  world.issuer.mint({ iat: nowSeconds() - 30, ...claims })

async function push(receiving_: Receiving, event: string, subject: object, payload = {}) {
  const set = await world.transmitter.sign(event, subject as Record<string, unknown>, payload)
  return receiving_.receiver.push(pushRequest(set.token))
}

describe('what each event does (CAEP 1.0, RISC 1.0) through the fleet revocation', () => {
  it('session-revoked with a session refuses that session only, cache hits included', async () => {
    const { gate, receiver, events } = open()
    const mine = await mint({ sub: 'alice', sid: 's-1' })
    const other = await mint({ sub: 'alice', sid: 's-2' })
    expect(await decided(gate, mine)).toBe('admitted')
    const set = await world.transmitter.sign(SSF_EVENTS.sessionRevoked, session('alice', 's-1'))
    const answer = await receiver.push(pushRequest(set.token))
    expect(answer).toEqual({ status: 202, headers: { 'Cache-Control': 'no-store' }, body: '' })
    expect(await decided(gate, mine)).toBe('revoked')
    expect(await decided(gate, other)).toBe('admitted')
    expect(events.map((event) => event.type)).toEqual(['signal_received', 'signal_applied'])
    expect(events[1]).toMatchObject({
      type: 'signal_applied',
      delivery: 'push',
      jti: set.jti,
      event: SSF_EVENTS.sessionRevoked,
      changes: [{ change: 'revoked', by: 'sid', value: 's-1', issuer: world.tokenIssuer }],
    })
  })

  it('session-revoked without a session refuses the subject’s tokens issued up to the event, not later ones', async () => {
    const { gate } = open()
    const before = await mint({ sub: 'bob', iat: nowSeconds() - 60 })
    const after = await mint({ sub: 'bob', iat: nowSeconds() - 5 })
    const answer = await push(current as Receiving, SSF_EVENTS.sessionRevoked, user('bob'), {
      event_timestamp: nowSeconds() - 30,
    })
    expect(answer.status).toBe(202)
    expect(await decided(gate, before)).toBe('revoked')
    expect(await decided(gate, after)).toBe('admitted')
  })

  it.each([
    ['credential-change', SSF_EVENTS.credentialChange],
    ['credential-compromise', SSF_EVENTS.credentialCompromise],
    ['account-disabled', SSF_EVENTS.accountDisabled],
    ['account-purged', SSF_EVENTS.accountPurged],
    ['sessions-revoked', SSF_EVENTS.sessionsRevoked],
  ])('%s refuses the subject’s tokens issued up to the event', async (_name, event) => {
    const { gate } = open()
    const token = await mint({ sub: 'carol', sid: 'c-1' })
    const someoneElse = await mint({ sub: 'dave' })
    expect((await push(current as Receiving, event, user('carol'))).status).toBe(202)
    expect(await decided(gate, token)).toBe('revoked')
    expect(await decided(gate, someoneElse)).toBe('admitted')
  })

  it('account-enabled lifts what account-disabled set', async () => {
    const { gate } = open()
    const token = await mint({ sub: 'erin', iat: nowSeconds() - 200 })
    await push(current as Receiving, SSF_EVENTS.accountDisabled, user('erin'), {
      event_timestamp: nowSeconds() - 100,
    })
    expect(await decided(gate, token)).toBe('revoked')
    await push(current as Receiving, SSF_EVENTS.accountEnabled, user('erin'), {
      event_timestamp: nowSeconds() - 10,
    })
    expect(await decided(gate, token)).toBe('admitted')
  })

  it('account-enabled keeps what another signal set for the subject', async () => {
    const { gate } = open()
    const old = await mint({ sub: 'frank', iat: nowSeconds() - 200 })
    const between = await mint({ sub: 'frank', iat: nowSeconds() - 120 })
    await push(current as Receiving, SSF_EVENTS.credentialChange, user('frank'), {
      event_timestamp: nowSeconds() - 150,
    })
    await push(current as Receiving, SSF_EVENTS.accountDisabled, user('frank'), {
      event_timestamp: nowSeconds() - 100,
    })
    expect(await decided(gate, between)).toBe('revoked')
    await push(current as Receiving, SSF_EVENTS.accountEnabled, user('frank'), {
      event_timestamp: nowSeconds() - 10,
    })
    expect(await decided(gate, between)).toBe('admitted')
    expect(await decided(gate, old)).toBe('revoked')
  })

  it('an account-enabled older than the disable (delivered out of order) lifts nothing', async () => {
    const { gate } = open()
    const token = await mint({ sub: 'gina', iat: nowSeconds() - 200 })
    await push(current as Receiving, SSF_EVENTS.accountDisabled, user('gina'), {
      event_timestamp: nowSeconds() - 50,
    })
    await push(current as Receiving, SSF_EVENTS.accountEnabled, user('gina'), {
      event_timestamp: nowSeconds() - 100,
    })
    expect(await decided(gate, token)).toBe('revoked')
  })

  it('account-enabled without a disable lifts nothing (a credential change stays)', async () => {
    const { gate } = open()
    const token = await mint({ sub: 'hank', iat: nowSeconds() - 200 })
    await push(current as Receiving, SSF_EVENTS.credentialChange, user('hank'), {
      event_timestamp: nowSeconds() - 50,
    })
    await push(current as Receiving, SSF_EVENTS.accountEnabled, user('hank'))
    expect(await decided(gate, token)).toBe('revoked')
  })

  it('an unknown event is acknowledged (202) and reported, never fatal', async () => {
    const { gate, events } = open()
    const token = await mint({ sub: 'ivan' })
    const event = 'https://example.com/event-type/something-new'
    expect((await push(current as Receiving, event, user('ivan'))).status).toBe(202)
    expect(await decided(gate, token)).toBe('admitted')
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'signal_refused',
        reason: 'unknown_event',
        acknowledged: true,
        err: undefined,
      }),
    )
  })

  it.each([
    ['token-claims-change', SSF_EVENTS.tokenClaimsChange],
    ['assurance-level-change', SSF_EVENTS.assuranceLevelChange],
  ])('%s revokes nothing and reports the verdicts it dropped', async (_name, event) => {
    const { gate, events } = open()
    const token = await mint({ sub: 'ivan' })
    expect(await decided(gate, token)).toBe('admitted')
    expect((await push(current as Receiving, event, user('ivan'))).status).toBe(202)
    expect(await decided(gate, token)).toBe('admitted')
    expect(events.find((item) => item.type === 'signal_applied')).toMatchObject({
      event,
      changes: [
        { change: 'forgotten', by: 'sub', value: 'ivan', issuer: world.tokenIssuer, notBefore: 0 },
      ],
    })
  })
})

describe('what the gate reports of the revocations a SET made', () => {
  it('revoked and unrevoked say source shared_signals, with the SET’s event type, issuer and jti', async () => {
    const gateEvents: GateEvent[] = []
    open({}, { onEvent: (event) => gateEvents.push(event) })
    const disable = await world.transmitter.sign(SSF_EVENTS.accountDisabled, user('kim'), {
      event_timestamp: nowSeconds() - 10,
    })
    expect((await (current as Receiving).receiver.push(pushRequest(disable.token))).status).toBe(
      202,
    )
    const enable = await world.transmitter.sign(SSF_EVENTS.accountEnabled, user('kim'))
    expect((await (current as Receiving).receiver.push(pushRequest(enable.token))).status).toBe(202)
    await (current as Receiving).gate.revoke({ sub: 'lou' })
    const made = gateEvents.flatMap((event) =>
      event.type === 'revoked' || event.type === 'unrevoked' ? [event] : [],
    )
    expect(made).toEqual([
      expect.objectContaining({
        type: 'revoked',
        by: 'sub',
        value: 'kim',
        source: 'shared_signals',
        signal: {
          event: SSF_EVENTS.accountDisabled,
          issuer: world.transmitter.issuer,
          jti: disable.jti,
        },
      }),
      expect.objectContaining({
        type: 'unrevoked',
        value: 'kim',
        source: 'shared_signals',
        signal: {
          event: SSF_EVENTS.accountEnabled,
          issuer: world.transmitter.issuer,
          jti: enable.jti,
        },
      }),
      expect.objectContaining({ type: 'revoked', value: 'lou', source: 'api' }),
    ])
    expect(made[2]).not.toHaveProperty('signal')
  })
})

describe('subject identifiers (RFC 9493) mapped to token claims', () => {
  it('opaque is the token’s sub by default', async () => {
    const { gate } = open()
    const token = await mint({ sub: 'u-17' })
    await push(current as Receiving, SSF_EVENTS.credentialChange, { format: 'opaque', id: 'u-17' })
    expect(await decided(gate, token)).toBe('revoked')
  })

  it('email names nobody until mapped, then the claim it is mapped to', async () => {
    const unmapped = open()
    const token = await mint({ sub: 'jo@example.com' })
    const subject = { format: 'email', email: 'jo@example.com' }
    expect((await push(unmapped, SSF_EVENTS.credentialChange, subject)).status).toBe(202)
    expect(refusals(unmapped.events)).toEqual(['unmapped_subject'])
    expect(await decided(unmapped.gate, token)).toBe('admitted')
    await unmapped.close()
    const mapped = open({ subjects: { email: 'sub' } })
    await push(mapped, SSF_EVENTS.credentialChange, subject)
    expect(await decided(mapped.gate, token)).toBe('revoked')
  })

  it('aliases act on every identifier', async () => {
    const { gate } = open({ subjects: { email: 'sub' } })
    const a = await mint({ sub: 'kim' })
    const b = await mint({ sub: 'kim@example.com' })
    await push(current as Receiving, SSF_EVENTS.accountDisabled, {
      format: 'aliases',
      identifiers: [user('kim'), { format: 'email', email: 'kim@example.com' }],
    })
    expect(await decided(gate, a)).toBe('revoked')
    expect(await decided(gate, b)).toBe('revoked')
  })

  it('an iss_sub of an issuer the gate does not have is acknowledged and reported', async () => {
    const { events } = open()
    const answer = await push(current as Receiving, SSF_EVENTS.credentialChange, {
      format: 'iss_sub',
      iss: 'https://elsewhere.example',
      sub: 'x',
    })
    expect(answer.status).toBe(202)
    expect(refusals(events)).toEqual(['unmapped_subject'])
  })

  it('a malformed subject is invalid_request', async () => {
    const { receiver } = open()
    for (const subject of [
      { format: 'iss_sub', sub: 'no-iss' },
      { format: 'aliases', identifiers: [] },
      'alice',
    ]) {
      const set = await world.transmitter.sign(SSF_EVENTS.credentialChange, subject as never)
      const answer = await receiver.push(pushRequest(set.token))
      expect(answer.status).toBe(400)
      expect(JSON.parse(answer.body).err).toBe('invalid_request')
    }
  })
})

describe('stream events', () => {
  it('verification and stream-updated are recorded for operators', async () => {
    const { receiver } = open()
    expect(receiver.stream()).toEqual({
      status: undefined,
      verifiedAt: undefined,
      lastEventAt: undefined,
    })
    const stream = { format: 'opaque', id: 'stream-1' }
    await push(
      current as Receiving,
      'https://schemas.openid.net/secevent/ssf/event-type/verification',
      stream,
      { state: 'x' },
    )
    await push(
      current as Receiving,
      'https://schemas.openid.net/secevent/ssf/event-type/stream-updated',
      stream,
      { status: 'paused' },
    )
    const state = receiver.stream()
    expect(state.status).toBe('paused')
    expect(state.verifiedAt).toBeTypeOf('number')
    expect(state.lastEventAt).toBeTypeOf('number')
  })
})

describe('the event’s time', () => {
  it('is event_timestamp, else toe, else iat', async () => {
    const { gate } = open()
    const t = nowSeconds()
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      ['ts', { event_timestamp: t - 100 }, {}],
      ['toe', {}, { toe: t - 100 }],
      ['iat', {}, { iat: t - 100 }],
    ]
    for (const [name, payload, claims] of cases) {
      const before = await mint({ sub: `time-${name}`, iat: t - 101 })
      const after = await mint({ sub: `time-${name}`, iat: t - 99 })
      const set = await world.transmitter.sign(
        SSF_EVENTS.credentialChange,
        user(`time-${name}`),
        payload,
        {
          claims: { ...claims },
        },
      )
      if (Object.keys(payload).length === 0) {
        // No event_timestamp at all: the transmitter adds one by default; take it out.
        const unsigned = await world.transmitter.sign(
          SSF_EVENTS.credentialChange,
          user(`time-${name}`),
          {},
          { claims: { ...claims, events: { [SSF_EVENTS.credentialChange]: {} } } },
        )
        expect(
          (await (current as Receiving).receiver.push(pushRequest(unsigned.token))).status,
        ).toBe(202)
      } else {
        expect((await (current as Receiving).receiver.push(pushRequest(set.token))).status).toBe(
          202,
        )
      }
      expect([name, await decided(gate, before)]).toEqual([name, 'revoked'])
      expect([name, await decided(gate, after)]).toEqual([name, 'admitted'])
    }
  })

  it('is never later than now plus clockToleranceSeconds (a transmitter clock running ahead)', async () => {
    const { events } = open({ clockToleranceSeconds: 10 })
    await push(current as Receiving, SSF_EVENTS.credentialChange, user('ahead'), {
      event_timestamp: nowSeconds() + 3000,
    })
    const applied = events.find((event) => event.type === 'signal_applied')
    const notBefore = applied?.type === 'signal_applied' ? applied.changes[0]?.notBefore : undefined
    expect(notBefore).toBeLessThanOrEqual(nowSeconds() + 11)
  })
})

describe('subjects: opaque as a session', () => {
  it('subjects: { opaque: "sid" } matches the token’s sid', async () => {
    const { gate } = open({ subjects: { opaque: 'sid' } })
    const token = await mint({ sub: 'lee', sid: 'opaque-session' })
    const other = await mint({ sub: 'lee', sid: 'kept' })
    await push(current as Receiving, SSF_EVENTS.sessionRevoked, {
      format: 'opaque',
      id: 'opaque-session',
    })
    expect(await decided(gate, token)).toBe('revoked')
    expect(await decided(gate, other)).toBe('admitted')
  })
})
