/**
 * The development provider as a Token Status List issuer: its access tokens name a fresh index
 * of its list, the list is served signed with its keys, and revokeToken() makes tollgate's
 * status list check refuse the token once its copy of the list is refreshed.
 */
import { createHash, randomBytes } from 'node:crypto'

import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { TollgateError } from '../../src/errors.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import { normalizeStatusListOptions } from '../../src/status/options.js'
import { createStatusListStep, type StatusListStep } from '../../src/status/status-list.js'
import { createDevProvider, createTestIssuer, type DevProvider } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { IssuerKeys } from '../../src/token/jwks.js'
import { TEST_JWKS_OPTIONS } from '../helpers/jwks-options.js'
import { BILLING, JOB, ORDERS, USERS, WEB } from './dev-provider-fixtures.js'

const REDIRECT = 'http://127.0.0.1:4999/callback'
const EXCHANGER = { clientId: 'orders-gateway', clientSecret: 'dev-only-exchange-secret' }

const JWKS = TEST_JWKS_OPTIONS

let provider: DevProvider
let gate: Gate

beforeAll(async () => {
  provider = await createDevProvider({
    users: USERS,
    resources: {
      [ORDERS]: { audience: 'orders', scopes: ['orders:read'] },
      [BILLING]: { audience: 'billing', scopes: ['billing:read'] },
    },
    clients: [
      { ...JOB, scopes: ['orders:read'], audiences: [ORDERS] },
      { ...WEB, scopes: ['orders:read'], audiences: [ORDERS], redirectUris: [REDIRECT] },
      { ...EXCHANGER, exchange: { from: [ORDERS], to: [BILLING] } },
    ],
    statusList: true,
  })
  gate = createGate({
    issuers: keycloak({ authUrl: provider.url, realms: ['dev'] }),
    audience: 'orders',
  })
})

afterAll(async () => {
  await gate.close()
  await provider.close()
})

/** `'admitted'` or the refusal's reason. */
const decided = (token: string) =>
  gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
    () => 'admitted',
    (error: TollgateError) => error.reason ?? error.code,
  )

/** The step's answer, awaited: `undefined` (admitted) or the refusal. */
async function judged(step: StatusListStep, token: never): Promise<unknown> {
  const answer = step.judge(token)
  return answer instanceof Promise
    ? answer.then(
        () => undefined,
        (error: unknown) => error,
      )
    : answer
}

const tokenOf = (user: string) =>
  provider.accessTokenFor(user, { clientId: WEB.clientId, resource: ORDERS })

async function tokenFromEndpoint(
  client: { readonly clientId: string; readonly clientSecret: string },
  params: Record<string, string>,
): Promise<string> {
  const response = await fetch(provider.tokenEndpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
    },
    body: new URLSearchParams(params),
  })
  const body = (await response.json()) as { access_token?: string }
  expect(response.status, JSON.stringify(body)).toBe(200)
  return body.access_token as string
}

