/**
 * `createTokenExchange()` against the development provider's token-exchange grant: a user's
 * gateway token traded for an office token with `act`, cached per subject, target and scope, one
 * request per key, never served past the subject token's `exp`, and the provider's refusals as
 * typed errors with its `error` and `error_description`.
 */
import { exportJWK, generateKeyPair } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createTokenExchange,
  createTokenSource,
  type TokenExchangeEvent,
  type TokenExchangeOptions,
} from '../../src/client/index.js'
import { createGate, keycloak } from '../../src/index.js'
import { auth0, entra, okta } from '../../src/providers/index.js'
import { createTestIssuer, type DevProvider } from '../../src/testing/index.js'
import {
  claimsOf,
  DESK,
  GATEWAY,
  GATEWAY_CLIENT,
  JOB,
  OFFICE,
  OFFICE_CLIENT,
  PULSE,
  REPORTS,
  startExchangeProvider,
  userToken,
} from '../helpers/exchange.js'
import { startRedisServer } from '../helpers/redis.js'

describe('createTokenExchange', () => {
  let provider: DevProvider
  let aliceGateway: string
  const exchanges: string[] = []

  const countingFetch: typeof fetch = async (input, init) => {
    const body = new URLSearchParams(String(init?.body ?? ''))
    exchanges.push(body.get('grant_type') ?? '')
    return fetch(input, init)
  }

  beforeAll(async () => {
    provider = await startExchangeProvider()
    aliceGateway = await userToken(provider)
  })
  afterAll(() => provider?.close())

  const exchangerFor = (
    client: { clientId: string; clientSecret: string },
    more: Partial<TokenExchangeOptions> = {},
  ) =>
    createTokenExchange({
      issuer: keycloak({ authUrl: provider.url, realm: provider.realm }),
      ...client,
      fetch: countingFetch,
      ...more,
    })

  it('trades the user’s gateway token for an office token naming the user and the gateway as actor, admitted at the office', async () => {
    const exchanger = exchangerFor(GATEWAY_CLIENT)
    const token = await exchanger.exchange(aliceGateway, {
      audience: 'office',
      scope: 'office:records:read',
    })
    expect(claimsOf(token)).toMatchObject({
      sub: 'alice',
      aud: 'office',
      scope: 'office:records:read',
      client_id: 'gateway',
      act: { sub: 'gateway' },
      tenant: 'acme',
    })
    expect((claimsOf(token)['exp'] as number) <= (claimsOf(aliceGateway)['exp'] as number)).toBe(
      true,
    )
    const office = createGate({
      issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
      audience: 'office',
    })
    const { auth } = await office.check({ headers: { authorization: `Bearer ${token}` } })
    expect(auth?.subject).toBe('alice')
  })

  it('authenticates with private_key_jwt as the token source does', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = { ...(await exportJWK(publicKey)), kid: 'gateway-key-1', alg: 'ES256', use: 'sig' }
    const keyed = await startExchangeProvider({
      clients: [
        {
          clientId: 'gateway-keyed',
          jwks: { keys: [jwk] },
          scopes: ['office:records:read'],
          exchange: { from: [GATEWAY], to: [OFFICE] },
        },
      ],
    })
    try {
      const subject = await keyed.accessTokenFor('alice', {
        clientId: 'billing-web',
        resource: GATEWAY,
      })
      const exchanger = createTokenExchange({
        issuer: keycloak({ authUrl: keyed.url, realm: keyed.realm }),
        clientId: 'gateway-keyed',
        privateKey,
        privateKeyId: 'gateway-key-1',
      })
      const token = await exchanger.exchange(subject, 'office')
      expect(claimsOf(token)).toMatchObject({
        sub: 'alice',
        client_id: 'gateway-keyed',
        act: { sub: 'gateway-keyed' },
      })
    } finally {
      await keyed.close()
    }
  })

  it('reads the profile from the issuer: Keycloak sends a string target as audience, rfc8693 as resource', async () => {
    expect(exchangerFor(GATEWAY_CLIENT).profile).toBe('keycloak')
    const rfc = exchangerFor(GATEWAY_CLIENT, { profile: 'rfc8693' })
    const token = await rfc.exchange(aliceGateway, OFFICE)
    expect(claimsOf(token)).toMatchObject({ aud: 'office', act: { sub: 'gateway' } })
    const keycloakShaped = await exchangerFor(GATEWAY_CLIENT).exchange(aliceGateway, 'office')
    expect(claimsOf(keycloakShaped)['aud']).toBe('office')
  })

  it('answers from the cache per subject token, target and scope, with one request in flight per key', async () => {
    const exchanger = exchangerFor(GATEWAY_CLIENT)
    const before = exchanges.length
    const target = { audience: 'office', scope: 'office:records:read' }
    const tokens = await Promise.all(
      Array.from({ length: 20 }, () => exchanger.exchange(aliceGateway, target)),
    )
    expect(new Set(tokens).size).toBe(1)
    expect(exchanges.length - before).toBe(1)
    // Same key, later: the cache; the scope given as an array in another order is the same key.
    await exchanger.exchange(aliceGateway, { audience: 'office', scope: ['office:records:read'] })
    expect(exchanges.length - before).toBe(1)
    // Another scope, another key; another subject token, another key.
    await exchanger.exchange(aliceGateway, { audience: 'office' })
    const bobGateway = await userToken(provider, { user: 'bob' })
    const bobs = await exchanger.exchange(bobGateway, target)
    expect(claimsOf(bobs)['sub']).toBe('bob')
    expect(exchanges.filter((grant) => grant.endsWith('token-exchange')).length - before).toBe(3)
  })

  it('holds at most maxEntries exchanged tokens: a new key pushes the oldest out', async () => {
    const exchanger = exchangerFor(GATEWAY_CLIENT, { maxEntries: 1 })
    const bobGateway = await userToken(provider, { user: 'bob' })
    const before = exchanges.length
    await exchanger.exchange(aliceGateway, 'office')
    await exchanger.exchange(aliceGateway, 'office')
    expect(exchanges.length - before).toBe(1)
    await exchanger.exchange(bobGateway, 'office')
    await exchanger.exchange(aliceGateway, 'office')
    expect(exchanges.length - before).toBe(3)
  })

  it('never serves an exchanged token past the subject token’s exp, and never sends an expired subject token', async () => {
    let now = Date.now()
    const exchanger = exchangerFor(GATEWAY_CLIENT, { clock: { now: () => now } })
    const subjectExp = claimsOf(aliceGateway)['exp'] as number
    const before = exchanges.length
    await exchanger.exchange(aliceGateway, 'office')
    expect(exchanges.length - before).toBe(1)
    now = subjectExp * 1000
    await expect(exchanger.exchange(aliceGateway, 'office')).rejects.toMatchObject({
      name: 'TokenSourceError',
      code: 'ERR_SUBJECT_TOKEN_REFUSED',
      retryable: false,
    })
    expect(exchanges.length - before).toBe(1)
  })

  it('turns the provider’s refusals into typed errors carrying its error and error_description', async () => {
    const gateway = exchangerFor(GATEWAY_CLIENT)
    // A product the gateway may not exchange for.
    const target = await gateway.exchange(aliceGateway, 'desk').catch((error: unknown) => error)
    expect(target).toMatchObject({
      code: 'ERR_TOKEN_REQUEST_REFUSED',
      oauthError: 'invalid_target',
      oauthErrorDescription: 'this client may not exchange tokens for that product',
      retryable: false,
    })
    // A client without an exchange policy.
    const job = await exchangerFor(JOB)
      .exchange(aliceGateway, 'office')
      .catch((error: unknown) => error)
    expect(job).toMatchObject({ code: 'ERR_CLIENT_REFUSED', oauthError: 'unauthorized_client' })
    // A subject token for another audience: the office may exchange office tokens only.
    const foreign = await exchangerFor(OFFICE_CLIENT)
      .exchange(aliceGateway, 'desk')
      .catch((error: unknown) => error)
    expect(foreign).toMatchObject({
      code: 'ERR_SUBJECT_TOKEN_REFUSED',
      oauthError: 'invalid_grant',
      oauthErrorDescription:
        'the subject token is not for a product whose tokens this client may exchange',
    })
    // A scope the target does not have.
    await expect(
      gateway.exchange(aliceGateway, { audience: 'office', scope: 'pulse:read' }),
    ).rejects.toMatchObject({ oauthError: 'invalid_scope' })
    // Nothing about the token in the messages.
    for (const error of [target, job, foreign]) {
      expect(String((error as Error).message)).not.toContain(aliceGateway.slice(-20))
    }
    expect(PULSE).toBeDefined()
  })

  it('nests the chain: the office exchanging the gateway’s exchanged token for the desk yields act { office, act { gateway } }', async () => {
    const office = await exchangerFor(GATEWAY_CLIENT).exchange(aliceGateway, {
      resource: OFFICE,
    })
    const desk = await exchangerFor(OFFICE_CLIENT).exchange(office, { resource: DESK })
    expect(claimsOf(desk)).toMatchObject({
      sub: 'alice',
      aud: 'desk',
      act: { sub: 'office', act: { sub: 'gateway' } },
    })
  })

  it('retries an unavailable provider with the token source’s policy, and does not retry a refusal', async () => {
    let calls = 0
    const flaky: typeof fetch = async (input, init) => {
      calls++
      if (calls === 1) return new Response('', { status: 503 })
      return fetch(input, init)
    }
    const exchanger = exchangerFor(GATEWAY_CLIENT, {
      fetch: flaky,
      retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    })
    const token = await exchanger
      .exchange(aliceGateway, { audience: 'office', scope: 'office:records:write' })
      .catch((e) => e)
    expect(token).toMatchObject({ code: 'ERR_TOKEN_REQUEST_REFUSED', oauthError: 'invalid_scope' })
    expect(calls).toBe(2)
    calls = 1
    const refused = await exchanger.exchange(aliceGateway, 'desk').catch((error: unknown) => error)
    expect(refused).toMatchObject({ oauthError: 'invalid_target' })
    expect(calls).toBe(2)
  })

  it('reports exchanges for audit: the user, the target, retries, the outcome, never a token', async () => {
    const events: TokenExchangeEvent[] = []
    let calls = 0
    const exchanger = exchangerFor(GATEWAY_CLIENT, {
      onEvent: (event) => events.push(event),
      retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
      fetch: async (input, init) => {
        calls++
        return calls === 1 ? new Response('', { status: 503 }) : fetch(input, init)
      },
    })
    const token = await exchanger.exchange(aliceGateway, {
      audience: 'office',
      scope: 'office:records:read',
    })
    await exchanger.exchange(aliceGateway, { audience: 'office', scope: 'office:records:read' })
    expect(events.map((event) => event.type)).toEqual([
      'exchange_requested',
      'exchange_failed',
      'exchange_requested',
      'token_exchanged',
    ])
    expect(events[3]).toMatchObject({
      issuer: provider.issuer,
      clientId: 'gateway',
      grant: 'token_exchange',
      subject: 'alice',
      audience: 'office',
      scope: 'office:records:read',
      from: 'provider',
    })
    expect(events[1]).toMatchObject({ code: 'ERR_TOKEN_ENDPOINT_UNAVAILABLE', willRetry: true })
    // The failure itself is an Error: what it says is checked in the refusal tests.
    const printed = JSON.stringify(events.map((event) => ({ ...event, error: undefined })))
    expect(printed).not.toContain(token.slice(-16))
    expect(printed).not.toContain(aliceGateway.slice(-16))
  })

  it('speaks Entra’s on-behalf-of shape: the jwt-bearer grant with requested_token_use=on_behalf_of and a .default scope', async () => {
    const sent: URLSearchParams[] = []
    const exchanger = exchangerFor(GATEWAY_CLIENT, {
      profile: 'entra',
      fetch: async (input, init) => {
        sent.push(new URLSearchParams(String(init?.body ?? '')))
        return fetch(input, init)
      },
    })
    const token = await exchanger.exchange(aliceGateway, OFFICE)
    expect(sent[0]?.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer')
    expect(sent[0]?.get('requested_token_use')).toBe('on_behalf_of')
    expect(sent[0]?.get('scope')).toBe(`${OFFICE}/.default`)
    expect(sent[0]?.has('subject_token')).toBe(false)
    expect(claimsOf(token)).toMatchObject({ sub: 'alice', aud: 'office', act: { sub: 'gateway' } })
  })

  it('shares exchanged tokens through the token source’s Redis cache: a second instance asks nobody', async () => {
    const redis = await startRedisServer()
    try {
      const client = await redis.client()
      const first = exchangerFor(GATEWAY_CLIENT, { sharedCache: { redis: client } })
      const second = exchangerFor(GATEWAY_CLIENT, { sharedCache: { redis: client } })
      const before = exchanges.length
      const token = await first.exchange(aliceGateway, {
        audience: 'office',
        scope: 'office:records:read',
      })
      // The write goes out after the answer; give it its round trip.
      await client.ping()
      expect(
        await second.exchange(aliceGateway, { audience: 'office', scope: 'office:records:read' }),
      ).toBe(token)
      expect(exchanges.length - before).toBe(1)
      const keys = await client.keys('*')
      expect(keys.every((key) => key.startsWith('tollgate:exchange:{'))).toBe(true)
      expect(keys.join(' ')).not.toContain('alice')
      client.disconnect()
    } finally {
      await redis.stop()
    }
  })

  it.each([
    [
      'a client the provider refuses for that product (invalid_target)',
      REPORTS,
      'ERR_TOKEN_REQUEST_REFUSED',
      'invalid_target',
    ],
    [
      'a client that may not exchange at all (unauthorized_client)',
      JOB,
      'ERR_CLIENT_REFUSED',
      'unauthorized_client',
    ],
  ])(
    'attack: two services on one Redis: %s never receives the office token the gateway obtained for the same user (RFC 8693 §5)',
    async (_name, other, code, oauthError) => {
      const redis = await startRedisServer()
      try {
        const client = await redis.client()
        const gateway = exchangerFor(GATEWAY_CLIENT, { sharedCache: { redis: client } })
        const intruder = exchangerFor(other, { sharedCache: { redis: client } })
        const target = { audience: 'office', scope: 'office:records:read' }
        const office = await gateway.exchange(aliceGateway, target)
        expect(claimsOf(office)).toMatchObject({ aud: 'office', act: { sub: 'gateway' } })
        // The write goes out after the answer; give it its round trip.
        await client.ping()
        expect(await client.keys('tollgate:exchange:{*}')).toHaveLength(1)
        const before = exchanges.length
        await expect(intruder.exchange(aliceGateway, target)).rejects.toMatchObject({
          code,
          oauthError,
          clientId: other.clientId,
        })
        // It asked the provider itself, which refused it: nothing was read from the gateway's entry.
        expect(exchanges.length - before).toBe(1)
        client.disconnect()
      } finally {
        await redis.stop()
      }
    },
  )

  it('attack: two gateways on one Redis: auth.tokenFor() of a service the provider refuses for the office never returns the office token the other obtained for the same request token', async () => {
    const redis = await startRedisServer()
    try {
      const client = await redis.client()
      const gateFor = (exchanger: ReturnType<typeof exchangerFor>) =>
        createGate({
          issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
          audience: 'gateway',
          delegation: { exchange: exchanger },
        })
      const gateway = gateFor(exchangerFor(GATEWAY_CLIENT, { sharedCache: { redis: client } }))
      const reports = gateFor(exchangerFor(REPORTS, { sharedCache: { redis: client } }))
      const request = { headers: { authorization: `Bearer ${aliceGateway}` } }
      const office = await (await gateway.check(request)).auth?.tokenFor('office')
      expect(claimsOf(office ?? '')).toMatchObject({ aud: 'office', act: { sub: 'gateway' } })
      await client.ping()
      const { auth } = await reports.check(request)
      await expect(auth?.tokenFor('office')).rejects.toMatchObject({
        code: 'ERR_TOKEN_REQUEST_REFUSED',
        oauthError: 'invalid_target',
        clientId: REPORTS.clientId,
      })
      client.disconnect()
    } finally {
      await redis.stop()
    }
  })

  it('attack: the exchanged office token replayed at a third product (pulse) and back at the gateway is refused', async () => {
    const office = await exchangerFor(GATEWAY_CLIENT).exchange(aliceGateway, 'office')
    const gateFor = (audience: string) =>
      createGate({
        issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
        audience,
      })
    const present = (audience: string) =>
      gateFor(audience).check({ headers: { authorization: `Bearer ${office}` } })
    await expect(present('pulse')).rejects.toMatchObject({ status: 401, reason: 'audience' })
    await expect(present('gateway')).rejects.toMatchObject({ status: 401, reason: 'audience' })
    await expect(present('office')).resolves.toMatchObject({ auth: { subject: 'alice' } })
  })

  it('admits a service’s own Client Credentials token with auth.actor undefined: no actor means no one acts, not that a user is present; its sub is its client (RFC 9068 §2.2)', async () => {
    const office = createGate({
      issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
      audience: 'office',
    })
    const admit = async (token: string) =>
      (await office.check({ headers: { authorization: `Bearer ${token}` } })).auth
    const job = createTokenSource({
      issuer: keycloak({ authUrl: provider.url, realm: provider.realm }),
      ...JOB,
      resource: OFFICE,
      scope: 'office:records:read',
    })
    try {
      const service = await admit(await job.get())
      expect(service).toMatchObject({
        actor: undefined,
        subject: JOB.clientId,
        clientId: JOB.clientId,
      })
    } finally {
      job.close()
    }
    const user = await admit(
      await provider.accessTokenFor('alice', { clientId: 'billing-web', resource: OFFICE }),
    )
    expect(user).toMatchObject({ actor: undefined, subject: 'alice', clientId: 'billing-web' })
    const exchanged = await admit(
      await exchangerFor(GATEWAY_CLIENT).exchange(aliceGateway, 'office'),
    )
    expect(exchanged).toMatchObject({ subject: 'alice', actor: { subject: 'gateway' } })

    // Keycloak names the client's service-account user instead, as the test issuer mints it.
    const keycloakShaped = await createTestIssuer({
      realms: ['acme'],
      audience: 'office',
      clients: [{ ...JOB, scope: 'office:records:read' }],
    })
    try {
      const source = createTokenSource({
        issuer: keycloak({ authUrl: keycloakShaped.url, realm: 'acme' }),
        ...JOB,
      })
      const gate = createGate({
        issuers: keycloak({ authUrl: keycloakShaped.url, realms: ['acme'] }),
        audience: 'office',
      })
      const { auth } = await gate.check({
        headers: { authorization: `Bearer ${await source.get()}` },
      })
      source.close()
      expect(auth).toMatchObject({
        actor: undefined,
        subject: `service-account-${JOB.clientId}`,
        clientId: JOB.clientId,
        claims: { preferred_username: `service-account-${JOB.clientId}` },
      })
    } finally {
      await keycloakShaped.close()
    }
  })

  it('accessTokenFor() gives a user’s token as a sign-in would, refusing what the client may not ask for', async () => {
    const token = await provider.accessTokenFor('bob', {
      clientId: 'billing-web',
      resource: GATEWAY,
    })
    expect(claimsOf(token)).toMatchObject({
      iss: provider.issuer,
      sub: 'bob',
      aud: 'gateway',
      client_id: 'billing-web',
      scope: 'billing:read',
      tenant: 'globex',
    })
    const office = await exchangerFor(GATEWAY_CLIENT).exchange(token, 'office')
    expect(claimsOf(office)).toMatchObject({ sub: 'bob', aud: 'office', act: { sub: 'gateway' } })
    await expect(
      provider.accessTokenFor('bob', { clientId: 'billing-web', resource: DESK }),
    ).rejects.toThrow(TypeError)
    await expect(
      provider.accessTokenFor('mallory', { clientId: 'billing-web', resource: GATEWAY }),
    ).rejects.toThrow('"mallory" is not a configured user')
  })

  it('reads the profile from the provider helpers’ issuers: entra(), okta(), auth0(), keycloak()', () => {
    const make = (
      issuer: TokenExchangeOptions['issuer'],
      extra: Partial<TokenExchangeOptions> = {},
    ) =>
      createTokenExchange({
        issuer,
        discovery: true,
        clientId: 'gateway',
        clientSecret: 's',
        ...extra,
      })
    expect(
      make(entra({ tenant: '72f988bf-86f1-41af-91ab-2d7cd011db47', audience: 'api://gateway' }))
        .profile,
    ).toBe('entra')
    expect(make(okta({ domain: 'acme.okta.com' })).profile).toBe('okta')
    expect(
      make(auth0({ domain: 'acme.eu.auth0.com', audience: 'https://gateway.example.com' }), {
        subjectTokenType: 'urn:acme:gateway-token',
      }).profile,
    ).toBe('auth0')
    expect(make(keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' })).profile).toBe(
      'keycloak',
    )
    expect(make('https://idp.example.com/').profile).toBe('rfc8693')
    expect(make('https://idp.example.com/', { profile: 'okta' }).profile).toBe('okta')
  })

  it('validates its options and targets with messages that name what to change', () => {
    expect(() =>
      createTokenExchange({
        issuer: 'https://tenant.auth0.com/',
        tokenEndpoint: 'https://tenant.auth0.com/oauth/token',
        clientId: 'gateway',
        clientSecret: 's',
      }),
    ).toThrow(/createTokenExchange\(options\): "subjectTokenType" is required with Auth0/)
    expect(() =>
      createTokenExchange({
        issuer: 'https://sso.example.com/realms/acme',
        clientId: 'gateway',
        clientSecret: 's',
        refreshToken: 'r',
      } as TokenExchangeOptions),
    ).toThrow(/"refreshToken" is not an option/)
    const exchanger = exchangerFor(GATEWAY_CLIENT)
    return expect(exchanger.exchange(aliceGateway, {})).rejects.toThrow(
      /exchange\(subjectToken, target\): "target" must name a "resource", an "audience" or a "scope"/,
    )
  })
})
