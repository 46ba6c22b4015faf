import { inspect } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import type { TollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, openGate, Refused } from '../../src/gate/gate.js'
import { requireScopes } from '../../src/gate/guards.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

let issuer: TestIssuer
let base: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({
    realms: ['acme', 'beta'],
    algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'],
    audience: 'gateway',
  })
  base = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'beta'] }),
    audience: 'gateway',
  }
})
afterAll(async () => {
  await issuer.close()
})
afterEach(() => {
  vi.useRealTimers()
  issuer.resetCounts()
})

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'admitted',
    (error: TollgateError) => error.code,
  )

describe('gate.check', () => {
  it.each(['RS256', 'PS256', 'ES256', 'EdDSA'] as const)(
    'admits a valid %s token with its facts',
    async (alg) => {
      const gate = createGate(base)
      const token = await issuer.mint(
        { sub: 'u1', azp: 'ui', scope: 'a b', realm_access: { roles: ['admin'] } },
        { alg },
      )
      const { auth, headers } = await gate.check(bearer(token))
      expect(auth).toMatchObject({
        token,
        issuer: issuer.issuer('acme'),
        realm: 'acme',
        subject: 'u1',
        clientId: 'ui',
        scopes: ['a', 'b'],
        roles: { realm: ['admin'], clients: {} },
        tenant: undefined,
      })
      expect(auth?.header.alg).toBe(alg)
      expect(headers).toEqual({})
    },
  )

  it('reads the client id from client_id when azp is absent', async () => {
    const gate = createGate(base)
    const token = await issuer.mint({ azp: undefined, client_id: 'backend' })
    expect((await gate.check(bearer(token))).auth?.clientId).toBe('backend')
  })

  it('freezes the admission so one request cannot change what another sees', async () => {
    const gate = createGate(base)
    const { auth } = await gate.check(
      bearer(await issuer.mint({ realm_access: { roles: ['user'] } })),
    )
    expect(Object.isFrozen(auth)).toBe(true)
    expect(Object.isFrozen(auth?.claims)).toBe(true)
    expect(Object.isFrozen(auth?.claims.realm_access)).toBe(true)
  })

  it('binds keys to their issuer: realm beta keys never verify a token claiming realm acme', async () => {
    const gate = createGate(base)
    const token = await issuer.mint({ iss: issuer.issuer('acme') }, { realm: 'beta' })
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_INVALID')
  })

  it('refuses issuers outside the allow-list without fetching anything', async () => {
    const gate = createGate(base)
    const token = await issuer.mint({ iss: `${issuer.url}/realms/gamma` })
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_INVALID')
    expect(issuer.fetchCount('acme') + issuer.fetchCount('beta')).toBe(0)
  })

  describe('with one issuer, whose keys are known before the payload is read', () => {
    const acmeOnly = () =>
      createGate({ ...base, issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }) })
    const reasonOf = (promise: Promise<unknown>) =>
      promise.then(
        () => 'admitted',
        (error: TollgateError) => error.reason,
      )

    it('checks the signature before parsing the payload', async () => {
      const [header, , signature] = (await issuer.mint()).split('.')
      const notJson = Buffer.from('{"iss": not json').toString('base64url')
      const gate = acmeOnly()
      // Keys at hand (before they are fetched, the claimed issuer is read first: see below).
      await gate.ready()
      expect(await reasonOf(gate.check(bearer(`${header}.${notJson}.${signature}`)))).toBe(
        'signature',
      )
      // Several issuers: the payload names which keys to try, so it is read first.
      expect(
        await reasonOf(createGate(base).check(bearer(`${header}.${notJson}.${signature}`))),
      ).toBe('malformed')
    })

    it('refuses a token of another issuer as such, without fetching keys for it', async () => {
      const gate = acmeOnly()
      const beta = await issuer.mint({}, { realm: 'beta' })
      expect(await reasonOf(gate.check(bearer(beta)))).toBe('unknown_issuer')
      expect(issuer.fetchCount('acme')).toBe(0)
      await gate.ready()
      expect(await reasonOf(gate.check(bearer(beta)))).toBe('unknown_issuer')
      expect(issuer.fetchCount('acme')).toBe(1)
    })

    it('refuses a backed-off unknown kid without a fetch, for what its payload says', async () => {
      // Only Date is faked: the refetch after the first unknown kid waits its real 500 ms slot.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
      const gate = acmeOnly()
      await gate.ready()
      await gate
        .check(bearer(await issuer.mint({}, { header: { kid: 'unknown-1' } })))
        .catch(() => undefined)
      expect(issuer.fetchCount('acme')).toBe(2)
      // Backed off now (the next refetch is 1 s after the last): refused without a fetch.
      const ours = await issuer.mint({}, { header: { kid: 'unknown-2' } })
      const stranger = await issuer.mint({}, { realm: 'beta', header: { kid: 'unknown-3' } })
      const refusals = [
        (await gate.check(bearer(ours)).catch((error: unknown) => error)) as TollgateError,
        (await gate.check(bearer(stranger)).catch((error: unknown) => error)) as TollgateError,
      ]
      expect(issuer.fetchCount('acme')).toBe(2)
      expect(refusals.map((error) => [error.code, error.status, error.reason])).toEqual([
        ['ERR_TOKEN_INVALID', 401, 'unknown_kid'],
        ['ERR_TOKEN_INVALID', 401, 'unknown_issuer'],
      ])
      expect(refusals[1]?.detail).toEqual({
        unverifiedIss: issuer.issuer('beta'),
        configured: 1,
        expected: [issuer.issuer('acme')],
      })
      expect(Object.getOwnPropertyDescriptor(refusals[1], 'reason')?.value).toBe('unknown_issuer')
    })

    it('reports the reason of a backed-off unknown kid to event listeners as before', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
      const rejected: unknown[] = []
      const gate = createGate({
        ...base,
        issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
        onEvent: (event) => {
          if (event.type === 'rejected') rejected.push([event.reason, event.detail])
        },
      })
      await gate.ready()
      for (const [realm, kid] of [
        ['acme', 'unknown-1'],
        ['acme', 'unknown-2'],
        ['beta', 'unknown-3'],
      ] as const) {
        await gate.check(bearer(await issuer.mint({}, { realm, header: { kid } }))).catch(() => 0)
      }
      expect(issuer.fetchCount('acme')).toBe(2)
      expect(rejected).toEqual([
        ['unknown_kid', undefined],
        ['unknown_kid', undefined],
        [
          'unknown_issuer',
          {
            unverifiedIss: issuer.issuer('beta'),
            configured: 1,
            expected: [issuer.issuer('acme')],
          },
        ],
      ])
    })

    it('shows the settled reason of a backed-off unknown kid to console.log, never a getter', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
      const gate = createGate({
        ...base,
        issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      })
      await gate.ready()
      const refusals: unknown[] = []
      for (const [realm, kid] of [
        ['acme', 'unknown-1'],
        ['beta', 'unknown-2'],
      ] as const) {
        refusals.push(
          await gate
            .check(bearer(await issuer.mint({}, { realm, header: { kid } })))
            .catch((e) => e),
        )
      }
      const shown = refusals.map((refusal) => inspect(refusal))
      for (const text of shown) expect(text).not.toContain('Getter')
      expect(shown[1]).toContain("reason: 'unknown_issuer'")
      expect(JSON.parse(JSON.stringify(refusals[1]))).toMatchObject({ reason: 'unknown_issuer' })
    })

    describe('where nobody reads the reason (an adapter answering, no listener)', () => {
      /** Backs the unknown-kid refetch off, then decides a token of another issuer on the adapters' path. */
      async function decideBackedOff(options: Partial<GateOptions>, adapter?: object) {
        vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
        const { gate, decide } = openGate(
          { ...base, issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), ...options },
          adapter,
        )
        await gate.ready()
        await gate
          .check(bearer(await issuer.mint({}, { header: { kid: 'unknown-1' } })))
          .catch(() => 0)
        const stranger = await issuer.mint({}, { realm: 'beta', header: { kid: 'unknown-2' } })
        const payload = Buffer.from(stranger.split('.')[1] as string, 'base64url').toString()
        const parse = vi.spyOn(JSON, 'parse')
        try {
          const decided = decide(bearer(stranger))
          const parsed = parse.mock.calls.some(([text]) => text === payload)
          return { decided, parsed, stranger, gate }
        } finally {
          parse.mockRestore()
        }
      }

      it('refuses a backed-off unknown kid without reading its payload: the same 401', async () => {
        const { decided, parsed, stranger, gate } = await decideBackedOff({})
        expect(parsed).toBe(false)
        const error = (decided as Refused).error as TollgateError
        expect([error.status, error.code, error.message]).toEqual([
          401,
          'ERR_TOKEN_INVALID',
          'invalid token',
        ])
        expect(error.headers['WWW-Authenticate']).toBe(
          'Bearer realm="api", error="invalid_token", error_description="invalid token"',
        )
        expect(issuer.fetchCount('acme')).toBe(2)
        // gate.check hands the refusal to its caller: the payload is read, the reason is its own.
        expect(await reasonOf(gate.check(bearer(stranger)))).toBe('unknown_issuer')
      })

      it.each([
        ['an event listener', { onEvent: () => undefined }, undefined],
        ["errorHandling: 'framework'", { errorHandling: 'framework' as const }, undefined],
        [
          'an adapter whose refusals reach the application (NestJS)',
          {},
          { refusalsReachApplication: true },
        ],
      ])('reads it with %s, for the reason it gives', async (_, options, adapter) => {
        const { decided, parsed } = await decideBackedOff(options, adapter)
        expect(parsed).toBe(true)
        expect(((decided as Refused).error as TollgateError).reason).toBe('unknown_issuer')
      })
    })

    it('refuses a token its keys signed that claims another issuer', async () => {
      const gate = acmeOnly()
      // Keys at hand, so `iss` is judged after the signature, not before a fetch.
      await gate.ready()
      const token = await issuer.mint({ iss: `${issuer.url}/realms/gamma` }, { realm: 'acme' })
      expect(await reasonOf(gate.check(bearer(token)))).toBe('unknown_issuer')
      expect(issuer.fetchCount('acme')).toBe(1)
      expect(await reasonOf(gate.check(bearer(await issuer.mint())))).toBe('admitted')
    })
  })

  it('accepts any of several configured audiences', async () => {
    const gate = createGate({ ...base, audience: ['office', 'desk'] })
    expect(await codeOf(gate.check(bearer(await issuer.mint({ aud: ['x', 'desk'] }))))).toBe(
      'admitted',
    )
    expect(await codeOf(gate.check(bearer(await issuer.mint({ aud: 'gateway' }))))).toBe(
      'ERR_TOKEN_INVALID',
    )
  })

  it('refuses algorithms outside the configured allow-list', async () => {
    const gate = createGate({ ...base, algorithms: ['ES256'] })
    expect(await codeOf(gate.check(bearer(await issuer.mint({}, { alg: 'RS256' }))))).toBe(
      'ERR_TOKEN_INVALID',
    )
    expect(await codeOf(gate.check(bearer(await issuer.mint({}, { alg: 'ES256' }))))).toBe(
      'admitted',
    )
  })

  it.each([
    ['crit', { crit: ['exp'] }],
    ['b64: false', { b64: false }],
    ['a numeric kid', { kid: 7 }],
    ['an empty kid', { kid: '' }],
    ['an oversized kid', { kid: 'k'.repeat(300) }],
  ])('refuses a header with %s', async (_, header) => {
    const gate = createGate(base)
    const token = await issuer.mint({}, { header })
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_INVALID')
  })

  it('refuses tokens longer than maxTokenBytes before parsing them', async () => {
    const gate = createGate({ ...base, maxTokenBytes: 1024 })
    const token = await issuer.mint({ padding: 'x'.repeat(2000) })
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_INVALID')
  })

  it('refuses a token older than maxTokenAgeSeconds as expired', async () => {
    const gate = createGate({ ...base, maxTokenAgeSeconds: 60 })
    const token = await issuer.mint({ iat: Math.floor(Date.now() / 1000) - 120 })
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_EXPIRED')
  })

  it('answers 401 ERR_TOKEN_MISSING without credentials, and passes with credentialsRequired: false', async () => {
    expect(await codeOf(createGate(base).check({ headers: {} }))).toBe('ERR_TOKEN_MISSING')
    expect(
      await createGate({ ...base, credentialsRequired: false }).check({ headers: {} }),
    ).toEqual({
      auth: undefined,
      headers: {},
    })
  })
})

