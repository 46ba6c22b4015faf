/**
 * Which issuer a token goes to, what `mode` changes, what `ready()` sends, the budget refilling,
 * and what the gate never repeats (the token) in events and errors. Against an endpoint whose
 * answers the test writes; Date is faked where time matters.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto'

import { SignJWT } from 'jose'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import { createGate, type GateOptions, type IntrospectionOptions } from '../../src/index.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

const key = generateKeyPairSync('rsa', { modulusLength: 2048 })
let endpoint: IntrospectionEndpointStub
const A = () => `${endpoint.url}/a`
const B = () => `${endpoint.url}/b`
const C = () => `${endpoint.url}/c`

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint([
    { ...key.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' },
  ])
})
afterAll(() => endpoint.close())
beforeEach(() => {
  endpoint.calls.length = 0
  // Active for the issuer whose endpoint was called.
  endpoint.answer = (_form, path) => ({
    body: JSON.stringify({
      active: true,
      iss: `${endpoint.url}${path.replace('/introspect', '')}`,
      aud: 'orders',
      client_id: 'shop',
      exp: Math.floor(Date.now() / 1000) + 120,
    }),
  })
})

type Entry = GateOptions['issuers'][number]
const entry = (
  issuer: string,
  mode?: 'introspection' | 'jwt-then-introspection' | 'jwt',
  opaqueTokens?: IntrospectionOptions['opaqueTokens'],
): Entry => ({
  issuer,
  jwksUri: `${endpoint.url}/jwks`,
  ...(mode === undefined
    ? {}
    : {
        introspection: {
          mode,
          endpoint: `${issuer}/introspect`,
          clientId: 'orders-api',
          clientSecret: 'orders-secret',
          ...(opaqueTokens === undefined ? {} : { opaqueTokens }),
        },
      }),
})

function gateOf(issuers: Entry[], extra: Partial<GateOptions> = {}) {
  const events: GateEvent[] = []
  const gate = createGate({
    issuers,
    audience: 'orders',
    onEvent: (event) => events.push(event),
    ...extra,
  })
  return { gate, events }
}
const check = (gate: ReturnType<typeof createGate>, token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } })
const opaque = () => randomBytes(24).toString('base64url')
const signed = (claims: Record<string, unknown>) =>
  new SignJWT({ aud: 'orders', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuedAt()
    .setExpirationTime('2m')
    .sign(key.privateKey)

describe('where a token goes', () => {
  it("sends an opaque token to the issuer entry whose opaqueTokens is 'all'", async () => {
    const { gate } = gateOf([
      entry(A()),
      entry(B(), 'introspection', 'all'),
      entry(C(), 'introspection', 'none'),
    ])
    const { auth } = await check(gate, opaque())
    expect(auth?.issuer).toBe(B())
    expect(auth?.header).toEqual({ alg: 'none' })
    expect(endpoint.calls).toEqual(['/b/introspect'])
  })

  it('sends a JWT to the issuer its payload names', async () => {
    const { gate } = gateOf([
      entry(B(), 'introspection', 'all'),
      entry(C(), 'introspection', 'none'),
    ])
    const { auth } = await check(gate, await signed({ iss: C() }))
    expect(auth?.issuer).toBe(C())
    expect(endpoint.calls).toEqual(['/c/introspect'])
  })

  it('never sends a JWT naming no configured issuer to a provider: 401 unknown_issuer', async () => {
    const { gate } = gateOf([entry(B(), 'introspection')])
    await expect(
      check(gate, await signed({ iss: 'https://elsewhere.example' })),
    ).rejects.toMatchObject({
      status: 401,
      reason: 'unknown_issuer',
    })
    expect(endpoint.calls).toEqual([])
  })

  it('verifies the JWTs of a jwt issuer locally beside an introspecting one', async () => {
    const { gate } = gateOf([entry(A()), entry(B(), 'introspection')])
    const { auth } = await check(gate, await signed({ iss: A() }))
    expect(auth?.header.alg).toBe('RS256')
    expect(endpoint.calls).toEqual([])
  })

  it("mode 'jwt' introspects nothing: an opaque token is refused malformed", async () => {
    const { gate } = gateOf([entry(A(), 'jwt')])
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 401, reason: 'malformed' })
    expect(endpoint.calls).toEqual([])
  })

  it('jwt-then-introspection: a JWT of an unknown kid is introspected, a verified one is not', async () => {
    const { gate } = gateOf([entry(B(), 'jwt-then-introspection')])
    await check(gate, await signed({ iss: B() }))
    expect(endpoint.calls).toEqual([])
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const unknownKid = await new SignJWT({ iss: B(), aud: 'orders' })
      .setProtectedHeader({ alg: 'RS256', kid: 'rotated-away' })
      .setIssuedAt()
      .setExpirationTime('2m')
      .sign(other.privateKey)
    const { auth } = await check(gate, unknownKid)
    expect(auth?.header).toEqual({ alg: 'none' })
    expect(endpoint.calls).toEqual(['/b/introspect'])
  })

  it('an introspection issuer introspects its own JWTs too (lightweight tokens), never verifying them locally', async () => {
    const { gate } = gateOf([entry(B(), 'introspection')])
    const lightweight = await signed({ iss: B(), aud: undefined })
    const { auth } = await check(gate, lightweight)
    expect(auth?.claims.aud).toBe('orders')
    expect(endpoint.calls).toEqual(['/b/introspect'])
  })
})

describe('token profiles', () => {
  it("refuses every introspected token under tokenProfile 'rfc9068' (no JOSE header to mark it)", async () => {
    const { gate } = gateOf([entry(B(), 'introspection')], { tokenProfile: 'rfc9068' })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 401, reason: 'token_type' })
  })
})

describe('readiness', () => {
  it('asks the endpoint once, with a random string, on the first ready()', async () => {
    let probe: string | null = null
    endpoint.answer = (form) => {
      probe = form.get('token')
      return { body: '{"active":false}' }
    }
    const { gate } = gateOf([entry(B(), 'introspection')])
    expect((await gate.ready()).introspection).toEqual([
      { issuer: B(), endpoint: `${B()}/introspect`, state: 'ready' },
    ])
    await gate.ready()
    expect(endpoint.calls).toEqual(['/b/introspect'])
    expect(probe).toMatch(/^tollgate-probe-[0-9a-f-]{36}$/)
  })

  it('reports an endpoint that refuses the gate credentials as unavailable', async () => {
    endpoint.answer = () => ({ status: 401, body: '{"error":"invalid_client"}' })
    const { gate, events } = gateOf([entry(B(), 'introspection')])
    const report = await gate.ready()
    expect(report.ready).toBe(false)
    expect(report.introspection?.[0]?.state).toBe('unavailable')
    expect(events.find((event) => event.type === 'introspection_failed')).toMatchObject({
      reason: 'status',
      status: 401,
    })
  })
})

describe('the call budget over time', () => {
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.UTC(2031, 0, 1) })
  })
  afterAll(() => {
    vi.useRealTimers()
  })

  it('admits a token answered 503 for want of budget once the budget refills', async () => {
    const { gate } = gateOf([
      {
        ...entry(B(), 'introspection'),
        introspection: {
          endpoint: `${B()}/introspect`,
          clientId: 'orders-api',
          clientSecret: 'orders-secret',
          budget: { calls: 1, perSeconds: 10 },
        },
      },
    ])
    await check(gate, opaque())
    const token = opaque()
    await expect(check(gate, token)).rejects.toMatchObject({
      status: 503,
      reason: 'introspection_budget',
      headers: { 'Retry-After': '10' },
    })
    vi.setSystemTime(Date.now() + 10_000)
    await expect(check(gate, token)).resolves.toBeDefined()
    expect(endpoint.calls).toHaveLength(2)
  })
})

describe('what the gate never repeats', () => {
  it('puts no token in events, refusals or failures', async () => {
    const { gate, events } = gateOf([entry(B(), 'introspection')])
    const token = opaque()
    const seen: unknown[] = []
    for (const answer of [
      { status: 500, body: token },
      { body: JSON.stringify({ active: 'true', token }) },
      { body: JSON.stringify({ active: false }) },
    ]) {
      endpoint.answer = () => answer
      seen.push(await check(gate, token).catch((error: unknown) => error))
    }
    const text = JSON.stringify(
      [...events, ...seen].map((item) => {
        const error = (item as { error?: unknown }).error ?? item
        return {
          item,
          message: (error as Error).message,
          cause: String((error as { cause?: unknown }).cause),
          causeCause: String((error as { cause?: { cause?: unknown } }).cause?.cause),
        }
      }),
    )
    expect(text).not.toContain(token)
  })
})

describe('gate.close()', () => {
  it('ends a call under way with 503 at once and starts none, while held verdicts still answer', async () => {
    const { gate } = gateOf([
      {
        ...entry(B(), 'introspection'),
        introspection: {
          endpoint: `${B()}/introspect`,
          clientId: 'orders-api',
          clientSecret: 'orders-secret',
          timeoutMs: 60_000,
        },
      },
    ])
    const held = opaque()
    await check(gate, held)
    endpoint.answer = () => 'hang'
    const pending = check(gate, opaque())
    // The call has reached the endpoint, which never answers; only close() can end it now.
    while (endpoint.calls.length < 2) await new Promise((resolve) => setTimeout(resolve, 10))
    await gate.close()
    await expect(pending).rejects.toMatchObject({ status: 503 })
    await expect(check(gate, opaque())).rejects.toMatchObject({ status: 503 })
    expect(endpoint.calls).toHaveLength(2)
    await expect(check(gate, held)).resolves.toBeDefined()
  })
})
