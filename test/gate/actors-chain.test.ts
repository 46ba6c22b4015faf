/**
 * Each rule of the `act` chain (RFC 8693 §4.1, §4.4), end to end: tokens signed by the test
 * issuer, sent over HTTP to every adapter, each rule with a token it admits and one it refuses,
 * so that a rule weakened or dropped turns a 403 into a 200 (or the reverse). The reason is read
 * from the gate's `rejected` event; the answer is 403 `access_denied`.
 *
 * The rules: an `act` (or one nested in it) that is not an object, or a chain longer than
 * tollgate reads, is malformed; a chain longer than `maxChainDepth` is refused; every actor of the
 * chain, not only the current one, must be allowed; an actor is named by its issuer (the token's
 * own unless `act.iss` says otherwise); a string entry matches `act.sub`, or `act.client_id` of an
 * actor with no `sub`; a record matches every field it names; `may_act` must name the actor
 * acting, by `sub`, `client_id` and issuer.
 */
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import type { DelegationOptions } from '../../src/gate/actors.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'

const ROUTE = '/api/v1/billing/subscriptions'
const PARTNER = 'https://partner.example/realms/acme'
const EVIL = 'https://evil.example/realms/acme'

let issuer: TestIssuer
let ISS: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'office' })
  ISS = issuer.issuer('acme')
})
afterAll(async () => {
  await issuer.close()
})

/** A chain of `depth` actors, each named `name`. */
function chain(depth: number, name = 'gateway'): Record<string, unknown> {
  let act: Record<string, unknown> = { sub: name }
  for (let at = 1; at < depth; at++) act = { sub: name, act }
  return act
}

type Claims = Record<string, unknown> | (() => Record<string, unknown>)
/** A token's extra claims, and the answer: 200, or 403 with this reason. */
type Case = readonly [label: string, claims: Claims, expected: 200 | string]

const RULES: ReadonlyArray<
  readonly [rule: string, delegation: DelegationOptions | undefined, cases: readonly Case[]]
