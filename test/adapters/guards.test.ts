/**
 * A guard made by a gate (`auth.requireScopes(…)` and the like, NestJS's `@Require…`) protects a
 * route on its own: it runs its gate when the gate has not decided on the request, and
 * takes the gate's own decision when it has, never another gate's. Same answers, events and
 * rate-limit points as the gate's middleware followed by the guard, on every adapter.
 */
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { GUARD_APPS, GUARD_PATHS, type GuardAppFactory } from '../helpers/apps.js'
import { NEST_GUARD_APPS } from '../helpers/nest-apps.js'

const EVERY_APP = [...GUARD_APPS, ...NEST_GUARD_APPS]

/** Points per tenant and window of gate A: a second consumption per request would show in `r`. */
const POINTS = 3
const POLICY = `"default";q=${POINTS};w=60`
const MISSING = { error: 'unauthorized', error_description: 'bearer token required' }
const INVALID = { error: 'invalid_token', error_description: 'invalid token' }
const INSUFFICIENT = { error: 'insufficient_scope', error_description: 'insufficient scope' }
const challengeA = (scope: string) =>
  `Bearer realm="gateway", error="insufficient_scope", error_description="insufficient scope", scope="${scope}"`

/** What one gate did: how many times it decided (its `skip` hook runs once per decision), its events. */
interface GateRecord {
  decisions: number
  events: GateEvent[]
}
const record = (): GateRecord => ({ decisions: 0, events: [] })
const of = (gate: GateRecord, type: GateEvent['type']) =>
  gate.events.filter((event) => event.type === type)

let issuer: TestIssuer
let a: GateRecord
let b: GateRecord
let tenants = 0
/** A tenant no other test has spent points of. */
const freshTenant = () => `tenant-${++tenants}`

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})
beforeEach(() => {
  a = record()
  b = record()
})

/**
 * Gate A: audience `gateway`, realm `gateway`, per-tenant limits. Gate B: audience `office`, realm
 * `office`, no tenants. Each counts its decisions and keeps its events.
 */
function gateOptions(extra: Partial<GateOptions> = {}): { a: GateOptions; b: GateOptions } {
  const issuers = keycloak({ authUrl: issuer.url, realms: ['acme'] })
  return {
    a: {
      issuers,
      audience: 'gateway',
      realm: 'gateway',
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: POINTS, durationSeconds: 60 }] },
      skip: () => {
        a.decisions++
        return false
      },
      onEvent: (event) => a.events.push(event),
      ...extra,
    },
    b: {
      issuers,
      audience: 'office',
      realm: 'office',
      skip: () => {
        b.decisions++
        return false
      },
      onEvent: (event) => b.events.push(event),
    },
  }
}

const get = (app: Server, path: string, token?: string) => {
  const pending = request(app).get(path)
  return token === undefined ? pending : pending.set('Authorization', `Bearer ${token}`)
}

