/**
 * A flood of made-up strings against the call budget (RFC 7662 §4: the endpoint is a scanning
 * target, so the gate bounds its calls; RFC 6750 §3.1: a 401 `invalid_token` tells the client to
 * throw its token away). A request the gate could not check is a 503 with `Retry-After`, never a
 * verdict on the token; a token the provider called active keeps its verdict while the budget is
 * spent or the provider is down (bounded by `staleIfErrorSeconds` and the token's `exp`); and the
 * calls that refresh known verdicts are a reserve no unknown string can spend. Date is faked.
 */
import { randomBytes } from 'node:crypto'

import request from 'supertest'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import { createGate, type GateOptions, type IntrospectionOptions } from '../../src/index.js'
import { APPS } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

const START = Date.UTC(2031, 0, 1)
let endpoint: IntrospectionEndpointStub
/** Tokens the provider calls active, and until when (seconds). */
const active = new Map<string, number>()

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
})
afterAll(() => endpoint.close())
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: START })
  endpoint.calls.length = 0
  active.clear()
  endpoint.answer = (form) => {
    const exp = active.get(form.get('token') ?? '')
    if (exp === undefined) return { body: '{"active":false}' }
    return {
      body: JSON.stringify({
        active: true,
        iss: endpoint.url,
        aud: 'billing',
        client_id: 'shop',
        sub: 'known-user',
        scope: 'billing:read',
        exp,
      }),
    }
  }
})
afterEach(() => {
  vi.useRealTimers()
})

const nowSeconds = () => Math.floor(Date.now() / 1000)
const junk = () => randomBytes(24).toString('base64url')
function known(lifetimeSeconds = 3600): string {
  const token = junk()
  active.set(token, nowSeconds() + lifetimeSeconds)
  return token
}
const optionsOf = (
  introspection: Partial<IntrospectionOptions> = {},
  events: GateEvent[] = [],
): GateOptions => ({
  issuers: [
    {
      issuer: endpoint.url,
      jwksUri: `${endpoint.url}/jwks`,
      introspection: {
        endpoint: `${endpoint.url}/introspect`,
        clientId: 'billing-api',
        clientSecret: 'billing-secret',
        ...introspection,
      },
    },
  ],
  audience: 'billing',
  onEvent: (event) => events.push(event),
})
const check = (gate: ReturnType<typeof createGate>, token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } })
const outcome = (gate: ReturnType<typeof createGate>, token: string) =>
  check(gate, token).then(
    () => 200,
    (error: { status: number }) => error.status,
  )

describe('past the budget, a token the gate could not check', () => {
  it('is answered 503 ERR_INTROSPECTION_BUSY with Retry-After, never 401, and nothing is sent', async () => {
    const events: GateEvent[] = []
    const gate = createGate(optionsOf({ budget: { calls: 2, perSeconds: 30 } }, events))
    await outcome(gate, junk())
    const error = await check(gate, known()).catch((caught: unknown) => caught)
    expect(error).toMatchObject({
      status: 503,
      code: 'ERR_INTROSPECTION_BUSY',
      reason: 'introspection_budget',
      error: 'temporarily_unavailable',
      headers: { 'Retry-After': '30' },
    })
    expect(endpoint.calls).toHaveLength(1)
    expect(events.filter((event) => event.type === 'introspection_budget_exhausted')).toHaveLength(
      1,
    )
  })

  it('is admitted on its next request once the budget has refilled for it', async () => {
    const gate = createGate(optionsOf({ budget: { calls: 2, perSeconds: 30 } }))
    await outcome(gate, junk())
    const token = known()
    expect(await outcome(gate, token)).toBe(503)
    vi.setSystemTime(Date.now() + 30_000)
    expect(await outcome(gate, token)).toBe(200)
  })
})