describe('verified-token cache', () => {
  it('verifies a repeated token once', async () => {
    const gate = createGate(base)
    const token = await issuer.mint()
    const first = await gate.check(bearer(token))
    const second = await gate.check(bearer(token))
    expect(second.auth).toBe(first.auth)
  })

  it('re-checks expiry on every hit', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const gate = createGate({ ...base, clockToleranceSeconds: 0 })
    const token = await issuer.mint({}, { expiresInSeconds: 60 })
    expect(await codeOf(gate.check(bearer(token)))).toBe('admitted')
    vi.advanceTimersByTime(59_000)
    expect(await codeOf(gate.check(bearer(token)))).toBe('admitted')
    vi.advanceTimersByTime(1_000)
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_EXPIRED')
  })

  it('drops a verdict once its signing key leaves the key set', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const gate = createGate({ ...base, jwks: { cooldownMs: 0 } })
    const kid = await issuer.rotate({ alg: 'ES256' })
    const token = await issuer.mint({}, { kid })
    expect(await codeOf(gate.check(bearer(token)))).toBe('admitted')
    issuer.unpublish(kid)
    // Any refresh (here: the unknown kid of another token) learns that the key is gone.
    await gate
      .check(bearer(await issuer.mint({}, { header: { kid: 'unknown' } })))
      .catch(() => undefined)
    expect(await codeOf(gate.check(bearer(token)))).toBe('ERR_TOKEN_INVALID')
  })

  it('keeps verdicts no longer than maxTtlSeconds, then verifies again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const gate = createGate({ ...base, cache: { maxTtlSeconds: 10 } })
    const token = await issuer.mint({}, { expiresInSeconds: 3600 })
    const first = (await gate.check(bearer(token))).auth
    vi.advanceTimersByTime(9_999)
    expect((await gate.check(bearer(token))).auth).toBe(first)
    vi.advanceTimersByTime(1)
    const again = (await gate.check(bearer(token))).auth
    expect(again).not.toBe(first)
    expect(again).toEqual(first)
  })

  it('evicts the least recently used verdict beyond maxEntries', async () => {
    const gate = createGate({ ...base, cache: { maxEntries: 2 } })
    const tokens = await Promise.all([
      issuer.mint({ sub: '1' }),
      issuer.mint({ sub: '2' }),
      issuer.mint({ sub: '3' }),
    ])
    const first = (await gate.check(bearer(tokens[0] as string))).auth
    await gate.check(bearer(tokens[1] as string))
    await gate.check(bearer(tokens[2] as string))
    expect((await gate.check(bearer(tokens[0] as string))).auth).not.toBe(first)
  })

  it('verifies every time with the cache off', async () => {
    const gate = createGate({ ...base, cache: false })
    const token = await issuer.mint()
    const first = await gate.check(bearer(token))
    const second = await gate.check(bearer(token))
    expect(second.auth).not.toBe(first.auth)
    expect(second.auth).toEqual(first.auth)
  })

  it('refuses a repeated forgery every time', async () => {
    const gate = createGate(base)
    const [header, payload] = (await issuer.mint()).split('.')
    const forged = `${header}.${payload}.${(await issuer.mint({ sub: 'x' })).split('.')[2]}`
    for (let index = 0; index < 3; index++) {
      expect(await codeOf(gate.check(bearer(forged)))).toBe('ERR_TOKEN_INVALID')
    }
  })
})

