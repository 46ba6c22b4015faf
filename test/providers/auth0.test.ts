/**
 * `auth0()` on Auth0's token shapes: user and machine tokens admitted with `permissions` usable as
 * scopes; an ID token, a token for another API of the same tenant and another tenant's refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { auth0, requireScopes } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { type ProviderGate, providerGate } from './provider-gate.js'
import { AUTH0, auth0IdToken, auth0MachineToken, auth0UserToken } from './shapes.js'

let kit: TestIssuer
let gate: ProviderGate
beforeAll(async () => {
  kit = await createTestIssuer()
  gate = providerGate(kit, auth0({ domain: AUTH0.domain, audience: AUTH0.api }))
})
afterAll(async () => {
  await gate.close()
  await kit.close()
})

describe('auth0()', () => {
  it('builds the issuer with its trailing slash and the key URL Auth0 publishes', () => {
    expect(auth0({ domain: 'https://acme.eu.auth0.com/', audience: AUTH0.api })).toEqual([
      {
        issuer: 'https://acme.eu.auth0.com/',
        jwksUri: 'https://acme.eu.auth0.com/.well-known/jwks.json',
        audience: [AUTH0.api],
        claims: { scopes: ['scope', 'permissions'], clientId: ['azp', 'client_id'] },
      },
    ])
  })

  it('admits a user token whose aud lists the API and /userinfo, with scope and permissions as scopes', async () => {
    const result = await gate.check(await kit.mint(auth0UserToken()))
    expect(result.reason).toBeUndefined()
    expect(result.auth?.clientId).toBe(AUTH0.client)
    expect(result.auth?.scopes).toEqual([
      'openid',
      'profile',
      'email',
      'read:messages',
      'write:messages',
    ])
    expect(() => requireScopes('write:messages')(result.auth)).not.toThrow()
    expect(gate.fetched).toEqual(['https://acme.eu.auth0.com/.well-known/jwks.json'])
  })

  it('admits a machine-to-machine token (gty client-credentials) and names its client', async () => {
    const result = await gate.check(await kit.mint(auth0MachineToken()))
    expect(result.auth?.subject).toBe(`${AUTH0.client}@clients`)
    expect(result.auth?.clientId).toBe(AUTH0.client)
    expect(() => requireScopes('write:messages')(result.auth)).toThrow()
  })

  it('refuses a token for another API of the same tenant as audience, naming its aud', async () => {
    const result = await gate.check(
      await kit.mint(
        auth0UserToken({ aud: ['https://billing.acme.example', `${AUTH0.issuer}userinfo`] }),
      ),
    )
    expect(result).toMatchObject({
      reason: 'audience',
      status: 401,
      detail: {
        aud: ['https://billing.acme.example', `${AUTH0.issuer}userinfo`],
        expected: [AUTH0.api],
      },
    })
  })

  it('refuses an ID token of the tenant (aud the application, not the API)', async () => {
    const result = await gate.check(await kit.mint(auth0IdToken()))
    expect(result.reason).toBe('audience')
  })

  it('refuses a token of another Auth0 tenant, though signed by a key the gate trusts', async () => {
    const result = await gate.check(
      await kit.mint(auth0UserToken({ iss: 'https://evil.auth0.com/' })),
    )
    expect(result).toMatchObject({ reason: 'unknown_issuer', detail: { expected: [AUTH0.issuer] } })
  })

  it('refuses the issuer written without its trailing slash', async () => {
    const result = await gate.check(
      await kit.mint(auth0UserToken({ iss: 'https://acme.eu.auth0.com' })),
    )
    expect(result.reason).toBe('unknown_issuer')
  })

  it('takes the tenant from org_id when told to (Auth0 Organizations)', async () => {
    const orgGate = providerGate(kit, auth0({ domain: AUTH0.domain, audience: AUTH0.api }), {
      tenant: { claim: 'org_id' },
    })
    const result = await orgGate.check(await kit.mint(auth0UserToken({ org_id: 'org_9ZtQn2' })))
    await orgGate.close()
    expect(result.auth?.tenant).toBe('org_9ZtQn2')
  })

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a domain with a path',
      { domain: 'https://acme.auth0.com/api', audience: 'x' },
      /"domain" must be the provider's host name/,
    ],
    ['no audience', { domain: 'acme.auth0.com' }, /"audience" must be the API's Identifier/],
    [
      'an unknown option',
      { domain: 'acme.auth0.com', audience: 'x', clientId: 'y' },
      /unknown option "clientId"/,
    ],
  ])('refuses %s at construction', (_name, options, message) => {
    expect(() => auth0(options as never)).toThrow(message)
  })
})
