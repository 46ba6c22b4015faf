/**
 * `createTestIssuer({ issuers })`: issuers served at paths of their own beside the realms, shaped
 * as another provider's (Okta's `/oauth2/default`, Auth0's `/`): discovery, keys, token endpoint,
 * `iss` of minted and issued tokens, counters; options refused with the kit's messages.
 */
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createTestIssuer,
  type TestIssuer,
  type TestIssuerOptions,
} from '../../src/testing/index.js'

let kit: TestIssuer
beforeAll(async () => {
  kit = await createTestIssuer({
    algorithms: ['ES256'],
    issuers: [
      { name: 'okta', path: '/oauth2/default', jwksPath: 'v1/keys', tokenPath: 'v1/token' },
      {
        name: 'auth0',
        issuer: 'https://acme.eu.auth0.com/',
        jwksPath: '.well-known/jwks.json',
        tokenPath: 'oauth/token',
      },
    ],
    clients: [{ clientId: 'svc', clientSecret: 's3cret' }],
  })
})
afterAll(async () => {
  await kit.close()
})

const json = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init)
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('createTestIssuer({ issuers })', () => {
  it('serves discovery at {issuer}/.well-known/openid-configuration naming its own keys and token endpoint', async () => {
    const issuer = `${kit.url}/oauth2/default`
    expect(kit.issuer('okta')).toBe(issuer)
    expect(kit.jwksUri('okta')).toBe(`${issuer}/v1/keys`)
    const { status, body } = await json(`${issuer}/.well-known/openid-configuration`)
    expect(status).toBe(200)
    expect(body).toMatchObject({
      issuer,
      jwks_uri: `${issuer}/v1/keys`,
      token_endpoint: `${issuer}/v1/token`,
      grant_types_supported: ['client_credentials'],
    })
    expect(body).not.toHaveProperty('authorization_endpoint')
  })

  it('mints with its iss and its own key, published at its key path only', async () => {
    const token = await kit.mint({}, { realm: 'okta' })
    const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(kit.jwksUri('okta'))), {
      issuer: kit.issuer('okta'),
    })
    expect(payload.iss).toBe(`${kit.url}/oauth2/default`)
    const realmKeys = createRemoteJWKSet(new URL(kit.jwksUri()))
    await expect(jwtVerify(token, realmKeys)).rejects.toThrow()
  })

  it('issues client_credentials tokens with its iss at its token endpoint', async () => {
    const { status, body } = await json(`${kit.url}/oauth2/default/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=svc&client_secret=s3cret',
    })
    expect(status).toBe(200)
    expect(decodeJwt(body['access_token'] as string)).toMatchObject({
      iss: `${kit.url}/oauth2/default`,
      azp: 'svc',
    })
  })

  it("poses as a provider's issuer URL while served at that URL's path on loopback (Auth0's /)", async () => {
    const { body } = await json(`${kit.url}/.well-known/openid-configuration`)
    expect(body).toMatchObject({
      issuer: 'https://acme.eu.auth0.com/',
      jwks_uri: 'https://acme.eu.auth0.com/.well-known/jwks.json',
      token_endpoint: 'https://acme.eu.auth0.com/oauth/token',
    })
    const keys = await json(`${kit.url}/.well-known/jwks.json`)
    expect(keys.body).toEqual(kit.jwks('auth0'))
    expect(decodeJwt(await kit.mint({}, { realm: 'auth0' })).iss).toBe('https://acme.eu.auth0.com/')
  })

  it('counts its key and discovery fetches under its name, leaving the realms untouched', async () => {
    kit.resetCounts()
    await fetch(`${kit.url}/oauth2/default/v1/keys`)
    await fetch(`${kit.url}/oauth2/default/v1/keys`)
    await fetch(`${kit.url}/oauth2/default/.well-known/openid-configuration`)
    expect([kit.fetchCount('okta'), kit.discoveryCount('okta')]).toEqual([2, 1])
    expect([kit.fetchCount(), kit.discoveryCount()]).toEqual([0, 0])
  })

  it('keeps the realms as they were', async () => {
    expect(kit.realms).toEqual(['test'])
    const { body } = await json(`${kit.issuer()}/.well-known/openid-configuration`)
    expect(body['issuer']).toBe(`${kit.url}/realms/test`)
    expect((await fetch(`${kit.url}/oauth2/default/v1/nothing`)).status).toBe(404)
  })

  it.each<[string, TestIssuerOptions, string]>([
    ['not an array', { issuers: {} as never }, '"issuers" must be an array'],
    ['no name', { issuers: [{ path: '/a' } as never] }, '"issuers[0].name" must be a name'],
    [
      "a realm's name",
      { issuers: [{ name: 'test', path: '/a' }] },
      '"issuers" must be issuers with distinct names',
    ],
    ['neither path nor issuer', { issuers: [{ name: 'a' }] }, '"issuers[0].path" must be'],
    [
      'a path under /realms',
      { issuers: [{ name: 'a', path: '/realms/x' }] },
      '"issuers[0].path" must be',
    ],
    ['a relative path', { issuers: [{ name: 'a', path: 'oauth2' }] }, '"issuers[0].path" must be'],
    [
      'the same path twice',
      {
        issuers: [
          { name: 'a', path: '/x' },
          { name: 'b', path: '/x/' },
        ],
      },
      '"issuers" must be issuers at distinct paths',
    ],
    [
      'an absolute jwksPath',
      { issuers: [{ name: 'a', path: '/x', jwksPath: '/keys' }] },
      '"issuers[0].jwksPath" must be a relative path',
    ],
    [
      'a jwksPath equal to the tokenPath',
      { issuers: [{ name: 'a', path: '/x', jwksPath: 't', tokenPath: 't' }] },
      '"issuers[0]" must be an issuer whose jwksPath, tokenPath and .well-known/openid-configuration differ',
    ],
    [
      'an issuer with a query',
      { issuers: [{ name: 'a', issuer: 'https://x.example/?q' }] },
      '"issuers[0].issuer" must be an http(s) URL',
    ],
    [
      'an unknown key',
      { issuers: [{ name: 'a', path: '/x', jwks: 'k' } as never] },
      '"issuers[0].jwks" must be absent; the options are name, path, issuer, jwksPath, tokenPath',
    ],
  ])('refuses %s, naming the option', async (_name, options, message) => {
    await expect(createTestIssuer(options)).rejects.toThrow(`createTestIssuer(): ${message}`)
  })
})