describe("a known user's token under a sustained flood of made-up strings", () => {
  it('keeps 200 through five minutes of flood, its verdict refreshed from the reserve as it ages out', async () => {
    const gate = createGate(optionsOf({ budget: { calls: 4, perSeconds: 1 } }))
    const token = known()
    expect(await outcome(gate, token)).toBe(200)
    const junkOutcomes = new Set<number>()
    for (let second = 0; second <= 300; second += 10) {
      vi.setSystemTime(START + second * 1000)
      // Four times what the unreserved share of the budget holds, every time.
      const flood = await Promise.all(Array.from({ length: 8 }, () => outcome(gate, junk())))
      for (const status of flood) junkOutcomes.add(status)
      expect([second, await outcome(gate, token)]).toEqual([second, 200])
    }
    // Junk is refused when asked about (401: the provider says it is not active) or not asked
    // about (503), never admitted.
    expect([...junkOutcomes].sort()).toEqual([401, 503])
  })

  it('keeps its verdict (stale) when the reserve is spent too, then answers 503, never 401', async () => {
    // One call in all: no reserve; the flood takes every refill.
    const gate = createGate(
      optionsOf({ budget: { calls: 1, perSeconds: 1 }, cache: { staleIfErrorSeconds: 120 } }),
    )
    const token = known()
    expect(await outcome(gate, token)).toBe(200)
    for (let second = 4; second <= 240; second += 4) {
      vi.setSystemTime(START + second * 1000)
      await Promise.all([outcome(gate, junk()), outcome(gate, junk())])
      const status = await outcome(gate, token)
      // Fresh for 60 s, then stale for 120 s, then it could not be checked: 503.
      expect([second, status]).toEqual([second, second < 180 ? 200 : 503])
    }
  })
})

describe('serving a verdict stale', () => {
  it('answers from the held verdict while the provider is down, up to staleIfErrorSeconds', async () => {
    const events: GateEvent[] = []
    const gate = createGate(optionsOf({ cache: { staleIfErrorSeconds: 300 } }, events))
    const token = known()
    expect(await outcome(gate, token)).toBe(200)
    endpoint.answer = () => ({ status: 500, body: '' })
    vi.setSystemTime(START + 61_000)
    expect(await outcome(gate, token)).toBe(200)
    expect(events.some((event) => event.type === 'introspection_failed')).toBe(true)
    vi.setSystemTime(START + 359_000)
    expect(await outcome(gate, token)).toBe(200)
    vi.setSystemTime(START + 360_000)
    expect(await outcome(gate, token)).toBe(503)
  })

  it("never past the token's own exp: past it, the held verdict no longer answers", async () => {
    const gate = createGate(optionsOf({ cache: { staleIfErrorSeconds: 3600 } }))
    const token = known(90)
    expect(await outcome(gate, token)).toBe(200)
    endpoint.answer = () => ({ status: 500, body: '' })
    vi.setSystemTime(START + 80_000)
    expect(await outcome(gate, token)).toBe(200)
    // Past exp plus the clock tolerance (5 s): the provider is asked again, and is down.
    vi.setSystemTime(START + 96_000)
    expect(await outcome(gate, token)).toBe(503)
  })

  it('serves nothing stale with staleIfErrorSeconds 0', async () => {
    const gate = createGate(optionsOf({ cache: { staleIfErrorSeconds: 0 } }))
    const token = known()
    expect(await outcome(gate, token)).toBe(200)
    endpoint.answer = () => ({ status: 500, body: '' })
    vi.setSystemTime(START + 61_000)
    expect(await outcome(gate, token)).toBe(503)
  })

  it('refuses at once a token the provider calls inactive when its verdict is refreshed', async () => {
    const gate = createGate(optionsOf({ cache: { staleIfErrorSeconds: 300 } }))
    const token = known()
    expect(await outcome(gate, token)).toBe(200)
    active.delete(token)
    vi.setSystemTime(START + 61_000)
    await expect(check(gate, token)).rejects.toMatchObject({ status: 401, reason: 'inactive' })
    // Then the provider is down: the refusal stands, the old verdict is not served again.
    endpoint.answer = () => ({ status: 500, body: '' })
    vi.setSystemTime(START + 70_000)
    expect(await outcome(gate, token)).toBe(503)
  })
})

describe.each(APPS)('%s: a flood of made-up strings', (_name, createApp) => {
  it("never turns a known user's request into 401, nor a junk one into anything but 401 or 503", async () => {
    const server = createApp(optionsOf({ budget: { calls: 4, perSeconds: 1 } }))
    const token = known()
    try {
      const path = '/api/v1/billing/subscriptions'
      const user = async () =>
        (await request(server).get(path).set('Authorization', `Bearer ${token}`)).status
      expect(await user()).toBe(200)
      const statuses = new Set<number>()
      let busy: request.Response | undefined
      for (let second = 0; second < 130; second += 13) {
        vi.setSystemTime(START + second * 1000)
        for (let i = 0; i < 6; i++) {
          const res = await request(server).get(path).set('Authorization', `Bearer ${junk()}`)
          statuses.add(res.status)
          if (res.status === 503) busy = res
        }
        expect(await user()).toBe(200)
      }
      expect([...statuses].sort()).toEqual([401, 503])
      expect(busy?.headers['retry-after']).toBe('1')
      expect(busy?.headers['www-authenticate']).toBeUndefined()
    } finally {
      await server.gate.close()
      server.close()
    }
  })
})
