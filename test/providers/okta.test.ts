/**
 * `okta()` on Okta's token shapes: `scp` as an array, `cid` as the client (for
 * `allowedClientIds`, `auth.clientId` and events); an ID token and a foreign client refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { okta, requireScopes } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { type ProviderGate, providerGate } from './provider-gate.js'
import { NO_TYP, OKTA, oktaAccessToken, oktaIdToken } from './shapes.js'

let kit: TestIssuer
let gate: ProviderGate
beforeAll(async () => {
  kit = await createTestIssuer()
  gate = providerGate(kit, okta({ domain: OKTA.domain }), { allowedClientIds: [OKTA.client] })
})
afterAll(async () => {
  await gate.close()
  await kit.close()
})

describe('okta()', () => {
  it('builds the default authorization server issuer, its /v1/keys and api://default', () => {
    expect(okta({ domain: 'acme.okta.com' })).toEqual([
      {
        issuer: 'https://acme.okta.com/oauth2/default',
        jwksUri: 'https://acme.okta.com/oauth2/default/v1/keys',
        audience: ['api://default'],
        claims: { scopes: ['scp'], roles: ['groups'], clientId: ['cid'] },
      },
    ])
    expect(
      okta({ domain: 'acme.okta.com', authServer: 'aus1a2b3c4', audience: 'api://orders' })[0],
    ).toMatchObject({
      issuer: 'https://acme.okta.com/oauth2/aus1a2b3c4',
      jwksUri: 'https://acme.okta.com/oauth2/aus1a2b3c4/v1/keys',
      audience: ['api://orders'],
    })
  })

  it('admits an access token with scp as an array and cid on the client allow-list', async () => {
    const result = await gate.check(await kit.mint(oktaAccessToken(), NO_TYP))
    expect(result.reason).toBeUndefined()
    expect(result.auth?.clientId).toBe(OKTA.client)
    expect(result.auth?.scopes).toEqual(['openid', 'orders:read'])
    expect(() => requireScopes('orders:read')(result.auth)).not.toThrow()
    expect(gate.fetched).toEqual(['https://acme.okta.com/oauth2/default/v1/keys'])
  })

  it('reads groups as roles when the authorization server adds a groups claim', async () => {
    const result = await gate.check(
      await kit.mint(oktaAccessToken({ groups: ['Everyone', 'admins'] }), NO_TYP),
    )
    expect(result.auth?.roles.realm).toEqual(['Everyone', 'admins'])
  })

  it('refuses a token of another client (cid not on allowedClientIds), naming that client', async () => {
    const result = await gate.check(
      await kit.mint(oktaAccessToken({ cid: '0oaOTHERCLIENT00000' }), NO_TYP),
    )
    expect(result).toMatchObject({ reason: 'client', detail: { clientId: '0oaOTHERCLIENT00000' } })
  })

  it('refuses an Okta ID token (aud the client id)', async () => {
    const result = await gate.check(await kit.mint(oktaIdToken(), NO_TYP))
    expect(result.reason).toBe('audience')
  })

  it('refuses a token of another authorization server of the same org', async () => {
    const result = await gate.check(
      await kit.mint(oktaAccessToken({ iss: 'https://acme.okta.com/oauth2/aus9other0' }), NO_TYP),
    )
    expect(result.reason).toBe('unknown_issuer')
  })

  it('with the default audience alone admits every application of the org; allowedClientIds names those this API serves', async () => {
    // api://default is the audience of every token the default server issues, whatever the app.
    const open = providerGate(kit, okta({ domain: OKTA.domain }))
    const stranger = await kit.mint(oktaAccessToken({ cid: '0oaOTHERCLIENT00000' }), NO_TYP)
    expect((await open.check(stranger)).auth?.clientId).toBe('0oaOTHERCLIENT00000')
    await open.close()
    expect(await gate.check(stranger)).toMatchObject({ reason: 'client' })
  })

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'an issuer URL as authServer',
      { domain: 'acme.okta.com', authServer: 'https://acme.okta.com/oauth2/default' },
      /"authServer" must be the authorization server's id/,
    ],
    ['no domain', {}, /"domain" must be the provider's host name/],
  ])('refuses %s at construction', (_name, options, message) => {
    expect(() => okta(options as never)).toThrow(message)
  })
})
