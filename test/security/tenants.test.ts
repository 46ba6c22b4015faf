/**
 * Attack class: tenants and limits. A token that fails verification never reaches the tenant
 * resolver or the limiter (no points consumed, no rate-limit fields); one tenant's exhaustion never
 * touches another; tenant ids from claims are validated; floods of unknown realms or unknown kids
 * cost the identity provider at most one key fetch per cooldown.
 */
import { randomUUID } from 'node:crypto'

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import { createGate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  type Answer,
  bearer,
  type Case,
  EXPIRED,
  type Expected,
  INVALID_TOKEN,
  OK,
  RATE_LIMITED,
  send,
  useApps,
} from './helpers.js'
import {
  accessClaims,
  attackerKey,
  compact,
  type Json,
  kidOf,
  privateKeyOf,
  signText,
  signWith,
} from './tokens.js'

let issuer: TestIssuer
const kids = { acme: '', globex: '', initech: '' }

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'globex', 'initech'], audience: 'gateway' })
  for (const realm of Object.keys(kids) as (keyof typeof kids)[]) {
    kids[realm] = await kidOf(issuer, 'RS256', realm)
  }
})
afterAll(async () => {
  await issuer.close()
})

type Realm = keyof typeof kids

function genuine(overrides: Json, realm: Realm = 'acme', keyRealm: Realm = realm): string {
  return signWith(
    privateKeyOf(issuer, kids[keyRealm]),
    'RS256',
    { alg: 'RS256', typ: 'JWT', kid: kids[keyRealm] },
    accessClaims(issuer, overrides, realm),
  )
}

/** Tokens claiming `tenant` that must all be refused before the limiter is asked. */
function forgeries(tenant: string): Array<[string, string, Expected]> {
  const claims = accessClaims(issuer, { tenant, plan: 'small' })
  return [
    [
      'forged signature',
      signWith(attackerKey('rsa').privateKey, 'RS256', { alg: 'RS256', kid: kids.acme }, claims),
      INVALID_TOKEN,
    ],
    ['alg none', compact({ alg: 'none' }, claims), INVALID_TOKEN],
    [
      'signature stripped',
      `${genuine({ tenant, plan: 'small' }).split('.').slice(0, 2).join('.')}.`,
      INVALID_TOKEN,
    ],
    ['genuine but expired', genuine({ tenant, plan: 'small', exp: 1 }), EXPIRED],
    [
      'genuine but for another audience',
      genuine({ tenant, plan: 'small', aud: 'office' }),
      INVALID_TOKEN,
    ],
    ['genuine refresh token', genuine({ tenant, plan: 'small', typ: 'Refresh' }), INVALID_TOKEN],
    ["another realm's key", genuine({ tenant, plan: 'small' }, 'acme', 'globex'), INVALID_TOKEN],
    ['untrusted realm', genuine({ tenant, plan: 'small' }, 'initech'), INVALID_TOKEN],
  ]
}

/** A verified token whose tenant is missing or malformed: 401 invalid_token (description aside). */
const TENANT_INVALID: Expected = {
  status: 401,
  challenge: /^Bearer realm="api", error="invalid_token", error_description="[a-z ]+"$/,
  body: { error: 'invalid_token', error_description: expect.any(String) },
}

const TENANT_REFUSED: Expected = {
  status: 403,
  challenge: undefined,
  body: { error: 'access_denied', error_description: expect.any(String) },
}

function rateLimitFields(answer: Answer): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(answer.headers).filter(([name]) => name.includes('ratelimit')),
  )
}