describe.each(EVERY_APP)('%s: guards of a gate', (name, createApp: GuardAppFactory) => {
  let app: Server
  beforeAll(() => {
    const { a: aOptions, b: bOptions } = gateOptions()
    app = createApp(aOptions, bOptions)
  })
  afterAll(() => {
    app.close()
  })

  describe('a guard alone on its route runs its gate', () => {
    it('admits a token with the scope: 200, the admission, the RateLimit fields, one point, one accepted event', async () => {
      const tenant = freshTenant()
      const token = await issuer.mint({ sub: 'alice', tenant, scope: 'openid billing:read' })
      const res = await get(app, GUARD_PATHS.soloScoped, token)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ authenticated: true, subject: 'alice', tenant })
      expect(res.headers['ratelimit-policy']).toBe(POLICY)
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};t=\\d+$`))
      expect(a.decisions).toBe(1)
      expect(of(a, 'accepted')).toEqual([
        expect.objectContaining({ tenant, path: GUARD_PATHS.soloScoped }),
      ])
      expect(of(a, 'rejected')).toEqual([])
    })

    it('answers 403 insufficient_scope, with the RateLimit fields, to a token without the scope', async () => {
      const token = await issuer.mint({ tenant: freshTenant(), scope: 'openid' })
      const res = await get(app, GUARD_PATHS.soloScoped, token)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toBe(challengeA('billing:read'))
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};t=\\d+$`))
      expect(res.body).toEqual(INSUFFICIENT)
      expect(a.decisions).toBe(1)
      expect(of(a, 'accepted')).toHaveLength(1)
      expect(of(a, 'rejected')).toEqual([
        expect.objectContaining({ code: 'ERR_INSUFFICIENT_SCOPE', status: 403 }),
      ])
    })

    it('answers 401 with the bare challenge, and no RateLimit fields, when no token is sent', async () => {
      const res = await get(app, GUARD_PATHS.soloScoped)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe('Bearer realm="gateway", scope="billing:read"')
      expect(res.headers['ratelimit']).toBeUndefined()
      expect(res.body).toEqual(MISSING)
      expect(of(a, 'rejected')).toEqual([expect.objectContaining({ code: 'ERR_TOKEN_MISSING' })])
    })

    it('answers 401 invalid_token to a bad token', async () => {
      for (const token of ['not.a.token', await issuer.mint({ tenant: 'x', exp: 1 })]) {
        const res = await get(app, GUARD_PATHS.soloScoped, token)
        expect(res.status).toBe(401)
        expect(res.headers['www-authenticate']).toMatch(
          /^Bearer realm="gateway", error="invalid_token"/,
        )
        expect(res.headers['ratelimit']).toBeUndefined()
        expect(res.body.error).toBe('invalid_token')
      }
      expect(of(a, 'rejected').map((event) => 'code' in event && event.code)).toEqual([
        'ERR_TOKEN_INVALID',
        'ERR_TOKEN_EXPIRED',
      ])
    })

    it('answers 429 with Retry-After once the tenant is over its limit', async () => {
      const token = await issuer.mint({ tenant: freshTenant(), scope: 'billing:read' })
      for (let used = 1; used <= POINTS; used++) {
        const res = await get(app, GUARD_PATHS.soloScoped, token)
        expect(res.status).toBe(200)
        expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - used};`))
      }
      const res = await get(app, GUARD_PATHS.soloScoped, token)
      expect(res.status).toBe(429)
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(res.headers['ratelimit']).toMatch(/^"default";r=0;/)
      expect(res.body).toEqual({ error: 'rate_limited', error_description: 'rate limit exceeded' })
      expect(a.decisions).toBe(POINTS + 1)
    })

    it('does so for every guard factory: any of scopes, realm roles, client roles', async () => {
      const admin = await issuer.mint({
        tenant: freshTenant(),
        scope: 'billing:admin',
        realm_access: { roles: ['admin'] },
        resource_access: { office: { roles: ['editor'] } },
      })
      const plain = await issuer.mint({ tenant: freshTenant(), scope: 'openid' })
      const paths = [
        GUARD_PATHS.soloAnyScope,
        GUARD_PATHS.soloRealmRole,
        GUARD_PATHS.soloClientRole,
      ]
      for (const path of paths) {
        expect((await get(app, path, admin)).status, path).toBe(200)
        const refused = await get(app, path, plain)
        expect(refused.status, path).toBe(403)
        expect(refused.body, path).toEqual(INSUFFICIENT)
        expect((await get(app, path)).status, path).toBe(401)
      }
      expect(a.decisions).toBe(paths.length * 3)
    })
  })

  describe.each([
    ['alone', GUARD_PATHS.soloTwo],
    ['behind their gate', GUARD_PATHS.gatedTwo],
  ])('two guards on one route, %s', (_where, path) => {
    it('decide once: one point, one accepted event', async () => {
      const token = await issuer.mint({
        tenant: freshTenant(),
        scope: 'billing:read billing:admin',
      })
      const res = await get(app, path, token)
      expect(res.status).toBe(200)
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};`))
      expect(a.decisions).toBe(1)
      expect(of(a, 'accepted')).toHaveLength(1)
    })

    it('answer the second guard’s refusal, once, after one decision', async () => {
      const token = await issuer.mint({ tenant: freshTenant(), scope: 'billing:read' })
      const res = await get(app, path, token)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toBe(challengeA('billing:write billing:admin'))
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};`))
      expect(a.decisions).toBe(1)
      expect(of(a, 'accepted')).toHaveLength(1)
      expect(of(a, 'rejected')).toEqual([
        expect.objectContaining({ code: 'ERR_INSUFFICIENT_SCOPE' }),
      ])
    })
  })

  describe('a guard behind its own gate', () => {
    it('takes the gate’s decision: one decision, one point, one accepted event', async () => {
      const tenant = freshTenant()
      const token = await issuer.mint({ sub: 'bob', tenant, scope: 'billing:read' })
      const res = await get(app, GUARD_PATHS.gatedScoped, token)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ subject: 'bob', tenant })
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};`))
      expect(a.decisions).toBe(1)
      expect(of(a, 'accepted')).toHaveLength(1)
    })

    it('decides once where its middleware runs twice: one point, one accepted event', async () => {
      const token = await issuer.mint({ tenant: freshTenant() })
      const res = await get(app, GUARD_PATHS.gatedAgain, token)
      expect(res.status).toBe(200)
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};`))
      expect(a.decisions).toBe(1)
      expect(of(a, 'accepted')).toHaveLength(1)
    })

    it('answers as the guard alone does: 403, 401', async () => {
      const token = await issuer.mint({ tenant: freshTenant(), scope: 'openid' })
      const scopeless = await get(app, GUARD_PATHS.gatedScoped, token)
      expect(scopeless.status).toBe(403)
      expect(scopeless.headers['www-authenticate']).toBe(challengeA('billing:read'))
      const missing = await get(app, GUARD_PATHS.gatedScoped)
      expect(missing.status).toBe(401)
      // Nest's guard decides knowing the route's decorators, and names their scopes as a guard
      // alone does; a middleware in front of the route refuses before the route is known.
      expect(missing.headers['www-authenticate']).toBe(
        name.startsWith('nestjs')
          ? 'Bearer realm="gateway", scope="billing:read"'
          : 'Bearer realm="gateway"',
      )
      expect(missing.body).toEqual(MISSING)
      expect(a.decisions).toBe(2)
      expect(of(a, 'rejected')).toHaveLength(2)
    })
  })

  describe('a guard of gate A behind gate B', () => {
    it('refuses a token for B’s audience with A’s answer, though B admitted it and it has the scope', async () => {
      const token = await issuer.mint({
        aud: 'office',
        tenant: freshTenant(),
        scope: 'billing:read',
      })
      const res = await get(app, GUARD_PATHS.behindB, token)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe(
        'Bearer realm="gateway", error="invalid_token", error_description="invalid token", scope="billing:read"',
      )
      expect(res.body).toEqual(INVALID)
      expect(of(b, 'accepted')).toHaveLength(1)
      expect(of(a, 'accepted')).toEqual([])
      expect(of(a, 'rejected')).toEqual([
        expect.objectContaining({ code: 'ERR_TOKEN_INVALID', reason: 'audience' }),
      ])
      expect([a.decisions, b.decisions]).toEqual([1, 1])
    })

    it('never sees a token for A’s audience only: B refuses it with B’s answer first', async () => {
      const token = await issuer.mint({ tenant: freshTenant(), scope: 'billing:read' })
      const res = await get(app, GUARD_PATHS.behindB, token)
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toBe(
        'Bearer realm="office", error="invalid_token", error_description="invalid token"',
      )
      expect(res.body).toEqual(INVALID)
      expect(of(b, 'rejected')).toEqual([expect.objectContaining({ reason: 'audience' })])
      expect(a.events).toEqual([])
      expect([a.decisions, b.decisions]).toEqual([0, 1])
    })

    it('admits a token for both audiences once each gate admitted it: A’s admission and A’s RateLimit fields', async () => {
      const tenant = freshTenant()
      const token = await issuer.mint({ aud: ['office', 'gateway'], tenant, scope: 'billing:read' })
      const res = await get(app, GUARD_PATHS.behindB, token)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ authenticated: true, tenant })
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${POINTS - 1};`))
      expect(of(a, 'accepted')).toHaveLength(1)
      expect(of(b, 'accepted')).toHaveLength(1)
      expect([a.decisions, b.decisions]).toEqual([1, 1])
    })

    it('refuses a token for both audiences without the scope with A’s 403', async () => {
      const token = await issuer.mint({ aud: ['office', 'gateway'], tenant: freshTenant() })
      const res = await get(app, GUARD_PATHS.behindB, token)
      expect(res.status).toBe(403)
      expect(res.headers['www-authenticate']).toBe(challengeA('billing:read'))
    })
  })
})

