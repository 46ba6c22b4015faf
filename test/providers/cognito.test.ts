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

  const TOKEN_USE_ID = {
    reason: 'token_type',
    status: 401,
    detail: { claim: 'token_use', expected: 'access', found: 'id' },
  }

  it('refuses an ID token presented as an access token by its token_use (its aud is the app client, no audience configured)', async () => {
    const result = await gate.check(await kit.mint(cognitoIdToken(), NO_TYP))
    expect(result).toMatchObject(TOKEN_USE_ID)
  })

  describe('under an entry that accepts the ID token’s aud', () => {
    let lenient: ProviderGate
    beforeAll(() => {
      const [entry] = cognito(PROFILE)
      lenient = providerGate(kit, [{ ...entry, issuer: COGNITO.issuer, audience: COGNITO.client }])
    })
    afterAll(() => lenient.close())

    it('refuses an ID token by its token_use, not only by the generic ID-token rule', async () => {
      expect(await lenient.check(await kit.mint(cognitoIdToken(), NO_TYP))).toMatchObject(
        TOKEN_USE_ID,
      )
      expect((await lenient.check(await kit.mint(cognitoAccessToken(), NO_TYP))).reason).toBe(
        undefined,
      )
    })

    it('refuses an ID token that carries no claim only ID tokens have, and names its client', async () => {
      // No auth_time, nonce or at_hash, and a client_id of a listed client: only token_use tells.
      const bare = cognitoIdToken({ auth_time: undefined, client_id: COGNITO.client })
      expect(await lenient.check(await kit.mint(bare, NO_TYP))).toMatchObject(TOKEN_USE_ID)
    })
  })

  describe('beside a gate-level audience', () => {
    let withAudience: ProviderGate
    beforeAll(() => {
      withAudience = providerGate(kit, cognito(PROFILE), { audience: 'orders-api' })
    })
    afterAll(() => withAudience.close())

    it('still refuses a token of an app client not listed when it carries that audience', async () => {
      const result = await withAudience.check(
        await kit.mint(
          cognitoAccessToken({ client_id: COGNITO.otherClient, aud: 'orders-api' }),
          NO_TYP,
        ),
      )
      expect(result).toMatchObject({
        reason: 'client',
        detail: { clientId: COGNITO.otherClient, expected: [COGNITO.client], aud: 'orders-api' },
      })
    })

    it('admits a listed client’s token with that audience, and holds a token with an aud to it', async () => {
      const listed = await withAudience.check(
        await kit.mint(cognitoAccessToken({ aud: 'orders-api' }), NO_TYP),
      )
      expect(listed.reason).toBeUndefined()
      const elsewhere = await withAudience.check(
        await kit.mint(cognitoAccessToken({ aud: 'billing-api' }), NO_TYP),
      )
      expect(elsewhere.reason).toBe('audience')
      // And without aud, as Cognito issues them.
      expect((await withAudience.check(await kit.mint(cognitoAccessToken(), NO_TYP))).reason).toBe(
        undefined,
      )
    })
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
