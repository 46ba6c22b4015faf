/**
 * The development provider with opaque access tokens (`accessTokenFormat: 'opaque'` per
 * resource): a token source gets one, a gate introspects it at the provider's RFC 7662 endpoint
 * (plain and RFC 9701 JWT responses), and tokens of a JWT resource of the same provider are still
 * JWTs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTokenSource } from '../../src/client/index.js'
import { createGate, keycloak } from '../../src/index.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'

describe('createDevProvider with an opaque-token resource', () => {
  let provider: DevProvider
  beforeAll(async () => {
    provider = await createDevProvider({
      users: [{ sub: 'alice' }],
      resources: {
        'urn:example:ledger': {
          audience: 'ledger',
          scopes: ['ledger:read'],
          accessTokenFormat: 'opaque',
        },
        'urn:example:orders': { audience: 'orders', scopes: ['orders:read'] },
      },
      clients: [
        { clientId: 'ledger-job', clientSecret: 'job-secret', tokenClaims: { tenant: 'acme' } },
        { clientId: 'ledger-api', clientSecret: 'api-secret' },
      ],
    })
  })
  afterAll(() => provider?.close())

  async function tokenFor(audience: string, scope: string): Promise<string> {
    const source = createTokenSource({
      issuer: keycloak({ authUrl: provider.url, realm: provider.realm }),
      clientId: 'ledger-job',
      clientSecret: 'job-secret',
      audience,
      scope,
    })
    try {
      return await source.get()
    } finally {
      source.close()
    }
  }

  const gateWith = (jwtResponse: boolean) =>
    createGate({
      issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }).map((entry) => ({
        ...entry,
        introspection: { clientId: 'ledger-api', clientSecret: 'api-secret', jwtResponse },
      })),
      audience: 'ledger',
      onEvent: () => {},
    })

  it('issues opaque access tokens for that resource and JWTs for the others', async () => {
    expect((await tokenFor('ledger', 'ledger:read')).split('.')).toHaveLength(1)
    expect((await tokenFor('orders', 'orders:read')).split('.')).toHaveLength(3)
  })

  it('answers introspection at its Keycloak path, and a gate admits the token with its facts', async () => {
    expect(provider.introspectionEndpoint).toBe(
      `${provider.issuer}/protocol/openid-connect/token/introspect`,
    )
    for (const jwtResponse of [false, true]) {
      const gate = gateWith(jwtResponse)
      const { auth } = await gate.check({
        headers: { authorization: `Bearer ${await tokenFor('ledger', 'ledger:read')}` },
      })
      expect(auth).toMatchObject({
        clientId: 'ledger-job',
        scopes: ['ledger:read'],
        claims: { aud: 'ledger', tenant: 'acme' },
      })
      expect((await gate.ready()).introspection?.[0]).toEqual({
        issuer: provider.issuer,
        endpoint: provider.introspectionEndpoint,
        state: 'ready',
      })
    }
  })

  it('lists the introspection endpoint in its discovery document', async () => {
    const document = (await (
      await fetch(`${provider.issuer}/.well-known/openid-configuration`)
    ).json()) as Record<string, unknown>
    expect(document.introspection_endpoint).toBe(provider.introspectionEndpoint)
  })

  it('revokes an opaque token at /protocol/openid-connect/revoke (RFC 7009): introspection then calls it inactive', async () => {
    const token = await tokenFor('ledger', 'ledger:read')
    const gate = gateWith(false)
    await expect(
      gate.check({ headers: { authorization: `Bearer ${token}` } }),
    ).resolves.toMatchObject({ auth: { clientId: 'ledger-job' } })
    const revoked = await fetch(`${provider.issuer}/protocol/openid-connect/revoke`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('ledger-job:job-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
    })
    expect(revoked.status).toBe(200)
    // A fresh gate: the first one keeps its verdict for a while, as introspection caching does.
    await expect(
      gateWith(false).check({ headers: { authorization: `Bearer ${token}` } }),
    ).rejects.toMatchObject({ status: 401, reason: 'inactive' })
  })

  it('refuses an unknown string as inactive', async () => {
    await expect(
      gateWith(false).check({ headers: { authorization: 'Bearer not-a-token-it-issued' } }),
    ).rejects.toMatchObject({ status: 401, reason: 'inactive' })
  })

  it('refuses accessTokenFormat values other than jwt and opaque', async () => {
    await expect(
      createDevProvider({
        users: [{ sub: 'alice' }],
        resources: { 'urn:example:x': { accessTokenFormat: 'reference' as never } },
        clients: [{ clientId: 'c', clientSecret: 's' }],
      }),
    ).rejects.toThrow('"resources["urn:example:x"].accessTokenFormat" must be')
  })
})
