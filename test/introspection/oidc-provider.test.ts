/**
 * Introspection against oidc-provider's real endpoint (RFC 7662, and RFC 9701 JWT responses):
 * opaque access tokens admitted with their facts, the verdict cache, one call per new token
 * however many requests carry it, the call budget against floods, the gate's checks after the
 * answer, client authentication by every method, and 503 (never 401) when the provider cannot
 * answer. Time is Date faked (the provider's and the gate's clocks move together).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto'

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { fromEnv } from '../../src/client/secrets.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type GateOptions, keycloak } from '../../src/index.js'
import type { IntrospectionOptions } from '../../src/introspection/options.js'
import { createDpopKey } from '../../src/testing/index.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'

const { privateKey: apiKey, publicKey: apiPublicKey } = generateKeyPairSync('ec', {
  namedCurve: 'P-256',
})
let provider: RunningProvider
let now = Date.UTC(2031, 0, 1)
const advance = (seconds: number) => {
  now += seconds * 1000
  vi.setSystemTime(now)
}

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'], now })
  provider = await startProvider({
    introspection: true,
    opaqueResources: ['urn:platform:office', 'urn:platform:desk'],
    extraTokenClaims: { tenant: 'acme' },
    clients: [
      {
        client_id: 'job',
        client_secret: 'job-secret',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      },
      // The API itself: a resource server that may only introspect.
      {
        client_id: 'office-api',
        client_secret: 'office-api-secret',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
      {
        client_id: 'office-api-post',
        client_secret: 'office-api-secret',
        token_endpoint_auth_method: 'client_secret_post',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
      {
        client_id: 'office-api-jwt',
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: { keys: [{ ...apiPublicKey.export({ format: 'jwk' }), kid: 'api-1' }] },
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
      // RFC 9701: its introspection responses are JWTs signed by the provider.
      {
        client_id: 'office-api-signed',
        client_secret: 'office-api-secret',
        introspection_signed_response_alg: 'RS256',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
    ],
  })
})
afterAll(async () => {
  vi.useRealTimers()
  await provider.close()
})

/** A client_credentials token of `job` for `resource` (opaque for office and desk). */
async function tokenFor(resource: string, scope = 'office:records:read'): Promise<string> {
  const response = await fetch(provider.tokenEndpoint(), {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('job:job-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }).toString(),
  })
  const body = (await response.json()) as { access_token: string }
  return body.access_token
}

function gateWith(
  introspection: {
    readonly [K in keyof IntrospectionOptions]?: IntrospectionOptions[K] | undefined
  } = {},
  extra: Partial<GateOptions> = {},
) {
  const events: GateEvent[] = []
  const gate = createGate({
    issuers: keycloak({ authUrl: provider.url, realms: ['acme'] }).map((entry) => ({
      ...entry,
      introspection: {
        clientId: 'office-api',
        clientSecret: 'office-api-secret',
        ...introspection,
      } as IntrospectionOptions,
    })),
    audience: 'office',
    onEvent: (event) => events.push(event),
    ...extra,
  })
  return { gate, events }
}

const check = (gate: ReturnType<typeof createGate>, token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } })

const randomToken = () => randomBytes(32).toString('base64url')

