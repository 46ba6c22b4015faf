/**
 * The `scope` of a challenge, alike on every adapter: RFC 6750 §3 lets any `Bearer` challenge name
 * the scopes needed to access the resource, and MCP 2025-11-25 (Protected Resource Metadata
 * Discovery) says servers SHOULD include it in a 401, which clients prefer over the metadata's
 * `scopes_supported`. A guard that refuses names its own scopes, also when it ran its gate on an
 * anonymous request (`withAuth(h, { scopes })` and NestJS's guard included); a challenge whose
 * route the gate does not know names `scopes_supported`; a 403 names the scopes this request needs.
 */
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createGate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { GUARD_APPS, GUARD_PATHS, SECOND_GUARD_SCOPES } from '../helpers/apps.js'
import { NEST_GUARD_APPS } from '../helpers/nest-apps.js'

const EVERY_APP = [...GUARD_APPS, ...NEST_GUARD_APPS]
const METADATA_URL = 'https://api.example.test/.well-known/oauth-protected-resource/mcp'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

function gateOptions(extra: Partial<GateOptions> = {}): { a: GateOptions; b: GateOptions } {
  const issuers = keycloak({ authUrl: issuer.url, realms: ['acme'] })
  return {
    a: { issuers, audience: 'gateway', realm: 'gateway', ...extra },
    b: { issuers, audience: 'office', realm: 'office' },
  }
}

const get = (app: Server, path: string, token?: string) => {
  const pending = request(app).get(path)
  return token === undefined ? pending : pending.set('Authorization', `Bearer ${token}`)
}

describe.each(EVERY_APP)('%s: the scope a challenge names', (_name, createApp) => {
  let app: Server
  beforeAll(() => {
    const { a, b } = gateOptions()
    app = createApp(a, b)
  })
  afterAll(() => {
    app.close()
  })

  it('names the scopes of a guard that runs its gate, on a 401 to an anonymous request', async () => {
    const res = await get(app, GUARD_PATHS.soloScoped)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="gateway", scope="billing:read"')
  })

  it('names them on a 401 invalid_token and a 400 invalid_request too', async () => {
    const expired = await issuer.mint({ exp: 1, scope: 'billing:read' })
    const invalid = await get(app, GUARD_PATHS.soloScoped, expired)
    expect(invalid.status).toBe(401)
    expect(invalid.headers['www-authenticate']).toBe(
      'Bearer realm="gateway", error="invalid_token", error_description="token expired", scope="billing:read"',
    )
    const malformed = await request(app).get(GUARD_PATHS.soloScoped).set('Authorization', 'Bearer')
    expect(malformed.status).toBe(400)
    expect(malformed.headers['www-authenticate']).toBe(
      'Bearer realm="gateway", error="invalid_request", error_description="malformed bearer credentials", scope="billing:read"',
    )
  })

  it('names the scopes of the first scope guard of a route with two', async () => {
    const res = await get(app, GUARD_PATHS.soloTwo)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="gateway", scope="billing:read"')
  })

  it('names, on a 403, the scopes the refusing guard needs for this request (RFC 6750 §3.1)', async () => {
    const readOnly = await issuer.mint({ scope: 'billing:read' })
    const res = await get(app, GUARD_PATHS.soloTwo, readOnly)
    expect(res.status).toBe(403)
    expect(res.headers['www-authenticate']).toBe(
      `Bearer realm="gateway", error="insufficient_scope", error_description="insufficient scope", scope="${SECOND_GUARD_SCOPES.join(' ')}"`,
    )
  })

  it('names no roles: a role guard’s 401 has no scope to name without scopes_supported', async () => {
    const res = await get(app, GUARD_PATHS.soloRealmRole)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="gateway"')
  })
})

