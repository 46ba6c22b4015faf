import { describe, expect, it } from 'vitest'

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
})
