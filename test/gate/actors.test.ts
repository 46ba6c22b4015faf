/**
 * The gate's delegation checks: `auth.actor` read from a verified token's `act`, the
 * `delegation` option's allowed actors and chain depth, `may_act`, and the attacks on the chain:
 * an `act` forged in a token of another issuer, an actor named by another issuer, a chain deeper
 * than allowed. And `auth.tokenFor()` where it cannot exchange: no exchanger, a DPoP-bound token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { createGate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

const BASE = 'https://office.example.test'

let issuer: TestIssuer
let stranger: TestIssuer
let key: TestDpopKey
let ISS: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'office' })
  stranger = await createTestIssuer({ realms: ['acme'], audience: 'office' })
  key = await createDpopKey()
  ISS = `${issuer.url}/realms/acme`
})
afterAll(async () => {
  await issuer.close()
  await stranger.close()
})

function gateWith(extra: Partial<GateOptions>, events: GateEvent[] = []) {
  return createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'office',
    onEvent: (event) => events.push(event),
    ...extra,
  })
}

const check = (gate: ReturnType<typeof createGate>, token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } })

describe('auth.actor', () => {
  it('is the act chain of the verified token, nested, and undefined without act; events name the actor', async () => {
    const events: GateEvent[] = []
    const gate = gateWith({}, events)
    const token = await issuer.mint({
      sub: 'alice',
      act: { sub: 'office-workflow', client_id: 'wf', act: { sub: 'gateway' } },
    })
    const { auth } = await check(gate, token)
    expect(auth?.actor).toEqual({
      subject: 'office-workflow',
      clientId: 'wf',
      issuer: undefined,
      claims: { sub: 'office-workflow', client_id: 'wf' },
      actor: {
        subject: 'gateway',
        clientId: undefined,
        issuer: undefined,
        claims: { sub: 'gateway' },
        actor: undefined,
      },
    })
    // Without a delegation option any chain is admitted: nothing changes for existing gates.
    expect((await check(gate, await issuer.mint({ sub: 'alice' }))).auth?.actor).toBeUndefined()
    expect(events.filter((event) => event.type === 'accepted').map((event) => event.actor)).toEqual(
      ['office-workflow', undefined],
    )
    // Not enumerable: a logged auth shows the actor, never tokenFor or the token.
    expect(Object.keys(auth ?? {})).toContain('actor')
    expect(Object.keys(auth ?? {})).not.toContain('tokenFor')
  })
})

describe('delegation option', () => {
  it('admits an allowed actor and refuses another with 403 access_denied and the reason actor_not_allowed', async () => {
    const events: GateEvent[] = []
    const gate = gateWith({ delegation: { allowedActors: ['gateway'] } }, events)
    await expect(
      check(gate, await issuer.mint({ sub: 'alice', act: { sub: 'gateway' } })),
    ).resolves.toMatchObject({ auth: { subject: 'alice', actor: { subject: 'gateway' } } })
    // A direct user token has no actor to check.
    await expect(check(gate, await issuer.mint({ sub: 'alice' }))).resolves.toBeDefined()
    const refused = check(gate, await issuer.mint({ sub: 'alice', act: { sub: 'intruder' } }))
    await expect(refused).rejects.toMatchObject({
      code: 'ERR_ACTOR_REFUSED',
      status: 403,
      reason: 'actor_not_allowed',
      detail: { actor: 'intruder' },
    })
    const rejected = events.find((event) => event.type === 'rejected')
    expect(rejected).toMatchObject({ reason: 'actor_not_allowed', status: 403, issuer: ISS })
  })

  it('matches an actor by client_id when it has no sub, and by a record naming subject, clientId and issuer', async () => {
    const gate = gateWith({
      delegation: {
        allowedActors: [
          'gateway',
          { clientId: 'wf' },
          { subject: 'partner', issuer: 'https://partner.example' },
        ],
        maxChainDepth: 3,
      },
    })
    await expect(
      check(gate, await issuer.mint({ act: { client_id: 'gateway' } })),
    ).resolves.toBeDefined()
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'x', client_id: 'wf' } })),
    ).resolves.toBeDefined()
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'partner', iss: 'https://partner.example' } })),
    ).resolves.toBeDefined()
    // Every actor of the chain must be allowed, not only the current one.
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'gateway', act: { sub: 'intruder' } } })),
    ).rejects.toMatchObject({ reason: 'actor_not_allowed', detail: { actor: 'intruder' } })
  })

  it('attack: an act naming the allowed actor but another issuer is not that actor', async () => {
    const gate = gateWith({ delegation: { allowedActors: ['gateway'] } })
    const token = await issuer.mint({
      sub: 'alice',
      act: { sub: 'gateway', iss: 'https://evil.example/realms/acme' },
    })
    await expect(check(gate, token)).rejects.toMatchObject({
      code: 'ERR_ACTOR_REFUSED',
      reason: 'actor_not_allowed',
      detail: { actor: 'gateway', actorIssuer: 'https://evil.example/realms/acme' },
    })
  })

  it('attack: an act forged in a token of another issuer is refused before any actor is read (401)', async () => {
    const gate = gateWith({ delegation: { allowedActors: ['gateway'] } })
    // Same realm path, same audience, an allowed actor: signed by keys the gate does not trust.
    const forged = await stranger.mint({ sub: 'alice', act: { sub: 'gateway' } })
    await expect(check(gate, forged)).rejects.toMatchObject({ status: 401 })
  })

  it('attack: a chain deeper than maxChainDepth is refused (default 1), and 0 refuses every delegated token', async () => {
    const deep = await issuer.mint({
      sub: 'alice',
      act: { sub: 'gateway', act: { sub: 'gateway' } },
    })
    await expect(check(gateWith({ delegation: {} }), deep)).rejects.toMatchObject({
      code: 'ERR_ACTOR_REFUSED',
      reason: 'actor_chain_too_deep',
      detail: { depth: 2, maxChainDepth: 1 },
    })
    await expect(check(gateWith({ delegation: { maxChainDepth: 2 } }), deep)).resolves.toBeDefined()
    const none = gateWith({ delegation: { maxChainDepth: 0 } })
    await expect(check(none, await issuer.mint({ act: { sub: 'gateway' } }))).rejects.toMatchObject(
      { reason: 'actor_chain_too_deep' },
    )
    await expect(check(none, await issuer.mint({ sub: 'alice' }))).resolves.toBeDefined()
  })

  it('refuses a malformed act (not an object) as actor_malformed, with or without the option', async () => {
    await expect(check(gateWith({}), await issuer.mint({ act: 'gateway' }))).rejects.toMatchObject({
      code: 'ERR_ACTOR_REFUSED',
      reason: 'actor_malformed',
    })
    const gate = gateWith({ delegation: {} })
    await expect(check(gate, await issuer.mint({ act: 'gateway' }))).rejects.toMatchObject({
      reason: 'actor_malformed',
    })
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'gateway', act: ['x'] } })),
    ).rejects.toMatchObject({ reason: 'actor_malformed' })
  })

  it('honours may_act: the actor acting must be the one the token names', async () => {
    const gate = gateWith({ delegation: {} })
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'gateway' }, may_act: { sub: 'gateway' } })),
    ).resolves.toBeDefined()
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'intruder' }, may_act: { sub: 'gateway' } })),
    ).rejects.toMatchObject({ code: 'ERR_ACTOR_REFUSED', reason: 'actor_not_permitted' })
    await expect(
      check(gate, await issuer.mint({ act: { sub: 'gateway' }, may_act: 'gateway' })),
    ).rejects.toMatchObject({ reason: 'actor_not_permitted' })
  })

  it('validates the option with messages that say what to change', () => {
    expect(() => gateWith({ delegation: { allowedActors: [] } })).toThrow(
      'createGate(options): "delegation.allowedActors" must be a non-empty array of actors',
    )
    expect(() => gateWith({ delegation: { allowedActors: [{ issuer: 'x' }] } })).toThrow(
      '"delegation.allowedActors[0]" must name the actor: "subject" (act.sub) or "clientId" (act.client_id)',
    )
    expect(() => gateWith({ delegation: { maxChainDepth: 17 } })).toThrow(
      '"delegation.maxChainDepth" must be a whole number from 0 to 16',
    )
    expect(() => gateWith({ delegation: { exchange: {} as never } })).toThrow(
      `"delegation.exchange" must be an exchanger: createTokenExchange({ … }) from 'tollgate/client'`,
    )
  })
})

describe('auth.tokenFor() where it cannot exchange', () => {
  it('rejects with ERR_EXCHANGE_NOT_POSSIBLE on a gate without an exchanger', async () => {
    const { auth } = await check(gateWith({}), await issuer.mint({ sub: 'alice' }))
    await expect(auth?.tokenFor('https://office.example.com')).rejects.toMatchObject({
      name: 'TokenSourceError',
      code: 'ERR_EXCHANGE_NOT_POSSIBLE',
      retryable: false,
    })
  })

  it('refuses to exchange a DPoP-bound token, without asking the exchanger', async () => {
    let asked = 0
    const gate = gateWith({
      dpop: { mode: 'allowed', publicBaseUrl: BASE },
      delegation: {
        exchange: {
          exchange: async () => {
            asked++
            return 'never'
          },
        },
      },
    })
    const bound = await issuer.mint({ sub: 'alice' }, { dpop: { jkt: key.jkt } })
    const headers = await key.headers(bound, { method: 'GET', url: `${BASE}/records` })
    const { auth } = await gate.check({
      method: 'GET',
      url: '/records',
      headers: { authorization: headers.Authorization, dpop: headers.DPoP },
    })
    await expect(auth?.tokenFor('office')).rejects.toMatchObject({
      code: 'ERR_EXCHANGE_NOT_POSSIBLE',
      message: expect.stringContaining('sender-constrained'),
    })
    expect(asked).toBe(0)
    // A bearer token at the same gate goes to the exchanger (any object with exchange()).
    const { auth: bearer } = await check(gate, await issuer.mint({ sub: 'alice' }))
    await expect(bearer?.tokenFor('office')).resolves.toBe('never')
    expect(asked).toBe(1)
  })
})