describe('tenant from a claim, 3 points a minute on the "small" plan', () => {
  /** Tenants the policy refuses; a test may lift a suspension to read what the tenant has left. */
  const suspended = new Set(['suspended'])
  const apps = useApps(() => ({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'globex'] }),
    audience: 'gateway',
    tenant: {
      claim: 'tenant',
      planClaim: 'plan',
      policy: (id) =>
        suspended.has(id)
          ? { action: 'refuse' }
          : id === 'stranger'
            ? { action: 'unknown' }
            : { action: 'admit' },
    },
    rateLimit: {
      plans: {
        default: [{ points: 1000, durationSeconds: 60 }],
        small: [{ points: 3, durationSeconds: 60 }],
      },
    },
  }))

  it('never consumes points for a token that fails verification', async () => {
    const tenant = `t-${randomUUID().slice(0, 8)}`
    for (let round = 0; round < 3; round++) {
      for (const [, token, expected] of forgeries(tenant)) {
        const answers = await apps.expectAll(bearer(token), expected)
        for (const answer of answers) expect(rateLimitFields(answer)).toEqual({})
      }
    }
    const remaining: string[] = []
    for (let request = 0; request < 3; request++) {
      const answers = await apps.expectAll(bearer(genuine({ tenant, plan: 'small' })), OK)
      remaining.push(...answers.map((answer) => answer.headers['ratelimit']?.[0] ?? 'none'))
    }
    const count = apps.servers.length
    expect(remaining.map((value) => /r=(\d+)/.exec(value)?.[1])).toEqual([
      ...Array(count).fill('2'),
      ...Array(count).fill('1'),
      ...Array(count).fill('0'),
    ])
    await apps.expectAll(bearer(genuine({ tenant, plan: 'small' })), RATE_LIMITED)
  })

  it('answers 429 with Retry-After and policy fields that name the plan, never the tenant', async () => {
    const tenant = `secret-tenant-${randomUUID().slice(0, 8)}`
    for (let request = 0; request < 3; request++) {
      await apps.expectAll(bearer(genuine({ tenant, plan: 'small' })), OK)
    }
    const answers = await apps.expectAll(bearer(genuine({ tenant, plan: 'small' })), RATE_LIMITED)
    for (const answer of answers) {
      expect(Number(answer.headers['retry-after']?.[0])).toBeGreaterThanOrEqual(1)
      expect(Number(answer.headers['retry-after']?.[0])).toBeLessThanOrEqual(60)
      expect(answer.headers['ratelimit-policy']).toEqual(['"small";q=3;w=60'])
      expect(answer.raw).not.toContain(tenant)
    }
  })

  it('keeps tenants apart: one exhausted tenant leaves the others untouched', async () => {
    const spent = `t-${randomUUID().slice(0, 8)}`
    const neighbour = `t-${randomUUID().slice(0, 8)}`
    for (let request = 0; request < 3; request++) {
      await apps.expectAll(bearer(genuine({ tenant: spent, plan: 'small' })), OK)
    }
    await apps.expectAll(bearer(genuine({ tenant: spent, plan: 'small' })), RATE_LIMITED)
    await apps.expectAll(bearer(genuine({ tenant: neighbour, plan: 'small' })), OK)
    await apps.expectAll(bearer(genuine({ tenant: spent.toUpperCase(), plan: 'small' })), OK)
    await apps.expectAll(bearer(genuine({ tenant: spent })), OK)
    await apps.expectAll(bearer(genuine({ tenant: spent, plan: 'small' }, 'globex')), RATE_LIMITED)
  })

  it('refuses a token when the tenant resolver refuses, without consuming points', async () => {
    const tenant = `s-${randomUUID().slice(0, 8)}`
    suspended.add(tenant)
    try {
      for (let request = 0; request < 3; request++) {
        const answers = await apps.expectAll(
          bearer(genuine({ tenant, plan: 'small' })),
          TENANT_REFUSED,
        )
        for (const answer of answers) expect(rateLimitFields(answer)).toEqual({})
      }
    } finally {
      suspended.delete(tenant)
    }
    // Reinstated, the tenant still has every point of its window: the 3 refusals spent none.
    for (let request = 0; request < 3; request++) {
      const answers = await apps.expectAll(bearer(genuine({ tenant, plan: 'small' })), OK)
      for (const answer of answers) {
        expect(answer.headers['ratelimit']?.[0]).toMatch(
          new RegExp(`^"small";r=${2 - request};t=(59|60)$`),
        )
      }
    }
    await apps.expectAll(bearer(genuine({ tenant, plan: 'small' })), RATE_LIMITED)
  })

  const tenantShapes: Case[] = [
    ['no tenant claim', () => bearer(genuine({})), TENANT_INVALID],
    [
      'a tenant unknown to the policy',
      () => bearer(genuine({ tenant: 'stranger' })),
      TENANT_INVALID,
    ],
    ['tenant as a number', () => bearer(genuine({ tenant: 42 })), TENANT_INVALID],
    ['tenant as an array', () => bearer(genuine({ tenant: ['acme'] })), TENANT_INVALID],
    ['tenant as an object', () => bearer(genuine({ tenant: { id: 'acme' } })), TENANT_INVALID],
    ['an empty tenant', () => bearer(genuine({ tenant: '' })), TENANT_INVALID],
    ['a 300-character tenant', () => bearer(genuine({ tenant: 'a'.repeat(300) })), TENANT_INVALID],
    ['tenant with a path traversal', () => bearer(genuine({ tenant: '../acme' })), TENANT_INVALID],
    ['tenant with a Redis hash tag', () => bearer(genuine({ tenant: 'x}{acme' })), TENANT_INVALID],
    ['tenant with a newline', () => bearer(genuine({ tenant: 'acme\n' })), TENANT_INVALID],
    ['tenant "__proto__"', () => bearer(genuine({ tenant: '__proto__' })), TENANT_INVALID],
    [
      'tenant only inside "__proto__"',
      () =>
        bearer(
          signText(
            privateKeyOf(issuer, kids.acme),
            'RS256',
            JSON.stringify({ alg: 'RS256', kid: kids.acme }),
            JSON.stringify(accessClaims(issuer)).replace(/}$/, ',"__proto__":{"tenant":"acme"}}'),
          ),
        ),
      TENANT_INVALID,
    ],
  ]

  it.each(tenantShapes)(
    'refuses a verified token with %s (401 invalid_token)',
    async (_name, probe, expected) => {
      await apps.expectAll(await probe(), expected)
    },
  )

  it.each([
    ['no tenant claim', {}],
    ['a malformed tenant', { tenant: '../acme' }],
    ['a tenant unknown to the policy', { tenant: 'stranger' }],
  ])(
    'describes the refusal of a token with %s as generically as any other token problem',
    async (_name, claims) => {
      await apps.expectAll(bearer(genuine(claims)), INVALID_TOKEN)
    },
  )

  it('ignores a plan claim that is not a plan name and applies the default plan', async () => {
    const answers = await apps.expectAll(
      bearer(genuine({ tenant: `t-${randomUUID().slice(0, 8)}`, plan: '"small";q=1000' })),
      OK,
    )
    for (const answer of answers)
      expect(answer.headers['ratelimit-policy']).toEqual(['"default";q=1000;w=60'])
  })
})