describe('opaque access tokens introspected at oidc-provider', () => {
  it('admits an active token with its client, scopes, audience and extra claims, after one call', async () => {
    const { gate } = gateWith()
    const token = await tokenFor('urn:platform:office')
    expect(token.split('.')).toHaveLength(1)
    const before = provider.introspections
    const { auth } = await check(gate, token)
    expect(provider.introspections - before).toBe(1)
    expect(auth).toMatchObject({
      issuer: provider.issuer(),
      realm: 'acme',
      clientId: 'job',
      scopes: ['office:records:read'],
      claims: { aud: 'office', tenant: 'acme', iss: provider.issuer() },
    })
    expect(auth?.token).toBe(token)
    // The answer's own member is not a claim of the token.
    expect(auth?.claims).not.toHaveProperty('active')
  })

  it('answers a repeated token from the verdict cache, without a call', async () => {
    const { gate } = gateWith()
    const token = await tokenFor('urn:platform:office')
    await check(gate, token)
    const before = provider.introspections
    for (let i = 0; i < 5; i++) await check(gate, token)
    expect(provider.introspections).toBe(before)
  })

  it('makes one call for a thousand concurrent requests carrying one new token', async () => {
    const { gate } = gateWith()
    const token = await tokenFor('urn:platform:office')
    const before = provider.introspections
    const results = await Promise.all(Array.from({ length: 1000 }, () => check(gate, token)))
    expect(provider.introspections - before).toBe(1)
    expect(results.every((result) => result.auth?.clientId === 'job')).toBe(true)
  })

  it('refuses a string the provider does not know as inactive (401), and remembers it briefly', async () => {
    const { gate, events } = gateWith()
    const token = randomToken()
    const before = provider.introspections
    await expect(check(gate, token)).rejects.toMatchObject({ status: 401, reason: 'inactive' })
    await expect(check(gate, token)).rejects.toMatchObject({ status: 401, reason: 'inactive' })
    expect(provider.introspections - before).toBe(1)
    advance(6)
    await expect(check(gate, token)).rejects.toMatchObject({ status: 401, reason: 'inactive' })
    expect(provider.introspections - before).toBe(2)
    expect(events.filter((event) => event.type === 'rejected')).toHaveLength(3)
  })

  it('refuses an active token issued for another audience (401 audience)', async () => {
    const { gate } = gateWith()
    const token = await tokenFor('urn:platform:desk', 'desk:tickets:read')
    await expect(check(gate, token)).rejects.toMatchObject({
      status: 401,
      reason: 'audience',
      detail: { aud: 'desk' },
    })
  })

  it('refuses a token revoked at the provider once its verdict is past cache.maxTtlSeconds', async () => {
    const { gate } = gateWith({ cache: { maxTtlSeconds: 30 } })
    const token = await tokenFor('urn:platform:office')
    await check(gate, token)
    const revoked = await fetch(`${provider.issuer()}/protocol/openid-connect/revoke`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('job:job-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token }).toString(),
    })
    expect(revoked.status).toBe(200)
    // Within the bound, the verdict held is used; past it, the provider is asked again.
    advance(29)
    await expect(check(gate, token)).resolves.toBeDefined()
    advance(2)
    await expect(check(gate, token)).rejects.toMatchObject({ status: 401, reason: 'inactive' })
  })

  it('keeps no verdict past the token exp', async () => {
    const { gate } = gateWith({ cache: { maxTtlSeconds: 3600 } })
    const token = await tokenFor('urn:platform:office')
    await check(gate, token)
    advance(301 + 5)
    const before = provider.introspections
    await expect(check(gate, token)).rejects.toMatchObject({ status: 401 })
    expect(provider.introspections - before).toBe(1)
  })

  it('applies tenant resolution, rate limits and revocation after the answer', async () => {
    const { gate } = gateWith(
      {},
      {
        tenant: { claim: 'tenant' },
        rateLimit: { plans: { free: [{ points: 2, durationSeconds: 60 }] }, defaultPlan: 'free' },
        revocation: {},
      },
    )
    const token = await tokenFor('urn:platform:office')
    const { auth } = await check(gate, token)
    expect(auth?.tenant).toBe('acme')
    await check(gate, token)
    await expect(check(gate, token)).rejects.toMatchObject({ status: 429 })
    const other = await tokenFor('urn:platform:office')
    await gate.revoke({ issuer: provider.issuer(), clientId: 'job' })
    await expect(check(gate, other)).rejects.toMatchObject({ status: 401, reason: 'revoked' })
    await gate.close()
  })

  it('admits a DPoP-bound opaque token (cnf.jkt in the answer) with a proof by its key only', async () => {
    const key = await createDpopKey('ES256')
    const other = await createDpopKey('ES256')
    const response = await fetch(provider.tokenEndpoint(), {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('job:job-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        dpop: await key.proof({ method: 'POST', url: provider.tokenEndpoint() }),
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: 'urn:platform:office',
        scope: 'office:records:read',
      }).toString(),
    })
    const body = (await response.json()) as { access_token: string; token_type: string }
    expect(body.token_type).toBe('DPoP')
    const token = body.access_token
    const bearerOnly = gateWith()
    await expect(check(bearerOnly.gate, token)).rejects.toMatchObject({
      status: 401,
      reason: 'sender_constrained',
    })
    const { gate } = gateWith(
      {},
      { dpop: { mode: 'allowed', publicBaseUrl: 'https://api.example' } },
    )
    const request = { method: 'GET', url: 'https://api.example/records' }
    const send = async (signer: typeof key) => {
      const { Authorization, DPoP } = await signer.headers(token, request)
      return gate.check({
        method: 'GET',
        url: '/records',
        headers: { authorization: Authorization, dpop: DPoP },
      })
    }
    const { auth } = await send(key)
    expect(auth?.claims).toMatchObject({ cnf: { jkt: key.jkt }, token_type: 'DPoP' })
    await expect(send(other)).rejects.toMatchObject({ status: 401, reason: 'dpop_binding' })
  })

  it('refuses a token bound to a client other than allowedClientIds', async () => {
    const { gate } = gateWith({}, { allowedClientIds: ['someone-else'] })
    await expect(check(gate, await tokenFor('urn:platform:office'))).rejects.toMatchObject({
      status: 401,
      reason: 'client',
    })
  })
})