describe.each(EVERY_APP)('%s: guards of a gate, configured', (_name, createApp) => {
  it('answers an anonymous request on a gate with credentialsRequired: false with 401, deciding once', async () => {
    const { a: aOptions, b: bOptions } = gateOptions({ credentialsRequired: false })
    const app = createApp(aOptions, bOptions)
    for (const path of [GUARD_PATHS.soloScoped, GUARD_PATHS.gatedScoped, GUARD_PATHS.soloTwo]) {
      a.decisions = 0
      const res = await get(app, path)
      expect(res.status, path).toBe(401)
      expect(res.headers['www-authenticate'], path).toBe(
        'Bearer realm="gateway", scope="billing:read"',
      )
      expect(res.body, path).toEqual(MISSING)
      expect(a.decisions, path).toBe(1)
    }
    app.close()
  })

  it('hands a guard’s refusals to the application with errorHandling: framework', async () => {
    const { a: aOptions, b: bOptions } = gateOptions({ errorHandling: 'framework' })
    const app = createApp(aOptions, bOptions)
    const missing = await get(app, GUARD_PATHS.soloScoped)
    expect(missing.status).toBe(401)
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="gateway", scope="billing:read"')
    expect(missing.body).toEqual({ handledBy: 'app', code: 'ERR_TOKEN_MISSING' })
    const token = await issuer.mint({ tenant: freshTenant(), scope: 'openid' })
    const scopeless = await get(app, GUARD_PATHS.soloScoped, token)
    expect(scopeless.status).toBe(403)
    expect(scopeless.body).toEqual({ handledBy: 'app', code: 'ERR_INSUFFICIENT_SCOPE' })
    app.close()
  })
})