describe('tenant per realm, 2 points a minute for realm globex', () => {
  const apps = useApps(() => ({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'globex'] }),
    audience: 'gateway',
    tenant: { from: 'realm' },
    rateLimit: {
      plans: {
        default: [{ points: 1000, durationSeconds: 60 }],
        small: [{ points: 2, durationSeconds: 60 }],
      },
      tenantPlans: { globex: 'small' },
    },
  }))

  it("lets no token reach globex's points unless globex's own key signed it", async () => {
    const crossRealm = [
      genuine({}, 'globex', 'acme'),
      genuine({}, 'globex', 'initech'),
      signWith(
        attackerKey('rsa').privateKey,
        'RS256',
        { alg: 'RS256', kid: kids.globex },
        accessClaims(issuer, {}, 'globex'),
      ),
    ]
    for (const token of crossRealm) await apps.expectAll(bearer(token), INVALID_TOKEN)
    await apps.expectAll(bearer(genuine({}, 'globex')), OK)
    await apps.expectAll(bearer(genuine({}, 'globex')), OK)
    await apps.expectAll(bearer(genuine({}, 'globex')), RATE_LIMITED)
    // acme is its own tenant, whatever claims its token carries.
    await apps.expectAll(bearer(genuine({ tenant: 'globex' }, 'acme')), OK)
    await apps.expectAll(bearer(genuine({}, 'acme')), OK)
  })
})

