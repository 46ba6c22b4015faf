/**
 * The development provider's token-exchange grant, spoken to over plain HTTP: the
 * refusals RFC 8693 names, per client policy, for subject tokens that are expired, of another
 * issuer, for another audience, or whose `may_act` names another actor; and Entra's on-behalf-of
 * shape. The exchanger's side of the same grant: test/client/token-exchange.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createDevProvider,
  createTestIssuer,
  type DevProvider,
  type TestIssuer,
} from '../../src/testing/index.js'
import {
  claimsOf,
  GATEWAY,
  GATEWAY_CLIENT,
  OFFICE,
  REDIRECT_URI,
  startExchangeProvider,
  userTokens,
  WEB,
} from '../helpers/exchange.js'
import { makeCertificate } from '../helpers/tls.js'
import { tokenRequest } from './dev-provider-fixtures.js'

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'

describe('createDevProvider: token exchange', () => {
  let provider: DevProvider
  let stranger: TestIssuer
  beforeAll(async () => {
    provider = await startExchangeProvider()
    stranger = await createTestIssuer({ realms: ['dev'], audience: 'gateway' })
  })
  afterAll(async () => {
    await provider?.close()
    await stranger?.close()
  })

  const exchange = (subjectToken: string, extra: Record<string, string> = {}) =>
    tokenRequest(provider, GATEWAY_CLIENT, {
      grant_type: EXCHANGE,
      subject_token: subjectToken,
      subject_token_type: ACCESS_TOKEN,
      resource: OFFICE,
      ...extra,
    })

  it('answers an RFC 8693 token response: issued_token_type, Bearer, expires_in no later than the subject token', async () => {
    const alice = await provider.accessTokenFor('alice', {
      clientId: 'billing-web',
      resource: GATEWAY,
    })
    const { status, body } = await exchange(alice, { scope: 'office:records:read' })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      issued_token_type: ACCESS_TOKEN,
      token_type: 'Bearer',
      scope: 'office:records:read',
    })
    expect(claimsOf(String(body['access_token']))).toMatchObject({
      sub: 'alice',
      aud: 'office',
      act: { sub: 'gateway' },
    })
    expect(
      (claimsOf(String(body['access_token']))['exp'] as number) <=
        (claimsOf(alice)['exp'] as number),
    ).toBe(true)
  })

  it('refuses a subject token of another issuer with invalid_grant', async () => {
    const foreign = await stranger.mint({ sub: 'alice', aud: 'gateway' })
    expect(await exchange(foreign)).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_grant',
        error_description: 'the subject token is expired, malformed or not issued by this provider',
      },
    })
  })

  it('refuses an expired subject token with invalid_grant', async () => {
    const short = await startExchangeProvider({ accessTokenTtlSeconds: 1 })
    try {
      const alice = await short.accessTokenFor('alice', {
        clientId: 'billing-web',
        resource: GATEWAY,
      })
      await sleep(2100)
      const { status, body } = await tokenRequest(short, GATEWAY_CLIENT, {
        grant_type: EXCHANGE,
        subject_token: alice,
        subject_token_type: ACCESS_TOKEN,
        resource: OFFICE,
      })
      expect({ status, error: body['error'] }).toEqual({ status: 400, error: 'invalid_grant' })
    } finally {
      await short.close()
    }
  })

  it('honours may_act: a subject token naming another actor is refused, one naming the gateway exchanged', async () => {
    // may_act comes with the user's token claims, as a provider adds it for a user.
    const named = await createDevProvider({
      users: [
        { sub: 'carol', tokenClaims: { may_act: { sub: 'gateway' } } },
        { sub: 'dave', tokenClaims: { may_act: { sub: 'desk' } } },
      ],
      resources: {
        [GATEWAY]: { audience: 'gateway', scopes: ['billing:read'] },
        [OFFICE]: { audience: 'office', scopes: ['office:records:read'] },
      },
      clients: [
        { clientId: 'billing-web', clientSecret: 'dev-only-web-secret', audiences: [GATEWAY] },
        { ...GATEWAY_CLIENT, exchange: { from: [GATEWAY], to: [OFFICE] } },
      ],
    })
    try {
      const ask = async (user: string) =>
        tokenRequest(named, GATEWAY_CLIENT, {
          grant_type: EXCHANGE,
          subject_token: await named.accessTokenFor(user, {
            clientId: 'billing-web',
            resource: GATEWAY,
          }),
          subject_token_type: ACCESS_TOKEN,
          resource: OFFICE,
        })
      expect((await ask('carol')).status).toBe(200)
      expect(await ask('dave')).toMatchObject({
        status: 400,
        body: {
          error: 'invalid_grant',
          error_description: 'the subject token does not allow this client to act for it (may_act)',
        },
      })
    } finally {
      await named.close()
    }
  })

  it('refuses a request without subject_token, and an on-behalf-of request without requested_token_use, with invalid_request', async () => {
    expect(
      await tokenRequest(provider, GATEWAY_CLIENT, { grant_type: EXCHANGE, resource: OFFICE }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
    const alice = await provider.accessTokenFor('alice', {
      clientId: 'billing-web',
      resource: GATEWAY,
    })
    expect(
      await tokenRequest(provider, GATEWAY_CLIENT, {
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion: alice,
        scope: `${OFFICE}/.default`,
      }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_request' } })
  })

  it.each([
    ['certificate-bound (RFC 8705 cnf x5t#S256)', 'alice', true],
    ['DPoP-bound (RFC 9449 cnf jkt)', 'eve', false],
  ])(
    'attack: a %s subject token is refused with invalid_request, as auth.tokenFor() refuses it (RFC 8693 §2.2.2)',
    async (_name, user, withCertificate) => {
      const bound = await startExchangeProvider({
        users: [
          {
            sub: 'eve',
            tokenClaims: { cnf: { jkt: 'N2dAK5Tw7ZOuVyj2DhjxN0P5uXDZCX7ZAKVUAZZn6uA' } },
          },
        ],
      })
      try {
        const token = await bound.accessTokenFor(user, {
          clientId: 'billing-web',
          resource: GATEWAY,
          ...(withCertificate ? { certificate: makeCertificate('alice-device').cert } : {}),
        })
        expect(claimsOf(token)['cnf']).toBeDefined()
        const { status, body } = await tokenRequest(bound, GATEWAY_CLIENT, {
          grant_type: EXCHANGE,
          subject_token: token,
          subject_token_type: ACCESS_TOKEN,
          resource: OFFICE,
        })
        expect({ status, body }).toEqual({
          status: 400,
          body: {
            error: 'invalid_request',
            error_description:
              "the subject token is sender-constrained (cnf): it is bound to its client's key and is not exchanged for a bearer token",
          },
        })
      } finally {
        await bound.close()
      }
    },
  )

  it('attack: an ID token, signed with the same keys, is not exchanged even where a product’s audience is that client’s id (RFC 8693 §2.1, §2.2.2)', async () => {
    const WEB_API = 'https://web.example.com'
    const mixed = await createDevProvider({
      users: [{ sub: 'alice' }],
      resources: {
        [GATEWAY]: { audience: 'gateway', scopes: ['billing:read'] },
        // An API whose audience is the web client's id: the web client's ID tokens name it.
        [WEB_API]: { audience: WEB.clientId, scopes: ['web:read'] },
        [OFFICE]: { audience: 'office', scopes: ['office:records:read'] },
      },
      clients: [
        { ...WEB, redirectUris: [REDIRECT_URI], audiences: [GATEWAY] },
        {
          ...GATEWAY_CLIENT,
          scopes: ['office:records:read'],
          exchange: { from: [GATEWAY, WEB_API], to: [OFFICE] },
        },
      ],
    })
    try {
      const { accessToken, idToken } = await userTokens(mixed)
      expect(claimsOf(idToken)).toMatchObject({ aud: WEB.clientId, sub: 'alice' })
      const ask = (subjectToken: string, type = ACCESS_TOKEN) =>
        tokenRequest(mixed, GATEWAY_CLIENT, {
          grant_type: EXCHANGE,
          subject_token: subjectToken,
          subject_token_type: type,
          resource: OFFICE,
        })
      const refused = {
        status: 400,
        body: {
          error: 'invalid_request',
          error_description:
            'the subject token is not an access token (its header typ is not at+jwt)',
        },
      }
      expect(await ask(idToken)).toEqual(refused)
      expect(await ask(idToken, 'urn:ietf:params:oauth:token-type:jwt')).toEqual(refused)
      // The same user's access token from the same sign-in is exchanged.
      expect((await ask(accessToken)).status).toBe(200)
    } finally {
      await mixed.close()
    }
  })

  it('validates the exchange policy with messages that name what to fix', async () => {
    await expect(
      createDevProvider({
        users: [{ sub: 'alice' }],
        resources: { [OFFICE]: {} },
        clients: [{ ...GATEWAY_CLIENT, exchange: { from: [GATEWAY], to: [OFFICE] } }],
      }),
    ).rejects.toThrow(
      `createDevProvider(options): "clients[0].exchange.from[0]" must be a key of "resources": ${OFFICE}`,
    )
    await expect(
      createDevProvider({
        users: [{ sub: 'alice' }],
        resources: { [OFFICE]: {} },
        clients: [{ ...GATEWAY_CLIENT, exchange: { from: [OFFICE], to: [] } }],
      }),
    ).rejects.toThrow('"clients[0].exchange.to" must name at least one resource indicator')
  })
})