describe('client authentication at the introspection endpoint', () => {
  it('authenticates with client_secret_post', async () => {
    const { gate } = gateWith({ clientId: 'office-api-post', clientAuth: 'client_secret_post' })
    await expect(check(gate, await tokenFor('urn:platform:office'))).resolves.toBeDefined()
  })

  it('authenticates with private_key_jwt', async () => {
    const { gate } = gateWith({
      clientId: 'office-api-jwt',
      clientSecret: undefined,
      privateKey: apiKey,
      privateKeyId: 'api-1',
    })
    await expect(check(gate, await tokenFor('urn:platform:office'))).resolves.toBeDefined()
  })

  it("reads the secret through fromEnv('NAME') when a call needs it", async () => {
    vi.stubEnv('OFFICE_API_SECRET', 'office-api-secret')
    try {
      const { gate } = gateWith({ clientSecret: fromEnv('OFFICE_API_SECRET') })
      await expect(check(gate, await tokenFor('urn:platform:office'))).resolves.toBeDefined()
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('answers 503, never 401, when the provider refuses the gate credentials, and says so in an event', async () => {
    const { gate, events } = gateWith({ clientSecret: 'wrong' })
    await expect(check(gate, await tokenFor('urn:platform:office'))).rejects.toMatchObject({
      status: 503,
      code: 'ERR_INTROSPECTION_UNAVAILABLE',
    })
    const failed = events.find((event) => event.type === 'introspection_failed')
    expect(failed).toMatchObject({ reason: 'status', status: 401, issuer: provider.issuer() })
    expect(JSON.stringify(events)).not.toContain('wrong')
  })

  it('asks for, verifies and accepts RFC 9701 JWT responses', async () => {
    const { gate } = gateWith({ clientId: 'office-api-signed', jwtResponse: true })
    const { auth } = await check(gate, await tokenFor('urn:platform:office'))
    expect(auth?.clientId).toBe('job')
  })

  it('answers 503 when jwtResponse is asked for and an answer comes as plain JSON (a downgrade)', async () => {
    const { gate, events } = gateWith({ jwtResponse: true })
    const token = await tokenFor('urn:platform:office')
    provider.interceptIntrospection({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        active: true,
        iss: provider.issuer(),
        aud: 'office',
        client_id: 'job',
        exp: Math.floor(Date.now() / 1000) + 60,
      }),
    })
    try {
      await expect(check(gate, token)).rejects.toMatchObject({ status: 503 })
    } finally {
      provider.interceptIntrospection(undefined)
    }
    expect(events.find((event) => event.type === 'introspection_failed')).toMatchObject({
      reason: 'invalid_response',
    })
  })
})

describe('floods and outages', () => {
  it('calls the provider at most the unreserved half of budget.calls for a flood of random strings, then answers 503 with Retry-After and an event', async () => {
    const { gate, events } = gateWith({ budget: { calls: 6, perSeconds: 3600 } })
    const before = provider.introspections
    const answers = await Promise.allSettled(
      Array.from({ length: 40 }, () => check(gate, randomToken())),
    )
    expect(provider.introspections - before).toBe(3)
    const refusals = answers.map((answer) =>
      answer.status === 'rejected'
        ? (answer.reason as { reason: string; status: number; headers: Record<string, string> })
        : undefined,
    )
    expect(refusals.filter((refusal) => refusal?.reason === 'inactive')).toHaveLength(3)
    const busy = refusals.filter((refusal) => refusal?.reason === 'introspection_budget')
    expect(busy).toHaveLength(37)
    for (const refusal of busy) {
      expect(refusal).toMatchObject({
        status: 503,
        code: 'ERR_INTROSPECTION_BUSY',
        headers: { 'Retry-After': '1200' },
      })
    }
    expect(answers.every((answer) => answer.status === 'rejected')).toBe(true)
    expect(events.filter((event) => event.type === 'introspection_budget_exhausted')).toEqual([
      {
        type: 'introspection_budget_exhausted',
        issuer: provider.issuer(),
        calls: 6,
        perSeconds: 3600,
      },
    ])
  })

  it('still admits a cached token while the budget is spent', async () => {
    const { gate } = gateWith({ budget: { calls: 1, perSeconds: 3600 } })
    const token = await tokenFor('urn:platform:office')
    await check(gate, token)
    await expect(check(gate, randomToken())).rejects.toMatchObject({
      status: 503,
      reason: 'introspection_budget',
    })
    await expect(check(gate, token)).resolves.toBeDefined()
  })

  it('answers 503 with Retry-After while the provider is down, and reports it in ready()', async () => {
    const { gate, events } = gateWith()
    const token = await tokenFor('urn:platform:office')
    expect((await gate.ready()).introspection).toEqual([
      {
        issuer: provider.issuer(),
        endpoint: `${provider.issuer()}/protocol/openid-connect/token/introspect`,
        state: 'ready',
      },
    ])
    await provider.stop()
    try {
      await expect(check(gate, token)).rejects.toMatchObject({
        status: 503,
        headers: { 'Retry-After': '5' },
      })
      expect(events.find((event) => event.type === 'introspection_failed')).toMatchObject({
        reason: 'network',
      })
      const report = await gate.ready()
      expect(report.ready).toBe(false)
      expect(report.introspection?.[0]?.state).toBe('unavailable')
    } finally {
      await provider.start()
    }
    expect((await gate.ready()).ready).toBe(true)
    await expect(check(gate, token)).resolves.toBeDefined()
  })

  it('answers 503 when the provider answers 500', async () => {
    const { gate } = gateWith()
    provider.interceptIntrospection({ status: 500, body: 'oops' })
    try {
      await expect(check(gate, randomToken())).rejects.toMatchObject({ status: 503 })
    } finally {
      provider.interceptIntrospection(undefined)
    }
  })

  it('answers 503 after timeoutMs when the provider never answers, and shares that answer with requests waiting for the same token', async () => {
    const { gate, events } = gateWith({ timeoutMs: 300 })
    provider.interceptIntrospection('hang')
    try {
      const token = randomToken()
      const answers = await Promise.allSettled([check(gate, token), check(gate, token)])
      for (const answer of answers) {
        expect(answer.status).toBe('rejected')
        expect((answer as PromiseRejectedResult).reason).toMatchObject({ status: 503 })
      }
      expect(events.find((event) => event.type === 'introspection_failed')).toMatchObject({
        reason: 'timeout',
      })
    } finally {
      provider.interceptIntrospection(undefined)
    }
  })
})

describe('where the endpoint comes from, and jwt-then-introspection', () => {
  it('finds the endpoint in the discovery document and reports it in ready()', async () => {
    const gate = createGate({
      issuers: [
        {
          issuer: provider.issuer(),
          discovery: true,
          introspection: { clientId: 'office-api', clientSecret: 'office-api-secret' },
        },
      ],
      audience: 'office',
      onEvent: () => {},
    })
    const report = await gate.ready()
    expect(report.introspection?.[0]?.endpoint).toBe(
      `${provider.issuer()}/protocol/openid-connect/token/introspect`,
    )
    await expect(check(gate, await tokenFor('urn:platform:office'))).resolves.toBeDefined()
  })

  it('verifies the issuer JWTs locally without a call, and introspects its opaque tokens', async () => {
    const { gate } = gateWith(
      { mode: 'jwt-then-introspection' },
      { audience: ['office', 'gateway'] },
    )
    const jwt = await tokenFor('urn:platform:gateway', 'billing:read')
    expect(jwt.split('.')).toHaveLength(3)
    const before = provider.introspections
    const { auth } = await check(gate, jwt)
    expect(auth?.header.alg).toBe('RS256')
    expect(provider.introspections).toBe(before)
    await check(gate, await tokenFor('urn:platform:office'))
    expect(provider.introspections - before).toBe(1)
  })

  it('refuses a JWT of its issuer that fails a claim check, without a call (jwt-then-introspection)', async () => {
    const { gate } = gateWith({ mode: 'jwt-then-introspection' })
    const jwt = await tokenFor('urn:platform:gateway', 'billing:read')
    const before = provider.introspections
    await expect(check(gate, jwt)).rejects.toMatchObject({ status: 401, reason: 'audience' })
    expect(provider.introspections).toBe(before)
  })

  it('introspects a JWT naming the issuer that its keys do not verify (jwt-then-introspection)', async () => {
    const { gate } = gateWith({ mode: 'jwt-then-introspection' })
    const jwt = await tokenFor('urn:platform:gateway', 'billing:read')
    const [header, payload] = jwt.split('.')
    const forged = `${header}.${payload}.${randomBytes(256).toString('base64url')}`
    const before = provider.introspections
    // oidc-provider refuses to introspect a JWT (invalid_request): no trustworthy answer, 503.
    await expect(check(gate, forged)).rejects.toMatchObject({ status: 503 })
    expect(provider.introspections - before).toBe(1)
  })
})
