/**
 * `tollgate/client` on provider profiles: a token source given `okta()` or `auth0()` with
 * `discovery: true` finds the token endpoint in the provider's discovery document, obtains a token
 * by `client_credentials`, and a gate built from the same profile admits it. The test issuer
 * poses as the provider (`issuers` option: the provider's issuer URL and paths, keys and token
 * endpoint); the client's and the gate's `fetch` send the provider's host to it on loopback, and
 * any other address fails, so a profile or a client that builds a wrong URL fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createTokenSource } from '../../src/client/index.js'
import { auth0, type IssuerOptions, okta } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { providerGate } from './provider-gate.js'
import { AUTH0, OKTA } from './shapes.js'

const OKTA_SECRET = 'okta-client-secret'
const AUTH0_SECRET = 'auth0-client-secret'

let kit: TestIssuer
beforeAll(async () => {
  kit = await createTestIssuer({
    issuers: [
      { name: 'okta', issuer: OKTA.issuer, jwksPath: 'v1/keys', tokenPath: 'v1/token' },
      {
        name: 'auth0',
        issuer: AUTH0.issuer,
        jwksPath: '.well-known/jwks.json',
        tokenPath: 'oauth/token',
      },
      // Another authorization server of the same org whose document names the default one.
      {
        name: 'impostor',
        path: '/oauth2/aus9other0',
        issuer: OKTA.issuer,
        jwksPath: 'v1/keys',
        tokenPath: 'v1/token',
      },
    ],
    clients: [
      { clientId: OKTA.client, clientSecret: OKTA_SECRET, audience: 'api://default' },
      { clientId: AUTH0.client, clientSecret: AUTH0_SECRET, audience: AUTH0.api },
    ],
  })
})
afterAll(async () => {
  await kit.close()
})

/** A fetch that sends `https://{host}/…` to the test issuer and refuses any other address. */
function providerFetch(host: string) {
  const requested: string[] = []
  const fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input))
    requested.push(`${init?.method ?? 'GET'} ${url.href}`)
    if (url.origin !== `https://${host}`) {
      return Promise.reject(new Error(`unexpected address ${url.href}`))
    }
    return globalThis.fetch(`${kit.url}${url.pathname}${url.search}`, init)
  }
  return { fetch, requested }
}

async function obtainAndCheck(
  issuers: IssuerOptions[],
  host: string,
  credentials: { clientId: string; clientSecret: string },
  keysPath: string,
) {
  const { fetch, requested } = providerFetch(host)
  const source = createTokenSource({
    issuer: issuers,
    discovery: true,
    ...credentials,
    fetch: fetch as typeof globalThis.fetch,
  })
  const gate = providerGate(kit, issuers, {}, `${kit.url}${keysPath}`)
  try {
    const token = await source.get()
    return { token, requested, result: await gate.check(token), fetched: gate.fetched }
  } finally {
    source.close()
    await gate.close()
  }
}

describe('a token source on a provider profile, through discovery', () => {
  it('okta(): obtains a token at {issuer}/v1/token that the okta() gate admits', async () => {
    const { requested, result, fetched } = await obtainAndCheck(
      okta({ domain: OKTA.domain }),
      OKTA.domain,
      { clientId: OKTA.client, clientSecret: OKTA_SECRET },
      '/oauth2/default/v1/keys',
    )
    expect(requested).toEqual([
      'GET https://acme.okta.com/oauth2/default/.well-known/openid-configuration',
      'POST https://acme.okta.com/oauth2/default/v1/token',
    ])
    expect(result.reason).toBeUndefined()
    expect(result.auth?.issuer).toBe(OKTA.issuer)
    expect(fetched).toEqual(['https://acme.okta.com/oauth2/default/v1/keys'])
  })

  it("auth0(): discovery under the issuer's trailing slash, a token at /oauth/token that the auth0() gate admits", async () => {
    const { requested, result, fetched } = await obtainAndCheck(
      auth0({ domain: AUTH0.domain, audience: AUTH0.api }),
      AUTH0.domain,
      { clientId: AUTH0.client, clientSecret: AUTH0_SECRET },
      '/.well-known/jwks.json',
    )
    expect(requested).toEqual([
      'GET https://acme.eu.auth0.com/.well-known/openid-configuration',
      'POST https://acme.eu.auth0.com/oauth/token',
    ])
    expect(result.reason).toBeUndefined()
    expect(result.auth?.issuer).toBe(AUTH0.issuer)
    expect(result.auth?.clientId).toBe(AUTH0.client)
    expect(fetched).toEqual(['https://acme.eu.auth0.com/.well-known/jwks.json'])
  })

  it('refuses a discovery document that names another issuer, and asks for no token', async () => {
    const { fetch, requested } = providerFetch(OKTA.domain)
    const source = createTokenSource({
      issuer: okta({ domain: OKTA.domain, authServer: 'aus9other0' }),
      discovery: true,
      clientId: OKTA.client,
      clientSecret: OKTA_SECRET,
      fetch: fetch as typeof globalThis.fetch,
    })
    kit.resetCounts()
    try {
      const error = await source.get().then(
        () => undefined,
        (caught: unknown) => caught,
      )
      // The document is the okta() one above but for its issuer: that is what is refused.
      expect(error).toMatchObject({
        name: 'TokenSourceError',
        code: 'ERR_TOKEN_RESPONSE_INVALID',
        retryable: false,
        issuer: 'https://acme.okta.com/oauth2/aus9other0',
        status: undefined,
      })
      expect(kit.discoveryCount('impostor')).toBe(1)
      expect(requested).toEqual([
        'GET https://acme.okta.com/oauth2/aus9other0/.well-known/openid-configuration',
      ])
    } finally {
      source.close()
    }
  })
})