describe.each(EVERY_APP)('%s: the scope a challenge names, configured', (_name, createApp) => {
  it('names a guard’s scopes when it refuses an anonymous request its gate let through', async () => {
    const { a, b } = gateOptions({ credentialsRequired: false })
    const app = createApp(a, b)
    // Behind the gate's middleware, which admitted no one: the guard refuses, naming its scopes.
    for (const path of [GUARD_PATHS.gatedScoped, GUARD_PATHS.soloScoped]) {
      const res = await get(app, path)
      expect(res.status, path).toBe(401)
      expect(res.headers['www-authenticate'], path).toBe(
        'Bearer realm="gateway", scope="billing:read"',
      )
    }
    app.close()
  })

  it('names scopes_supported where no guard names scopes, and a guard’s own scopes first', async () => {
    const { a, b } = gateOptions({
      resourceMetadata: {
        resource: 'https://api.example.test/mcp',
        scopesSupported: ['mcp:tools', 'mcp:admin'],
      },
    })
    const app = createApp(a, b)
    const roles = await get(app, GUARD_PATHS.soloRealmRole)
    expect(roles.headers['www-authenticate']).toBe(
      `Bearer realm="gateway", scope="mcp:tools mcp:admin", resource_metadata="${METADATA_URL}"`,
    )
    const scoped = await get(app, GUARD_PATHS.soloScoped)
    expect(scoped.headers['www-authenticate']).toBe(
      `Bearer realm="gateway", scope="billing:read", resource_metadata="${METADATA_URL}"`,
    )
    app.close()
  })

  it('names them in the DPoP challenge too (RFC 9449 §7.1)', async () => {
    const { a, b } = gateOptions({
      dpop: { mode: 'required', publicBaseUrl: 'https://api.example.test' },
    })
    const app = createApp(a, b)
    const res = await get(app, GUARD_PATHS.soloScoped)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toMatch(
      /^DPoP realm="gateway", scope="billing:read", algs="[^"]+"$/,
    )
    app.close()
  })
})

describe('every adapter', () => {
  it('gives identical challenges for the same requests to guards that know their route', async () => {
    const { a, b } = gateOptions({
      resourceMetadata: {
        resource: 'https://api.example.test/mcp',
        scopesSupported: ['mcp:tools'],
      },
    })
    const servers = EVERY_APP.map(([, createApp]) => createApp(a, b))
    const readOnly = await issuer.mint({ scope: 'billing:read' })
    const cases: Array<readonly [string, string | undefined]> = [
      [GUARD_PATHS.soloScoped, undefined],
      [GUARD_PATHS.soloScoped, 'not.a.token'],
      [GUARD_PATHS.soloTwo, undefined],
      [GUARD_PATHS.soloTwo, readOnly],
      [GUARD_PATHS.soloAnyScope, undefined],
      [GUARD_PATHS.soloClientRole, undefined],
      [GUARD_PATHS.soloAcr, undefined],
      // The step-up guard after the scope guard refuses: it names no scope of its own.
      [GUARD_PATHS.soloStepUp, readOnly],
    ]
    for (const [path, token] of cases) {
      const answers = []
      for (const server of servers) {
        const res = await get(server, path, token)
        answers.push({ status: res.status, challenge: res.headers['www-authenticate'] })
      }
      expect(answers[0]?.challenge, path).toMatch(/scope="/)
      for (const answer of answers.slice(1)) expect(answer, path).toEqual(answers[0])
    }
    for (const server of servers) server.close()
  })
})

describe('gate.check()', () => {
  it('names the requiredScope of the request, else scopes_supported, else none', async () => {
    const issuers = keycloak({ authUrl: issuer.url, realms: ['acme'] })
    const plain = createGate({ issuers, audience: 'gateway' })
    const challengeOf = async (gate: typeof plain, requiredScope?: string) => {
      const refused = await gate.check({ headers: {}, requiredScope }).catch((error) => error)
      return (refused as { headers: Record<string, string> }).headers['WWW-Authenticate']
    }
    expect(await challengeOf(plain)).toBe('Bearer realm="api"')
    expect(await challengeOf(plain, 'a:b c:d')).toBe('Bearer realm="api", scope="a:b c:d"')
    const described = createGate({
      issuers,
      audience: 'gateway',
      resourceMetadata: { resource: 'https://api.example.test/mcp', scopesSupported: ['x:y'] },
    })
    expect(await challengeOf(described)).toBe(
      `Bearer realm="api", scope="x:y", resource_metadata="${METADATA_URL}"`,
    )
    expect(described.challenge).toBe(await challengeOf(described))
    // A scope that would break the quoted string loses the characters RFC 6750 §3 forbids.
    expect(await challengeOf(plain, 'a"b\\c')).toBe('Bearer realm="api", scope="abc"')
  })
})