describe('events', () => {
  it('reports accepted and rejected requests, never the token', async () => {
    const events: GateEvent[] = []
    const gate = createGate({ ...base, onEvent: (event) => events.push(event) })
    const token = await issuer.mint({ sub: 'u9', azp: 'ui' })
    const request = { method: 'GET', url: '/api/v1/billing?page=2&access=x' }
    await gate.check({ ...bearer(token), ...request })
    await gate.check({ headers: { 'x-request-id': 'req-7' }, ...request }).catch(() => undefined)
    await gate.check(bearer(await issuer.mint({ aud: 'office' }))).catch(() => undefined)
    const facts = { tenant: undefined, plan: undefined, durationMs: expect.any(Number) }
    expect(events.filter((event) => event.type !== 'jwks_refreshed')).toEqual([
      {
        type: 'accepted',
        issuer: issuer.issuer('acme'),
        subject: 'u9',
        clientId: 'ui',
        method: 'GET',
        path: '/api/v1/billing',
        requestId: undefined,
        ...facts,
      },
      {
        type: 'rejected',
        code: 'ERR_TOKEN_MISSING',
        reason: 'credentials_missing',
        detail: undefined,
        status: 401,
        issuer: undefined,
        method: 'GET',
        path: '/api/v1/billing',
        requestId: 'req-7',
        ...facts,
      },
      {
        type: 'rejected',
        code: 'ERR_TOKEN_INVALID',
        reason: 'audience',
        detail: { aud: 'office', expected: ['gateway'] },
        status: 401,
        issuer: undefined,
        method: undefined,
        path: undefined,
        requestId: undefined,
        ...facts,
      },
    ])
    expect(JSON.stringify(events)).not.toContain(token)
  })

  it('survives a listener that throws', async () => {
    const gate = createGate({
      ...base,
      onEvent: () => {
        throw new Error('metrics down')
      },
    })
    expect(await codeOf(gate.check(bearer(await issuer.mint())))).toBe('admitted')
  })
})

