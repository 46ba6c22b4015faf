/**
 * The development provider of `tollgate/testing` (oidc-provider underneath), driven over HTTP as
 * an application would: one test per grant, the refusals a real provider answers, its tokens
 * admitted by a tollgate gate, key rotation picked up by that gate.
 */
import * as oidc from 'openid-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTokenSource } from '../../src/client/index.js'
import { createGate, keycloak } from '../../src/index.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { claimsOf } from '../helpers/client-fixtures.js'
import {
  BILLING,
  JOB,
  ORDERS,
  privateKeyJwtClient,
  startDevProvider,
  tokenRequest,
  WEB,
} from './dev-provider-fixtures.js'

const REDIRECT_URI = 'http://127.0.0.1:4999/callback'

describe('createDevProvider', () => {
  let provider: DevProvider
  let signer: Awaited<ReturnType<typeof privateKeyJwtClient>>
  beforeAll(async () => {
    signer = await privateKeyJwtClient('orders-signer')
    provider = await startDevProvider({
      clients: [{ ...signer.client, scopes: ['orders:write'], audiences: [ORDERS] }],
    })
  })
  afterAll(() => provider?.close())

  const gateFor = (audience: string) =>
    createGate({
      issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
      audience,
    })
  const admit = (gate: ReturnType<typeof createGate>, token: unknown) =>
    gate.check({ headers: { authorization: `Bearer ${String(token)}` } })

  /** The authorization code flow with PKCE through openid-client, as a sign-in library runs it. */
  async function signIn(user: string, scope: string, resources: readonly string[] = []) {
    const config = await oidc.discovery(
      new URL(provider.issuer),
      WEB.clientId,
      WEB.clientSecret,
      undefined,
      {
        execute: [oidc.allowInsecureRequests],
      },
    )
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const parameters = new URLSearchParams({
      redirect_uri: REDIRECT_URI,
      scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    // As tollgate/signin does: every resource the refresh token may later be exchanged for.
    for (const resource of resources) parameters.append('resource', resource)
    const url = oidc.buildAuthorizationUrl(config, parameters)
    const back = await provider.authorize(url.href, { user })
    const tokens = await oidc.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    })
    return { config, tokens }
  }

  it('issues client_credentials tokens for the requested resource and scope, admitted by a gate for that audience', async () => {
    const { status, body } = await tokenRequest(provider, JOB, {
      grant_type: 'client_credentials',
      scope: 'orders:read',
      resource: ORDERS,
    })
    expect(status).toBe(200)
    expect(claimsOf(String(body['access_token']))).toMatchObject({
      iss: provider.issuer,
      aud: 'orders',
      scope: 'orders:read',
      client_id: JOB.clientId,
      tenant: 'acme',
    })
    const { auth } = await admit(gateFor('orders'), body['access_token'])
    expect(auth).toMatchObject({ clientId: JOB.clientId, scopes: ['orders:read'], realm: 'dev' })
    await expect(admit(gateFor('billing'), body['access_token'])).rejects.toMatchObject({
      code: 'ERR_TOKEN_INVALID',
    })
  })

  it('reads an audience parameter as the resource of the API with that audience', async () => {
    const { status, body } = await tokenRequest(provider, WEB, {
      grant_type: 'client_credentials',
      scope: 'billing:read',
      audience: 'billing',
    })
    expect(status).toBe(200)
    expect(claimsOf(String(body['access_token']))).toMatchObject({
      aud: 'billing',
      scope: 'billing:read',
    })
  })

  it('refuses an audience parameter that names no API with invalid_target', async () => {
    const answer = await tokenRequest(provider, JOB, {
      grant_type: 'client_credentials',
      audience: 'billing',
    })
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_target' } })
    const unknown = await tokenRequest(provider, JOB, {
      grant_type: 'client_credentials',
      audience: 'nothing-by-that-name',
    })
    expect(unknown).toMatchObject({ status: 400, body: { error: 'invalid_target' } })
  })

  it('gives tollgate/client’s audience option the token for that API', async () => {
    const source = createTokenSource({
      issuer: keycloak({ authUrl: provider.url, realm: provider.realm }),
      clientId: WEB.clientId,
      clientSecret: WEB.clientSecret,
      audience: 'billing',
    })
    try {
      expect(claimsOf(await source.get())).toMatchObject({ aud: 'billing' })
    } finally {
      source.close()
    }
  })

  it('issues client_credentials tokens to a private_key_jwt client through tollgate/client', async () => {
    const source = createTokenSource({
      issuer: keycloak({ authUrl: provider.url, realm: provider.realm }),
      clientId: signer.client.clientId,
      privateKey: signer.privateKey,
      privateKeyId: 'job-key-1',
      privateKeyAlgorithm: 'ES256',
      scope: 'orders:write',
      resource: ORDERS,
      allowInsecureHttp: true,
    })
    try {
      const token = await source.get()
      expect(claimsOf(token)).toMatchObject({ aud: 'orders', scope: 'orders:write' })
      expect((await admit(gateFor('orders'), token)).auth?.clientId).toBe('orders-signer')
    } finally {
      source.close()
    }
  })

  it('signs a user in with the authorization code grant and PKCE: ID token with profile claims, access token for the resource', async () => {
    const { tokens } = await signIn('alice', 'openid profile email orders:read', [ORDERS])
    expect(tokens.claims()).toMatchObject({
      iss: provider.issuer,
      sub: 'alice',
      aud: WEB.clientId,
      name: 'Alice Example',
      email: 'alice@example.com',
      email_verified: true,
    })
    expect(claimsOf(tokens.access_token)).toMatchObject({
      sub: 'alice',
      aud: 'orders',
      scope: 'orders:read',
      tenant: 'acme',
    })
    expect((await admit(gateFor('orders'), tokens.access_token)).auth?.subject).toBe('alice')
  })

  it('refuses an authorization request without PKCE (invalid_request)', async () => {
    const url = new URL(provider.authorizationEndpoint)
    url.search = new URLSearchParams({
      client_id: WEB.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid',
    }).toString()
    const back = await provider.authorize(url.href, { user: 'alice' })
    expect(back.searchParams.get('error')).toBe('invalid_request')
    expect(back.searchParams.get('code')).toBeNull()
  })

  it('rotates refresh tokens on every use, and a reused one is refused and ends the grant (invalid_grant)', async () => {
    const { config, tokens } = await signIn('bob', 'openid profile orders:read', [ORDERS])
    const first = tokens.refresh_token as string
    const refreshed = await oidc.refreshTokenGrant(config, first, { resource: ORDERS })
    const second = refreshed.refresh_token as string
    expect(second).not.toBe(first)
    expect(claimsOf(refreshed.access_token)).toMatchObject({ sub: 'bob', aud: 'orders' })

    const reuse = await tokenRequest(provider, WEB, {
      grant_type: 'refresh_token',
      refresh_token: first,
    })
    expect(reuse).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    // Reuse detection: the whole grant is revoked, so the latest refresh token is dead too.
    const after = await tokenRequest(provider, WEB, {
      grant_type: 'refresh_token',
      refresh_token: second,
    })
    expect(after).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
  })

  it('answers a refresh for another resource the user consented to with a token for that audience', async () => {
    const { config, tokens } = await signIn('alice', 'openid billing:read orders:read', [
      ORDERS,
      BILLING,
    ])
    const billing = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, {
      resource: BILLING,
    })
    expect(claimsOf(billing.access_token)).toMatchObject({ aud: 'billing', scope: 'billing:read' })
  })

  it.each([
    [
      'invalid_client, 401, for a wrong secret',
      { ...JOB, clientSecret: 'not-the-secret' },
      { grant_type: 'client_credentials' },
      401,
      'invalid_client',
    ],
    [
      'invalid_client, 401, for an unknown client',
      { clientId: 'nobody', clientSecret: 'x' },
      { grant_type: 'client_credentials' },
      401,
      'invalid_client',
    ],
    [
      'invalid_scope for a scope the client may not ask for',
      JOB,
      { grant_type: 'client_credentials', scope: 'orders:write' },
      400,
      'invalid_scope',
    ],
    [
      'invalid_target for a resource the client may not ask for',
      JOB,
      { grant_type: 'client_credentials', resource: BILLING },
      400,
      'invalid_target',
    ],
    [
      'invalid_target for an unknown resource',
      JOB,
      { grant_type: 'client_credentials', resource: 'https://unknown.example' },
      400,
      'invalid_target',
    ],
    [
      'invalid_grant for an unknown authorization code',
      WEB,
      {
        grant_type: 'authorization_code',
        code: 'not-a-code',
        redirect_uri: REDIRECT_URI,
        code_verifier: 'x'.repeat(43),
      },
      400,
      'invalid_grant',
    ],
    [
      'invalid_grant for an unknown refresh token',
      WEB,
      { grant_type: 'refresh_token', refresh_token: 'not-a-refresh-token' },
      400,
      'invalid_grant',
    ],
    [
      'invalid_request for a grant the client is not registered for (oidc-provider’s answer)',
      JOB,
      { grant_type: 'refresh_token', refresh_token: 'x' },
      400,
      'invalid_request',
    ],
  ])('answers %s', async (_name, client, parameters, status, error) => {
    const answer = await tokenRequest(provider, client, parameters)
    expect(answer).toMatchObject({ status, body: { error } })
    expect(answer.body).not.toHaveProperty('access_token')
  })

  it('signs with a new key after rotateKeys(); a gate admits tokens of both keys', async () => {
    const gate = gateFor('orders')
    const before = await tokenRequest(provider, JOB, { grant_type: 'client_credentials' })
    await admit(gate, before.body['access_token'])
    const kid = await provider.rotateKeys()
    const after = await tokenRequest(provider, JOB, { grant_type: 'client_credentials' })
    const header = JSON.parse(
      Buffer.from(String(after.body['access_token']).split('.')[0] ?? '', 'base64url').toString(),
    )
    expect(header.kid).toBe(kid)
    expect((await admit(gate, after.body['access_token'])).auth?.clientId).toBe(JOB.clientId)
    expect((await admit(gate, before.body['access_token'])).auth?.clientId).toBe(JOB.clientId)
  })

  it('stops publishing the old key with rotateKeys({ keepPrevious: false })', async () => {
    const kid = await provider.rotateKeys({ keepPrevious: false })
    const jwks = (await (await fetch(provider.jwksUri)).json()) as { keys: { kid: string }[] }
    expect(jwks.keys.map((key) => key.kid)).toEqual([kid])
  })
})

