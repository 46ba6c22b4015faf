import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { InvalidTokenError } from '../../src/errors.js'
import { createGate } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

describe('keycloak()', () => {
  it('builds one issuer per realm with Keycloak’s paths', () => {
    expect(keycloak({ authUrl: 'https://sso.example.com/', realms: ['acme', 'globex'] })).toEqual([
      {
        issuer: 'https://sso.example.com/realms/acme',
        jwksUri: 'https://sso.example.com/realms/acme/protocol/openid-connect/certs',
        realm: 'acme',
      },
      {
        issuer: 'https://sso.example.com/realms/globex',
        jwksUri: 'https://sso.example.com/realms/globex/protocol/openid-connect/certs',
        realm: 'globex',
      },
    ])
  })

  it('takes one realm as realm, the same as realms with one name', () => {
    expect(keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' })).toEqual(
      keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] }),
    )
  })

  it.each<[string, unknown, RegExp]>([
    ['realm and realms', { authUrl: 'https://a.example', realm: 'a', realms: ['b'] }, /not both/],
    ['neither realm nor realms', { authUrl: 'https://a.example' }, /"realms" must be a non-empty/],
    [
      'a realm with a slash',
      { authUrl: 'https://a.example', realm: 'a/b' },
      /"realm" must be a realm name/,
    ],
    [
      'an empty realm list',
      { authUrl: 'https://a.example', realms: [] },
      /"realms" must be a non-empty/,
    ],
    ['a relative authUrl', { authUrl: '/sso', realm: 'a' }, /"authUrl" must be an absolute/],
    ['an authUrl with a query', { authUrl: 'https://a.example/?x=1', realm: 'a' }, /without query/],
  ])('refuses %s', (_case, options, message) => {
    expect(() => keycloak(options as never)).toThrow(message)
  })

  it.each<[string, string, string]>([
    ['the realm', 'https://sso/realms/acme', 'https://sso'],
    ['the realm and a slash', 'https://sso.example.com/realms/acme/', 'https://sso.example.com'],
    ['/realms only', 'https://sso.example.com/realms', 'https://sso.example.com'],
    [
      'a legacy /auth base and the realm',
      'https://sso.example.com/auth/realms/acme',
      'https://sso.example.com/auth',
    ],
  ])(
    'refuses an authUrl that already names %s, showing it and the base to give instead',
    (_case, authUrl, base) => {
      expect(() => keycloak({ authUrl, realms: ['acme'] })).toThrow(
        new TypeError(
          `keycloak(options): "authUrl" must be the server's base address, without /realms/…: got "${authUrl}"; give authUrl "${base}" and the realm names in "realms"`,
        ),
      )
    },
  )

  it('shows no credentials of an authUrl it refuses', () => {
    expect(() =>
      keycloak({ authUrl: 'https://admin:s3cret-value@sso/realms/acme', realm: 'acme' }),
    ).toThrow(/got "https:\/\/sso\/realms\/acme"/)
    expect(() =>
      keycloak({ authUrl: 'https://admin:s3cret-value@sso/realms/acme', realm: 'acme' }),
    ).not.toThrow(/s3cret/)
  })

  it('quotes the authUrl or realm it refuses, without credentials or query', () => {
    expect(() => keycloak({ authUrl: 'sso.example', realms: ['acme'] })).toThrow(
      /"authUrl" must be an absolute http\(s\) URL \(got 'sso\.example'\)$/,
    )
    expect(() =>
      keycloak({ authUrl: 'https://ops:hunter2@sso.example/?x=1', realms: ['a'] }),
    ).toThrow(/without query or fragment \(got 'https:\/\/\*\*\*@sso\.example\/\?…'\)$/)
    expect(() => keycloak({ authUrl: 'https://sso.example', realms: ['acme corp'] })).toThrow(
      /"realms\[0\]" must be a realm name .* \(got 'acme corp'\)$/,
    )
  })

  it('accepts a base path whose segments only resemble realms', () => {
    expect(
      keycloak({ authUrl: 'https://sso.example.com/realms-api', realm: 'acme' })[0]?.issuer,
    ).toBe('https://sso.example.com/realms-api/realms/acme')
  })

  it.each([
    ['tollgate/client', () => import('../../src/client/index.js')],
    ['tollgate/signin', () => import('../../src/signin/index.js')],
  ])('refuses the same authUrl where %s takes keycloak()', async (_entry, load) => {
    const { keycloak: helper } = await load()
    expect(() => helper({ authUrl: 'https://sso/realms/acme', realm: 'acme' })).toThrow(
      /without \/realms\//,
    )
  })
})