describe('the plan an admission names', () => {
  const windows = [{ points: 100, durationSeconds: 60 }]
  const plans = { free: windows, pro: windows, gold: windows }
  const withPlans = (rateLimit: object, tenant: object) => {
    const events: GateEvent[] = []
    const gate = createGate({
      ...base,
      tenant: { claim: 'org', ...tenant },
      rateLimit: { plans, defaultPlan: 'free', ...rateLimit },
      onEvent: (event) => events.push(event),
    })
    const accepted = () =>
      events.flatMap((event) => (event.type === 'accepted' ? [event.plan] : []))
    return { gate, accepted }
  }

  it.each([
    ['defaultPlan, for a tenant with no plan', {}, {}, 'free'],
    ['defaultPlan, for a plan claim naming no configured plan', {}, { plan: 'platinum' }, 'free'],
    ['the plan claim, when configured', {}, { plan: 'gold' }, 'gold'],
    ['tenantPlans, over the plan claim', { tenantPlans: { acme: 'pro' } }, { plan: 'gold' }, 'pro'],
  ])('is the plan the request is metered on: %s', async (_case, rateLimit, claims, expected) => {
    const { gate, accepted } = withPlans(rateLimit, { planClaim: 'plan' })
    const token = await issuer.mint({ sub: 'u1', org: 'acme', ...claims })
    // Twice: a verified token, then the cached verdict.
    for (let i = 0; i < 2; i++) expect((await gate.check(bearer(token))).auth?.plan).toBe(expected)
    expect(accepted()).toEqual([expected, expected])
  })

  it.each([
    ['the plan a tenant policy gave', {}, 'gold'],
    ['tenantPlans, over the plan a policy gave', { tenantPlans: { acme: 'pro' } }, 'pro'],
  ])('is %s', async (_case, rateLimit, expected) => {
    const policy = () => ({ action: 'admit', plan: 'gold' }) as const
    const { gate, accepted } = withPlans(rateLimit, { policy })
    const { auth } = await gate.check(bearer(await issuer.mint({ sub: 'u1', org: 'acme' })))
    expect(auth?.plan).toBe(expected)
    expect(accepted()).toEqual([expected])
  })
})

