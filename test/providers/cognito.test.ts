/**
 * `cognito()` on Amazon Cognito's token shapes: access tokens without `aud` admitted for listed
 * app clients with `token_use: access`; an ID token presented as an access token refused, with
 * or without a matching audience; another client's token refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { cognito, createGate, requireRealmRoles } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { type ProviderGate, providerGate } from './provider-gate.js'
import { COGNITO, cognitoAccessToken, cognitoIdToken, NO_TYP } from './shapes.js'

const PROFILE = {
  region: COGNITO.region,
  userPoolId: COGNITO.userPoolId,
  clientIds: [COGNITO.client],
}

let kit: TestIssuer
let gate: ProviderGate
beforeAll(async () => {
  kit = await createTestIssuer()
  gate = providerGate(kit, cognito(PROFILE))
})
afterAll(async () => {
  await gate.close()
  await kit.close()
})

describe('cognito()', () => {
  it('builds the user pool issuer, its JWKS and the client allow-list standing in for aud', () => {
    expect(cognito(PROFILE)).toEqual([
      {
        issuer: COGNITO.issuer,
        jwksUri: `${COGNITO.issuer}/.well-known/jwks.json`,
        withoutAudience: { clientIds: [COGNITO.client] },
        accessTokenClaims: { token_use: 'access' },
        claims: { scopes: ['scope'], roles: ['cognito:groups'], clientId: ['client_id'] },
      },
    ])
  })

  it('admits an access token without aud from a listed app client, groups as roles', async () => {
    const result = await gate.check(await kit.mint(cognitoAccessToken(), NO_TYP))
    expect(result.reason).toBeUndefined()
    expect(result.auth?.clientId).toBe(COGNITO.client)
    expect(result.auth?.scopes).toContain('orders/read')
    expect(() => requireRealmRoles('admins')(result.auth)).not.toThrow()
    expect(gate.fetched).toEqual([`${COGNITO.issuer}/.well-known/jwks.json`])
  })

  it('admits a client-credentials access token (sub is the client id, no groups)', async () => {
    const token = cognitoAccessToken({
      sub: COGNITO.client,
      'cognito:groups': undefined,
      username: undefined,
      origin_jti: undefined,
      event_id: undefined,
      scope: 'orders/read',
    })
    const result = await gate.check(await kit.mint(token, NO_TYP))
    expect(result.auth?.roles.realm).toEqual([])
    expect(result.auth?.scopes).toEqual(['orders/read'])
  })

  it('refuses an access token of an app client not listed, naming that client', async () => {
    const result = await gate.check(
      await kit.mint(cognitoAccessToken({ client_id: COGNITO.otherClient }), NO_TYP),
    )
    expect(result).toMatchObject({
      reason: 'client',
      detail: { clientId: COGNITO.otherClient, expected: [COGNITO.client] },
    })
  })

  it('refuses an ID token presented as an access token (its aud is the app client, no audience configured)', async () => {
    const result = await gate.check(await kit.mint(cognitoIdToken(), NO_TYP))
    expect(result.reason).toBe('audience')
  })

  it('refuses an ID token as token_type even where the entry accepts its aud', async () => {
    const [entry] = cognito(PROFILE)
    const lenient = providerGate(kit, [
      { ...entry, issuer: COGNITO.issuer, audience: COGNITO.client },
    ])
    const idToken = await lenient.check(await kit.mint(cognitoIdToken(), NO_TYP))
    const access = await lenient.check(await kit.mint(cognitoAccessToken(), NO_TYP))
    await lenient.close()
    // Refused as an ID token (auth_time, no access-token marker) before token_use is even read.
    expect(idToken.reason).toBe('token_type')
    expect(access.reason).toBeUndefined()
  })

  it('refuses a token without aud whose token_use is not access, naming the claim', async () => {
    const result = await gate.check(await kit.mint(cognitoAccessToken({ token_use: 'id' }), NO_TYP))
    expect(result).toMatchObject({
      reason: 'token_type',
      detail: { claim: 'token_use', expected: 'access', found: 'id' },
    })
  })

  it('refuses a token of another user pool', async () => {
    const result = await gate.check(
      await kit.mint(
        cognitoAccessToken({
          iss: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Other9999',
        }),
        NO_TYP,
      ),
    )
    expect(result.reason).toBe('unknown_issuer')
  })

  it('needs no gate audience, and a Keycloak issuer beside it still needs one', () => {
    expect(() => createGate({ issuers: cognito(PROFILE) })).not.toThrow()
    expect(() =>
      createGate({
        issuers: [
          ...cognito(PROFILE),
          { issuer: 'https://sso.example.com/realms/a', discovery: true },
        ],
      }),
    ).toThrow(/audience/)
  })

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a pool of another region',
      { region: 'us-east-1', userPoolId: COGNITO.userPoolId, clientIds: ['c'] },
      /is a pool of eu-west-1, not of "region" "us-east-1"/,
    ],
    [
      'a pool id that is not one',
      { userPoolId: 'AbCdEf123', clientIds: ['c'] },
      /"userPoolId" must be a user pool id/,
    ],
    [
      'no client ids',
      { userPoolId: COGNITO.userPoolId, clientIds: [] },
      /"clientIds" must be a non-empty array/,
    ],
  ])('refuses %s at construction', (_name, options, message) => {
    expect(() => cognito(options as never)).toThrow(message)
  })
})
