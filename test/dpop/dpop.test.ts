import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

const BASE = 'https://api.example.test'
const PATH = '/orders'
const ALGS = 'algs="ES256 EdDSA PS256 RS256"'

let issuer: TestIssuer
let key: TestDpopKey
let base: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'orders' })
  key = await createDpopKey()
  base = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'orders' }
})
afterAll(async () => {
  await issuer.close()
})
afterEach(() => {
  vi.useRealTimers()
})

async function dpopRequest(token: string, nonce?: string, url = `${BASE}${PATH}`) {
  const headers = await key.headers(token, { method: 'GET', url, nonce })
  return {
    method: 'GET',
    url: PATH,
    headers: { authorization: headers.Authorization, dpop: headers.DPoP },
  }
}

function gateWith(dpop: GateOptions['dpop'], extra: Partial<GateOptions> = {}): Gate {
  return createGate({ ...base, ...extra, ...(dpop === undefined ? {} : { dpop }) })
}

describe('gate with DPoP', () => {
  it('challenges without credentials with both schemes in allowed mode, DPoP alone in required mode', () => {
    expect(gateWith({ mode: 'allowed', publicBaseUrl: BASE }).challenge).toBe(
      `Bearer realm="api", DPoP realm="api", ${ALGS}`,
    )
    expect(
      gateWith({ mode: 'required', publicBaseUrl: BASE, algorithms: ['EdDSA'] }).challenge,
    ).toBe('DPoP realm="api", algs="EdDSA"')
    expect(gateWith({ mode: 'off' }).challenge).toBe('Bearer realm="api"')
  })

  it('reports why a proof was refused to the operator, never to the client', async () => {
    const events: GateEvent[] = []
    const gate = gateWith(
      { mode: 'allowed', publicBaseUrl: BASE },
      { onEvent: (event) => events.push(event) },
    )
    const token = await issuer.mint({}, { dpop: key })
    const replayed = await dpopRequest(token)
    await gate.check(replayed)
    await expect(gate.check(replayed)).rejects.toMatchObject({ code: 'ERR_DPOP_PROOF_INVALID' })
    await expect(
      gate.check(await dpopRequest(token, undefined, `${BASE}/x`)),
    ).rejects.toMatchObject({ code: 'ERR_DPOP_PROOF_INVALID' })
    await expect(
      gate.check({ ...(await dpopRequest(token)), headers: { authorization: `Bearer ${token}` } }),
    ).rejects.toMatchObject({ code: 'ERR_TOKEN_INVALID' })
    expect(
      events
        .filter((event) => event.type === 'rejected')
        .map((event) => [event.reason, event.detail, event.issuer]),
    ).toEqual([
      ['dpop_replayed', undefined, issuer.issuer('acme')],
      ['dpop_proof', { check: 'htu' }, issuer.issuer('acme')],
      ['dpop_binding', undefined, issuer.issuer('acme')],
    ])
  })

  it('refuses a path with dot segments as a proof whose htu does not match', async () => {
    const gate = gateWith({ mode: 'allowed', publicBaseUrl: BASE })
    const token = await issuer.mint({}, { dpop: key })
    const request = await dpopRequest(token, undefined, `${BASE}/orders`)
    await expect(gate.check({ ...request, url: '/x/%2E%2e/orders' })).rejects.toMatchObject({
      code: 'ERR_DPOP_PROOF_INVALID',
      detail: { check: 'htu' },
    })
    // Dots inside a segment are ordinary characters.
    const dotted = await dpopRequest(token, undefined, `${BASE}/orders/..v2./.x`)
    await expect(gate.check({ ...dotted, url: '/orders/..v2./.x' })).resolves.toBeDefined()
  })

  it('refuses a second DPoP field that the headers object does not show (a host keeping one value)', async () => {
    // Node joins repeated DPoP fields with ", " (the comma check catches that); a host that keeps
    // one value of a repeated field, as Node does for Authorization, leaves only the raw list.
    const gate = gateWith({ mode: 'allowed', publicBaseUrl: BASE })
    const token = await issuer.mint({}, { dpop: key })
    const request = await dpopRequest(token)
    const second = await dpopRequest(token)
    const { authorization, dpop } = request.headers
    await expect(
      gate.check({
        ...request,
        rawHeaders: ['Authorization', authorization, 'DPoP', dpop, 'dpop', second.headers.dpop],
      }),
    ).rejects.toMatchObject({ code: 'ERR_DPOP_PROOF_INVALID', detail: { check: 'repeated' } })
    await expect(
      gate.check({ ...request, rawHeaders: ['Authorization', authorization, 'DPoP', dpop] }),
    ).resolves.toBeDefined()
  })

  it('refuses a replayed proof even when the token verdict comes from the cache', async () => {
    const gate = gateWith({ mode: 'allowed', publicBaseUrl: BASE })
    const token = await issuer.mint({}, { dpop: key })
    const first = await dpopRequest(token)
    await gate.check(first)
    await gate.check(await dpopRequest(token))
    await expect(gate.check(first)).rejects.toMatchObject({ reason: 'dpop_replayed' })
  })

  it('sends a fresh nonce with an admitted request that used the previous one, and refuses one older', async () => {
    const gate = gateWith({
      mode: 'required',
      publicBaseUrl: BASE,
      nonce: { lifetimeSeconds: 60 },
    })
    await gate.ready()
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(new Date('2026-11-23T06:00:00Z'))
    const token = await issuer.mint({}, { dpop: key, expiresInSeconds: 3600 })
    const asked = await gate.check(await dpopRequest(token)).catch((error: unknown) => error)
    expect(asked).toMatchObject({ code: 'ERR_DPOP_NONCE_REQUIRED', status: 401 })
    const nonce = (asked as { headers: Record<string, string> }).headers['DPoP-Nonce'] as string
    expect((asked as { headers: Record<string, string> }).headers['WWW-Authenticate']).toBe(
      `DPoP realm="api", error="use_dpop_nonce", error_description="DPoP nonce required", ${ALGS}`,
    )

    expect(await gate.check(await dpopRequest(token, nonce))).toMatchObject({ headers: {} })
    vi.setSystemTime(new Date('2026-11-23T06:01:00Z'))
    const next = await gate.check(await dpopRequest(token, nonce))
    const fresh = next.headers['DPoP-Nonce'] as string
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(fresh).not.toBe(nonce)
    vi.setSystemTime(new Date('2026-11-23T06:02:00Z'))
    await expect(gate.check(await dpopRequest(token, nonce))).rejects.toMatchObject({
      code: 'ERR_DPOP_NONCE_REQUIRED',
      headers: { 'DPoP-Nonce': expect.not.stringMatching(nonce) },
    })
    expect(await gate.check(await dpopRequest(token, fresh))).toMatchObject({ headers: {} })
  })

  it('accepts nonces issued by another gate that shares the secret', async () => {
    const nonce = { secret: 'x'.repeat(32) }
    const one = gateWith({ mode: 'allowed', publicBaseUrl: BASE, nonce })
    const two = gateWith({ mode: 'allowed', publicBaseUrl: BASE, nonce })
    const token = await issuer.mint({}, { dpop: key })
    const asked = await one.check(await dpopRequest(token)).catch((error: unknown) => error)
    const value = (asked as { headers: Record<string, string> }).headers['DPoP-Nonce']
    await expect(two.check(await dpopRequest(token, value))).resolves.toMatchObject({
      auth: { subject: 'user-1' },
    })
  })

  it('refuses a bound token whose cnf carries more than jkt, or a jkt that is not a thumbprint', async () => {
    const gate = gateWith({ mode: 'allowed', publicBaseUrl: BASE })
    for (const cnf of [{ jkt: key.jkt, 'x5t#S256': 'abc' }, { jkt: 'short' }, 'jkt', null]) {
      const token = await issuer.mint({ cnf })
      await expect(gate.check(await dpopRequest(token))).rejects.toMatchObject({
        reason: 'sender_constrained',
      })
    }
  })

  it.each(['shared', 'redis'] as const)(
    'with the %s replay store, lets fresh proofs of one bound token write at most maxEntriesPerKey claims',
    async (kind) => {
      const written: string[] = []
      const claimed = new Set<string>()
      const write = (key: string) => {
        written.push(key)
        const fresh = !claimed.has(key)
        claimed.add(key)
        return fresh
      }
      const store =
        kind === 'shared'
          ? {
              shared: {
                increment: () => Promise.reject(new Error('unused')),
                claimOnce: async (key: string) => write(key),
              },
            }
          : { redis: { set: async (key: string) => (write(key) ? 'OK' : null) } }
      const gate = gateWith({
        mode: 'allowed',
        publicBaseUrl: BASE,
        replay: { store, maxEntries: 1000, maxEntriesPerKey: 100 },
      })
      const token = await issuer.mint({}, { dpop: key })
      const statuses: number[] = []
      for (let index = 0; index < 150; index++) {
        statuses.push(
          await gate.check(await dpopRequest(token)).then(
            () => 200,
            (error: TollgateError) => error.status,
          ),
        )
      }
      expect(written).toHaveLength(100)
      expect(statuses.slice(0, 100)).toEqual(Array(100).fill(200))
      expect(statuses.slice(100)).toEqual(Array(50).fill(503))
      // Another client's bound token is served.
      const other = await createDpopKey()
      const otherToken = await issuer.mint({}, { dpop: other })
      const headers = await other.headers(otherToken, { method: 'GET', url: `${BASE}${PATH}` })
      await expect(
        gate.check({
          method: 'GET',
          url: PATH,
          headers: { authorization: headers.Authorization, dpop: headers.DPoP },
        }),
      ).resolves.toMatchObject({ auth: { subject: 'user-1' } })
      expect(written).toHaveLength(101)
    },
  )
})