describe('gate.ready', () => {
  it('warms every issuer and reports it ready', async () => {
    const gate = createGate(base)
    const report = await gate.ready()
    expect(report.ready).toBe(true)
    expect(report.issuers.map((status) => [status.issuer, status.state])).toEqual([
      [issuer.issuer('acme'), 'fresh'],
      [issuer.issuer('beta'), 'fresh'],
    ])
  })

  it('reports not ready, without rejecting, when an issuer is unreachable', async () => {
    const gate = createGate({
      ...base,
      issuers: [
        ...base.issuers,
        { issuer: 'http://127.0.0.1:1/realms/x', jwksUri: 'http://127.0.0.1:1/certs' },
      ],
    })
    const report = await gate.ready()
    expect(report.ready).toBe(false)
    expect(report.issuers[2]).toMatchObject({ state: 'unavailable', lastFailure: 'network' })
  })
})

describe('gate.refresh', () => {
  it('fetches now whatever the cooldown, for one issuer or all', async () => {
    const gate = createGate(base)
    await gate.ready()
    issuer.resetCounts()
    await gate.refresh(issuer.issuer('beta'))
    expect([issuer.fetchCount('acme'), issuer.fetchCount('beta')]).toEqual([0, 1])
    const report = await gate.refresh()
    expect(report.ready).toBe(true)
    expect([issuer.fetchCount('acme'), issuer.fetchCount('beta')]).toEqual([1, 2])
  })

  it.each([['https://unknown.example/realms/x'], [''], [42]])(
    'refuses %j, which is not a configured issuer, with a TypeError',
    (value) => {
      const gate = createGate(base)
      expect(() => gate.refresh(value as string)).toThrow(TypeError)
    },
  )
})