describe('createDevProvider options', () => {
  const valid = {
    users: [{ sub: 'alice' }],
    resources: { [ORDERS]: { scopes: ['orders:read'] } },
    clients: [JOB],
  }

  it.each([
    [
      { ...valid, resources: {} },
      '"resources" must name at least one API by its resource indicator',
    ],
    [{ ...valid, users: [] }, '"users" must list at least one user'],
    [
      { ...valid, resources: { orders: {} } },
      '"resources["orders"]" must be named by an absolute URI',
    ],
    [{ ...valid, clients: [{ clientId: 'job' }] }, '"clients[0]" needs "clientSecret"'],
    [
      { ...valid, clients: [{ ...JOB, audiences: ['urn:other'] }] },
      `"clients[0].audiences[0]" must be a key of "resources": ${ORDERS}`,
    ],
    [
      { ...valid, clients: [{ ...JOB, grantTypes: ['authorization_code'] }] },
      '"clients[0].redirectUris" must list at least one URL',
    ],
    [{ ...valid, autoLogin: 'carol' }, '"autoLogin" must be the sub of a user: alice'],
    [
      { ...valid, client: [] },
      '"client" is not an option; use one of: realm, port, users, clients',
    ],
  ])('refuses invalid options with a message naming what to fix (%#)', async (options, message) => {
    await expect(createDevProvider(options as never)).rejects.toThrow(
      new TypeError(`createDevProvider(options): ${message}`).message,
    )
  })

  it('never echoes the value it refuses (a secret set in the wrong place)', async () => {
    const secret = 'super secret/value 0123456789'
    const attempt = createDevProvider({ ...valid, realm: secret } as never)
    await expect(attempt).rejects.toThrow(/"realm" must be 1 to 64 letters/)
    await expect(attempt).rejects.not.toThrow(secret)
  })
})