describe('tollgate/fetch guards called directly', () => {
  const requestWith = (token: string) =>
    new Request('http://localhost/direct', { headers: { authorization: `Bearer ${token}` } })

  it('answer on their own gate’s decision at once, and run their gate first on another gate’s admission', async () => {
    const { tollgate } = await import('../../adapters/fetch/index.js')
    const { a: aOptions, b: bOptions } = gateOptions()
    const gateA = tollgate(aOptions)
    const gateB = tollgate(bOptions)
    const guard = gateA.requireScopes('billing:read')
    const forB = requestWith(
      await issuer.mint({ aud: 'office', tenant: freshTenant(), scope: 'billing:read' }),
    )
    const admittedByB = await gateB.handle(forB)
    expect(admittedByB.response).toBeUndefined()
    if (admittedByB.response !== undefined) return
    const refusal = guard(forB, admittedByB)
    expect(refusal).toBeInstanceOf(Promise)
    const answer = await refusal
    expect(answer?.status).toBe(401)
    expect(answer?.headers.get('www-authenticate')).toBe(
      'Bearer realm="gateway", error="invalid_token", error_description="invalid token", scope="billing:read"',
    )

    const forA = requestWith(await issuer.mint({ tenant: freshTenant(), scope: 'billing:read' }))
    const admittedByA = await gateA.handle(forA)
    expect(admittedByA.response).toBeUndefined()
    if (admittedByA.response !== undefined) return
    expect(guard(forA, admittedByA)).toBeUndefined()
    expect(a.decisions).toBe(2)
    await gateA.gate.close()
    await gateB.gate.close()
  })

  it('await an application’s own guard that returns a promise', async () => {
    const { tollgate } = await import('../../adapters/fetch/index.js')
    const auth = tollgate(gateOptions().a)
    const token = await issuer.mint({ tenant: freshTenant(), scope: 'billing:read' })
    const refusing = async () => new Response(null, { status: 418 })
    const passing = async () => undefined
    const refused = await auth.handle(requestWith(token), { guards: [passing, refusing] })
    expect(refused.response?.status).toBe(418)
    const admitted = await auth.handle(requestWith(token), { guards: [passing] })
    expect(admitted.response).toBeUndefined()
    expect(admitted.auth?.tenant).toMatch(/^tenant-/)
    await auth.gate.close()
  })
})