describe('issuer entries with their own claim rules', () => {
  let kit: TestIssuer
  beforeAll(async () => {
    kit = await createTestIssuer({ realms: ['acme', 'other'], audience: 'gateway' })
  })
  afterAll(() => kit.close())

  it('reads each issuer’s tokens by its own mapping and audience, and Keycloak’s by the defaults', async () => {
    const gate = createGate({
      issuers: [
        ...keycloak({ authUrl: kit.url, realms: ['acme'] }),
        {
          issuer: kit.issuer('other'),
          jwksUri: kit.jwksUri('other'),
          audience: 'api://orders',
          claims: { scopes: ['scp'], roles: ['roles'], clientId: ['cid'] },
        },
      ],
      audience: 'gateway',
    })
    const check = async (token: string) =>
      (await gate.check({ headers: { authorization: `Bearer ${token}` } })).auth
    const keycloakAuth = await check(
      await kit.mint({ realm_access: { roles: ['admin'] }, scp: ['ignored'] }),
    )
    const otherAuth = await check(
      await kit.mint(
        {
          aud: 'api://orders',
          azp: undefined,
          cid: 'okta-app',
          scope: undefined,
          scp: ['orders:read'],
          roles: ['admin'],
        },
        { realm: 'other' },
      ),
    )
    const crossed = await gate
      .check({ headers: { authorization: `Bearer ${await kit.mint({ aud: 'api://orders' })}` } })
      .catch((error: InvalidTokenError) => error.reason)
    await gate.close()
    expect(keycloakAuth).toMatchObject({
      clientId: 'test-client',
      scopes: ['openid', 'profile', 'email'],
    })
    expect(keycloakAuth?.roles.realm).toEqual(['admin'])
    expect(otherAuth).toMatchObject({ clientId: 'okta-app', scopes: ['orders:read'] })
    expect(otherAuth?.roles.realm).toEqual(['admin'])
    // An entry's audience is its own: the Keycloak realm does not accept it.
    expect(crossed).toBe('audience')
  })

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'withoutAudience without accessTokenClaims',
      { withoutAudience: { clientIds: ['a'] } },
      /"issuers\[0\]\.withoutAudience" needs accessTokenClaims/,
    ],
    [
      'an empty client list',
      { withoutAudience: { clientIds: [] }, accessTokenClaims: { token_use: 'access' } },
      /withoutAudience\.clientIds/,
    ],
    [
      'a non-string access-token claim value',
      { accessTokenClaims: { token_use: true } },
      /"issuers\[0\]\.accessTokenClaims" must be an object of claim names/,
    ],
    [
      'an empty scopes list',
      { claims: { scopes: [] } },
      /"issuers\[0\]\.claims\.scopes" must be a non-empty array of claim names/,
    ],
    ['an unknown mapping key', { claims: { tenant: ['tid'] } }, /issuers\[0\]\.claims/],
  ])('refuses %s at construction', (_name, extra, message) => {
    expect(() =>
      createGate({
        issuers: [
          { issuer: 'https://idp.example/', jwksUri: 'https://idp.example/keys', ...extra },
        ],
        audience: 'api',
      }),
    ).toThrow(message)
  })

  it('still requires the gate audience when an issuer names none', () => {
    expect(() =>
      createGate({
        issuers: [{ issuer: 'https://idp.example/', jwksUri: 'https://idp.example/keys' }],
      }),
    ).toThrow(/"?audience"? must be a non-empty string or array of strings/)
  })
})
