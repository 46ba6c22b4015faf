/**
 * The `unknown_issuer` refusal at a gate with many issuers: the `rejected` event says
 * how many issuers are configured and names the few closest to the token's `iss`, not all of
 * them (1,000 issuers made 37 KB per refusal), through Express and the Fetch adapter too; the
 * client still sees nothing of it.
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createGate, type GateEvent, type GateOptions, keycloak } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { APPS } from '../helpers/apps.js'

const REALMS = Array.from({ length: 1000 }, (_, index) => `r${index}`)
const ROUTE = '/api/v1/billing/subscriptions'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

type Rejected = Extract<GateEvent, { type: 'rejected' }>

function options(events: GateEvent[], realms = REALMS): GateOptions {
  return {
    issuers: keycloak({ authUrl: issuer.url, realms }),
    audience: 'gateway',
    onEvent: (event) => events.push(event),
  }
}

async function rejectedFor(iss: unknown, realms = REALMS): Promise<Rejected> {
  const events: GateEvent[] = []
  const gate = createGate(options(events, realms))
  const token = await issuer.mint({ iss })
  await gate.check({ headers: { authorization: `Bearer ${token}` } }).catch(() => undefined)
  await gate.close()
  return events.find((event) => event.type === 'rejected') as Rejected
}

describe('unknown_issuer at a gate with 1,000 issuers', () => {
  it('says how many issuers are configured and names the 5 sharing the longest prefix with the iss', async () => {
    // A trailing slash: the configured issuer it was meant to be comes first.
    const rejected = await rejectedFor(`${issuer.url}/realms/r42/`)
    expect(rejected).toMatchObject({ reason: 'unknown_issuer', status: 401 })
    expect(rejected.detail).toEqual({
      unverifiedIss: `${issuer.url}/realms/r42/`,
      configured: 1000,
      expected: ['r42', 'r420', 'r421', 'r422', 'r423'].map(
        (realm) => `${issuer.url}/realms/${realm}`,
      ),
    })
  })

  it('keeps the event small: under 1 KB, where the list of every issuer was over 37 KB', async () => {
    const rejected = await rejectedFor(`${issuer.url}/realms/unknown`)
    expect(JSON.stringify(rejected).length).toBeLessThan(1024)
    expect(rejected.detail?.['expected']).toHaveLength(5)
  })

  it('names the first 5 issuers configured when the token has no iss to compare', async () => {
    const rejected = await rejectedFor(42)
    expect(rejected.detail).toEqual({
      unverifiedIss: '(number)',
      configured: 1000,
      expected: REALMS.slice(0, 5).map((realm) => `${issuer.url}/realms/${realm}`),
    })
  })

  it('names every issuer, in configured order, when 5 or fewer are configured', async () => {
    const realms = ['zeta', 'alpha', 'mid', 'beta', 'omega']
    const rejected = await rejectedFor('https://elsewhere.example', realms)
    expect(rejected.detail).toEqual({
      unverifiedIss: 'https://elsewhere.example',
      configured: 5,
      expected: realms.map((realm) => `${issuer.url}/realms/${realm}`),
    })
  })
})

describe.each(APPS.filter(([name]) => name === 'express 5' || name === 'fetch'))(
  '%s adapter, 1,000 issuers',
  (_name, createApp) => {
    it('answers a generic 401 and reports a bounded unknown_issuer event', async () => {
      const events: GateEvent[] = []
      const app = createApp(options(events))
      try {
        const token = await issuer.mint({ iss: `${issuer.url}/realms/r7/` })
        const res = await request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)
        expect(res.status).toBe(401)
        expect(res.body).toEqual({ error: 'invalid_token', error_description: 'invalid token' })
        expect(JSON.stringify(res.headers)).not.toContain('/realms/r7')
        const rejected = events.find((event) => event.type === 'rejected') as Rejected
        expect(rejected.detail).toMatchObject({ configured: 1000 })
        const expected = rejected.detail?.['expected'] as string[]
        expect(expected[0]).toBe(`${issuer.url}/realms/r7`)
        expect(JSON.stringify(rejected).length).toBeLessThan(1024)
      } finally {
        app.close()
        await app.gate.close()
      }
    })
  },
)