> = [
  [
    'an act that is not an object is malformed, without the option too',
    undefined,
    [
      ['an object', { act: { sub: 'gateway' } }, 200],
      ['a string', { act: 'gateway' }, 'actor_malformed'],
      ['an array nested in an object', { act: { sub: 'gateway', act: ['x'] } }, 'actor_malformed'],
      ['null', { act: null }, 'actor_malformed'],
      ['a chain longer than tollgate reads (17)', { act: chain(17) }, 'actor_malformed'],
    ],
  ],
  [
    'a chain longer than maxChainDepth is refused: 1 by default',
    {},
    [
      ['one actor', { act: chain(1) }, 200],
      ['two actors', { act: chain(2) }, 'actor_chain_too_deep'],
    ],
  ],
  [
    'a chain longer than maxChainDepth is refused: 3',
    { maxChainDepth: 3 },
    [
      ['three actors', { act: chain(3) }, 200],
      ['four actors', { act: chain(4) }, 'actor_chain_too_deep'],
    ],
  ],
  [
    'maxChainDepth 0 refuses every delegated token and admits the others',
    { maxChainDepth: 0 },
    [
      ['no act', {}, 200],
      ['one actor', { act: chain(1) }, 'actor_chain_too_deep'],
    ],
  ],
  [
    'every actor of the chain must be allowed, not only the current one',
    { allowedActors: ['gateway', 'office'], maxChainDepth: 3 },
    [
      ['all allowed', { act: { sub: 'gateway', act: { sub: 'office' } } }, 200],
      [
        'the earlier actor not allowed',
        { act: { sub: 'gateway', act: { sub: 'intruder' } } },
        'actor_not_allowed',
      ],
      [
        'the first actor of three not allowed',
        { act: { sub: 'gateway', act: { sub: 'office', act: { sub: 'intruder' } } } },
        'actor_not_allowed',
      ],
      [
        'the current actor not allowed',
        { act: { sub: 'intruder', act: { sub: 'gateway' } } },
        'actor_not_allowed',
      ],
    ],
  ],
  [
    'an actor is named by its issuer: a string entry is an actor of the token’s own issuer',
    { allowedActors: ['gateway'] },
    [
      ['no act.iss', { act: { sub: 'gateway' } }, 200],
      ['act.iss the token’s issuer', () => ({ act: { sub: 'gateway', iss: ISS } }), 200],
      ['act.iss another issuer', { act: { sub: 'gateway', iss: EVIL } }, 'actor_not_allowed'],
    ],
  ],
  [
    'an entry naming another issuer matches only that issuer’s actor',
    { allowedActors: [{ subject: 'partner', issuer: PARTNER }] },
    [
      ['named by that issuer', { act: { sub: 'partner', iss: PARTNER } }, 200],
      ['named by the token’s issuer', { act: { sub: 'partner' } }, 'actor_not_allowed'],
    ],
  ],
  [
    'a string entry matches act.sub, or act.client_id of an actor with no sub',
    { allowedActors: ['gateway'] },
    [
      ['by sub', { act: { sub: 'gateway', client_id: 'other' } }, 200],
      ['by client_id, no sub', { act: { client_id: 'gateway' } }, 200],
      [
        'client_id matches, another sub',
        { act: { sub: 'x', client_id: 'gateway' } },
        'actor_not_allowed',
      ],
    ],
  ],
  [
    'a record entry matches every field it names',
    { allowedActors: [{ subject: 'svc', clientId: 'wf' }, { clientId: 'batch' }] },
    [
      ['subject and clientId', { act: { sub: 'svc', client_id: 'wf' } }, 200],
      ['subject alone', { act: { sub: 'svc' } }, 'actor_not_allowed'],
      [
        'subject and another clientId',
        { act: { sub: 'svc', client_id: 'x' } },
        'actor_not_allowed',
      ],
      ['clientId, any sub', { act: { sub: 'anyone', client_id: 'batch' } }, 200],
      ['the clientId as sub', { act: { sub: 'batch' } }, 'actor_not_allowed'],
    ],
  ],
  [
    'may_act must name the actor acting (by sub, client_id and issuer)',
    {},
    [
      ['may_act names it', { act: { sub: 'gateway' }, may_act: { sub: 'gateway' } }, 200],
      ['may_act without act', { may_act: { sub: 'gateway' } }, 200],
      [
        'another actor',
        { act: { sub: 'intruder' }, may_act: { sub: 'gateway' } },
        'actor_not_permitted',
      ],
      ['by client_id', { act: { sub: 'x', client_id: 'wf' }, may_act: { client_id: 'wf' } }, 200],
      [
        'another client_id',
        { act: { sub: 'x', client_id: 'other' }, may_act: { client_id: 'wf' } },
        'actor_not_permitted',
      ],
      [
        'sub matches, client_id does not',
        {
          act: { sub: 'gateway', client_id: 'other' },
          may_act: { sub: 'gateway', client_id: 'wf' },
        },
        'actor_not_permitted',
      ],
      ['naming nobody', { act: { sub: 'gateway' }, may_act: {} }, 'actor_not_permitted'],
      ['not an object', { act: { sub: 'gateway' }, may_act: 'gateway' }, 'actor_not_permitted'],
      [
        'another issuer',
        { act: { sub: 'gateway' }, may_act: { sub: 'gateway', iss: EVIL } },
        'actor_not_permitted',
      ],
      [
        'the token’s issuer',
        () => ({ act: { sub: 'gateway' }, may_act: { sub: 'gateway', iss: ISS } }),
        200,
      ],
    ],
  ],
]

async function listen(server: ProtectedServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function close(server: ProtectedServer): Promise<void> {
  await server.gate.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}

describe.each(APPS)('the act chain through %s', (_name, createApp) => {
  it.each(RULES)('%s', async (_rule, delegation, cases) => {
    const events: GateEvent[] = []
    const server = createApp({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'office',
      ...(delegation === undefined ? {} : { delegation }),
      onEvent: (event) => events.push(event),
    })
    try {
      const url = await listen(server)
      for (const [label, claims, expected] of cases) {
        const token = await issuer.mint({
          sub: 'alice',
          ...(typeof claims === 'function' ? claims() : claims),
        })
        // Twice: the second answer comes from the cached verdict and must be the same.
        for (const round of [1, 2]) {
          events.length = 0
          const res = await fetch(`${url}${ROUTE}`, {
            headers: { authorization: `Bearer ${token}` },
          })
          const body = await res.text()
          if (expected === 200) {
            expect(res.status, `${label} (${round})`).toBe(200)
            continue
          }
          expect(res.status, `${label} (${round})`).toBe(403)
          expect(JSON.parse(body), label).toMatchObject({ error: 'access_denied' })
          const rejected = events.find((event) => event.type === 'rejected')
          expect(rejected, label).toMatchObject({ reason: expected, status: 403 })
        }
      }
    } finally {
      await close(server)
    }
  })
})