describe('the development provider as a status list issuer', () => {
  it('gives every access token a fresh index of its list: a sign-in, client credentials, token exchange and accessTokenFor()', async () => {
    const uri = `${provider.issuer}/statuslists/access-tokens`
    expect(provider.statusListUri).toBe(uri)
    const exchanged = await tokenFromEndpoint(EXCHANGER, {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: await tokenOf('alice'),
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      resource: BILLING,
    })
    // A user's sign-in: authorization code with PKCE.
    const verifier = randomBytes(32).toString('base64url')
    const authorization = new URL(provider.authorizationEndpoint)
    authorization.search = new URLSearchParams({
      client_id: WEB.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      resource: ORDERS,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString()
    const back = await provider.authorize(authorization.href, { user: 'bob' })
    const signedIn = await tokenFromEndpoint(WEB, {
      grant_type: 'authorization_code',
      code: back.searchParams.get('code') ?? '',
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      resource: ORDERS,
    })
    expect(decodeJwt(signedIn).sub).toBe('bob')
    const tokens = [
      signedIn,
      await tokenFromEndpoint(JOB, { grant_type: 'client_credentials', resource: ORDERS }),
      await tokenOf('alice'),
      await tokenOf('alice'),
      exchanged,
    ]
    const references = tokens.map(
      (token) =>
        (decodeJwt(token) as { status?: { status_list?: { idx: number; uri: string } } }).status
          ?.status_list,
    )
    for (const reference of references) expect(reference?.uri).toBe(uri)
    expect(new Set(references.map((reference) => reference?.idx)).size).toBe(5)
  })

  it('serves the list as a Status List Token signed with its keys (typ, sub, iat, exp, ttl)', async () => {
    const uri = provider.statusListUri as string
    const response = await fetch(uri, { headers: { accept: 'application/statuslist+jwt' } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/statuslist+jwt')
    const jwt = await response.text()
    expect(decodeProtectedHeader(jwt).typ).toBe('statuslist+jwt')
    const { payload } = await jwtVerify(jwt, createRemoteJWKSet(new URL(provider.jwksUri)), {
      typ: 'statuslist+jwt',
    })
    expect(payload).toMatchObject({
      sub: uri,
      iat: expect.any(Number),
      exp: expect.any(Number),
      ttl: 60,
      status_list: { bits: 1, lst: expect.any(String) },
    })
  })

  it('tollgate’s status list check admits a token, and refuses it (status_invalid) once the list is fetched again after revokeToken()', async () => {
    const clock = { now: Date.now() }
    const keys = new IssuerKeys(
      { issuer: provider.issuer, jwksUri: provider.jwksUri, discovery: false },
      ['RS256'],
      JWKS,
      { emit: undefined, onKeysRetired: undefined },
    )
    const options = normalizeStatusListOptions({ minCacheSeconds: 1, maxCacheSeconds: 1 })
    if (options === undefined) throw new Error('statusList options')
    const step = createStatusListStep(options, {
      keysOf: (name) => (name === provider.issuer ? keys : undefined),
      algorithms: new Set(['RS256']),
      clockToleranceSeconds: 30,
      emit: () => undefined,
      now: () => clock.now,
    })
    try {
      const token = await tokenOf('alice')
      const other = await tokenOf('alice')
      // The token is the provider's, as the gate verifies it; the step then reads its status.
      expect(await decided(token)).toBe('admitted')
      const verified = (jwt: string) => {
        const claims = decodeJwt(jwt)
        return { header: { alg: 'RS256' }, claims, issuer: provider.issuer, realm: 'dev' } as never
      }
      expect(await judged(step, verified(token))).toBeUndefined()
      await provider.revokeToken(token)
      // Held for a second (maxCacheSeconds: 1): past it, the list is fetched again.
      clock.now += 1_100
      expect(await judged(step, verified(token))).toMatchObject({ reason: 'status_invalid' })
      expect(await judged(step, verified(other))).toBeUndefined()
    } finally {
      step.close()
    }
  })

  it('revokeToken() refuses a token another issuer signed, and a provider without a list', async () => {
    const stranger = await createTestIssuer({ realms: ['dev'], audience: 'orders' })
    try {
      await expect(provider.revokeToken(await stranger.mint({ sub: 'alice' }))).rejects.toThrow(
        /not an access token signed by this provider/,
      )
    } finally {
      await stranger.close()
    }
    const plain = await createDevProvider({
      users: USERS,
      resources: { [ORDERS]: { audience: 'orders', scopes: ['orders:read'] } },
      clients: [{ ...WEB, scopes: ['orders:read'] }],
    })
    try {
      const token = await plain.accessTokenFor('alice', {
        clientId: WEB.clientId,
        resource: ORDERS,
      })
      expect(decodeJwt(token)['status']).toBeUndefined()
      expect(plain.statusListUri).toBeUndefined()
      await expect(plain.revokeToken(token)).rejects.toThrow(/statusList: true/)
      expect((await fetch(`${plain.issuer}/statuslists/access-tokens`)).status).toBe(404)
    } finally {
      await plain.close()
    }
  })
})