describe('gate.close', () => {
  it('starts no key fetch after it, and keeps deciding with the keys it holds', async () => {
    const gate = createGate(base)
    const token = await issuer.mint()
    expect(await codeOf(gate.check(bearer(token)))).toBe('admitted')
    await gate.close()
    await gate.close()
    issuer.resetCounts()
    await gate.refresh()
    expect(issuer.fetchCount('acme')).toBe(0)
    expect(await codeOf(gate.check(bearer(await issuer.mint())))).toBe('admitted')
  })
})

describe('gate.authorize', () => {
  it('adds the gate challenge to a guard refusal and reports it', async () => {
    const events: GateEvent[] = []
    const gate = createGate({ ...base, realm: 'shop', onEvent: (event) => events.push(event) })
    const { auth } = await gate.check(bearer(await issuer.mint({ scope: 'openid' })))
    let refusal: unknown
    try {
      gate.authorize(requireScopes('billing:read'), auth, { headers: {}, url: '/billing?x=1' })
    } catch (error) {
      refusal = error
    }
    expect(refusal).toMatchObject({
      code: 'ERR_INSUFFICIENT_SCOPE',
      headers: {
        'WWW-Authenticate':
          'Bearer realm="shop", error="insufficient_scope", error_description="insufficient scope", scope="billing:read"',
      },
    })
    expect(events.at(-1)).toMatchObject({
      type: 'rejected',
      reason: 'insufficient_scope',
      status: 403,
      issuer: issuer.issuer('acme'),
      path: '/billing',
    })
  })

  it('challenges an anonymous request with a bare challenge of its realm', () => {
    const gate = createGate({ ...base, realm: 'shop', credentialsRequired: false })
    expect(() => gate.authorize(requireScopes('a'), undefined)).toThrow(
      expect.objectContaining({
        code: 'ERR_TOKEN_MISSING',
        headers: { 'WWW-Authenticate': 'Bearer realm="shop"' },
      }),
    )
  })

  it('lets a guard failure that is not a refusal reach the application untouched', () => {
    const gate = createGate(base)
    const bug = new Error('guard bug')
    expect(() =>
      gate.authorize(() => {
        throw bug
      }, undefined),
    ).toThrow(bug)
  })
})

describe('decide, the adapters’ step', () => {
  it('answers a refusal known without I/O as a Refused, not a throw or a rejected promise', async () => {
    const { gate, decide } = openGate(base)
    await gate.ready()
    const known = (await issuer.mint()).split('.')
    const forged = `${known[0]}.${known[1]}.${Buffer.alloc(256, 7).toString('base64url')}`
    // No credentials, no JWS, a forgery, the same forgery again (the forged-token memo's answer).
    for (const request of [{ headers: {} }, bearer('not-a-jwt'), bearer(forged), bearer(forged)]) {
      const decided = decide(request)
      expect(decided).toBeInstanceOf(Refused)
      const { error } = decided as Refused
      // The gate's refusal point has run: the challenge is on the error.
      expect((error as TollgateError).headers['WWW-Authenticate']).toMatch(/^Bearer realm=/)
      // gate.check keeps its promise: the same refusal, rejected.
      await expect(gate.check(request)).rejects.toMatchObject({
        code: (error as TollgateError).code,
        reason: (error as TollgateError).reason,
      })
    }
  })

  it('answers a cached token with its result, and keeps rejecting refusals decided after I/O', async () => {
    const { gate, decide } = openGate(base)
    const token = await issuer.mint()
    // Keys not yet fetched: a promise, which rejects for a forgery of a known kid.
    const parts = token.split('.')
    const forged = decide(
      bearer(`${parts[0]}.${parts[1]}.${Buffer.alloc(256, 9).toString('base64url')}`),
    )
    expect(forged).toBeInstanceOf(Promise)
    await expect(forged).rejects.toMatchObject({ code: 'ERR_TOKEN_INVALID', reason: 'signature' })
    await gate.check(bearer(token))
    const hit = decide(bearer(token))
    expect(hit).not.toBeInstanceOf(Promise)
    expect(hit).not.toBeInstanceOf(Refused)
    expect((hit as { auth: { token: string } }).auth.token).toBe(token)
  })
})