describe('floods of unknown realms and unknown kids', () => {
  const COOLDOWN_MS = 30_000
  const gateOptions = (): GateOptions => ({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    jwks: { cooldownMs: COOLDOWN_MS },
  })
  const apps = useApps(gateOptions)
  let now = Date.UTC(2031, 0, 1)

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now })
    // Warm every app's keys, then count from zero.
    await apps.expectAll(bearer(genuine({})), OK)
    issuer.resetCounts()
  })
  afterAll(() => {
    vi.useRealTimers()
  })
  afterEach(() => {
    issuer.resetCounts()
  })

  const advance = (ms: number) => {
    now += ms
    vi.setSystemTime(now)
  }
  const flood = async (tokens: string[]) => {
    const servers = apps.servers.map(([, server]) => server)
    for (let start = 0; start < tokens.length; start += 50) {
      const batch = tokens.slice(start, start + 50)
      const answers = await Promise.all(
        servers.flatMap((server) => batch.map((token) => send(server, bearer(token)))),
      )
      for (const answer of answers) expect(answer.status).toBe(401)
    }
  }
  const randomKidTokens = (count: number) =>
    Array.from({ length: count }, () =>
      signWith(
        attackerKey('ec').privateKey,
        'ES256',
        { alg: 'ES256', kid: randomUUID() },
        accessClaims(issuer),
      ),
    )

  it('fetches nothing for tokens of untrusted realms, known to the provider or not', async () => {
    advance(COOLDOWN_MS + 1)
    const tokens = [
      ...Array.from({ length: 100 }, () => genuine({}, 'initech')),
      ...Array.from({ length: 100 }, (_, index) =>
        genuine({ iss: `${issuer.url}/realms/realm-${index}-${randomUUID()}` }),
      ),
    ]
    await flood(tokens)
    expect(issuer.fetchCount('initech')).toBe(0)
    expect(issuer.discoveryCount('initech')).toBe(0)
    expect(issuer.fetchCount('acme')).toBe(0)
  })

  // The back-off over a long flood, and rotation under traffic: test/adapters/rotation.test.ts.
  it('makes one fetch per gate for a burst of unknown kids, then answers the rest at once', async () => {
    advance(COOLDOWN_MS + 1)
    await flood(randomKidTokens(200))
    expect(issuer.fetchCount('acme')).toBeLessThanOrEqual(apps.servers.length)
    issuer.resetCounts()
    await flood(randomKidTokens(200))
    expect(issuer.fetchCount('acme')).toBe(0)
  })

  it('fetches nothing for forged signatures on the trusted kid, or tokens without kid', async () => {
    advance(COOLDOWN_MS + 1)
    const attacker = attackerKey('rsa').privateKey
    await flood([
      ...Array.from({ length: 100 }, () =>
        signWith(attacker, 'RS256', { alg: 'RS256', kid: kids.acme }, accessClaims(issuer)),
      ),
      ...Array.from({ length: 100 }, () =>
        signWith(attacker, 'RS256', { alg: 'RS256' }, accessClaims(issuer)),
      ),
    ])
    expect(issuer.fetchCount('acme')).toBe(0)
  })

  it('shares one fetch among concurrent unknown-kid requests on a cold gate', async () => {
    const gate = createGate(gateOptions())
    const tokens = randomKidTokens(300)
    const results = await Promise.allSettled(
      tokens.map((token) => gate.check({ headers: { authorization: `Bearer ${token}` } })),
    )
    for (const result of results) {
      expect(result).toMatchObject({ status: 'rejected', reason: { code: 'ERR_TOKEN_INVALID' } })
    }
    expect(issuer.fetchCount('acme')).toBe(1)
  })
})
