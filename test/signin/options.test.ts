import { describe, expect, it } from 'vitest'

import { auth0, okta } from '../../src/index.js'
import { createSignIn, fromEnv, keycloak, type SignInOptions } from '../../src/signin/index.js'
import { normalizeSignInOptions } from '../../src/signin/options.js'

const SECRET = 'options-secret-Kp3sW9-must-never-be-printed'
const base: SignInOptions = {
  issuer: keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' }),
  clientId: 'office-web',
  clientSecret: SECRET,
  baseUrl: 'https://office.example.com',
  keys: fromEnv('SIGNIN_KEYS'),
}

function messageOf(options: unknown): string {
  try {
    createSignIn(options as SignInOptions)
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError)
    return (error as Error).message
  }
  throw new Error('accepted')
}

describe('createSignIn options', () => {
  it('names what works for an issuer that is not a Keycloak realm: discovery, not tokenEndpoint', () => {
    const issuer = 'https://login.example.com/tenant-1'
    const message = messageOf({ ...base, issuer })
    expect(message).toBe(
      'createSignIn(options): "issuer" is not a Keycloak realm (…/realms/{realm}); give "discovery: true" ' +
        "to read the provider's endpoints from its discovery document, or keycloak({ authUrl, realm })",
    )
    expect(message).not.toContain('tokenEndpoint')
    // The hint, followed, is accepted.
    expect(createSignIn({ ...base, issuer, discovery: true }).redirectUri).toBe(
      'https://office.example.com/auth/callback',
    )
    expect(createSignIn({ ...base, issuer: { issuer, discovery: true } }).redirectUri).toBe(
      'https://office.example.com/auth/callback',
    )
  })

  it.each([
    ['auth0()', auth0({ domain: 'tenant.example.com', audience: 'https://api.example.com' })],
    ['okta()', okta({ domain: 'org.example.com' })],
  ])('takes the issuer %s builds, with discovery', (_name, issuer) => {
    expect(createSignIn({ ...base, issuer, discovery: true }).redirectUri).toBe(
      'https://office.example.com/auth/callback',
    )
  })

  it('accepts the minimum: provider, client, baseUrl and a key ring from the environment', () => {
    expect(createSignIn(base).redirectUri).toBe('https://office.example.com/auth/callback')
  })

  it.each([
    ['an unknown option', { ...base, cookie: {} }, '"cookie" is not an option'],
    ['no clientId', { ...base, clientId: undefined }, '"clientId" must be a non-empty string'],
    [
      'no client secret',
      { ...base, clientSecret: undefined },
      '"clientSecret" or "privateKey" is required',
    ],
    [
      'a baseUrl with a path',
      { ...base, baseUrl: 'https://office.example.com/app' },
      '"baseUrl" must be an origin',
    ],
    [
      'a baseUrl over plain http',
      { ...base, baseUrl: 'http://office.example.com' },
      '"baseUrl" must be https',
    ],
    [
      'a key ring written in code',
      { ...base, keys: 'k1=c2VjcmV0' },
      '"keys" must not be written in code',
    ],
    ['no key ring', { ...base, keys: undefined }, '"keys" must be'],
    ['a scope without openid', { ...base, scope: 'profile email' }, '"scope" must include openid'],
    [
      'a route with a query',
      { ...base, routes: { login: '/login?x=1' } },
      '"routes.login" must be a path',
    ],
    [
      'two routes on one path',
      { ...base, routes: { login: '/auth', logout: '/auth' } },
      '"routes" must be five different paths',
    ],
    [
      'a product resource that is not a URI',
      { ...base, products: { office: { resource: 'office' } } },
      '"products.office.resource"',
    ],
    [
      'an idle timeout of 10 s',
      { ...base, session: { idleTimeoutSeconds: 10 } },
      '"session.idleTimeoutSeconds" must be a whole number from 60',
    ],
    [
      'an absolute timeout below the idle one',
      { ...base, session: { idleTimeoutSeconds: 3600, absoluteTimeoutSeconds: 600 } },
      '"session.absoluteTimeoutSeconds" must not be below',
    ],
    [
      'a cookie name with a space',
      { ...base, session: { cookieName: 'my sid' } },
      '"session.cookieName"',
    ],
    [
      'a non-Secure cookie off loopback',
      { ...base, session: { secureCookie: false } },
      '"session.secureCookie" may be false only',
    ],
    ['a store that is not one', { ...base, store: {} }, '"store" must be a session store'],
    [
      'an unknown refresh option',
      { ...base, refresh: { early: true } },
      '"refresh.early" is not an option',
    ],
    [
      'a refresh lock a refresh could outlast',
      { ...base, timeoutMs: 5000, refresh: { lockMs: 15_000 } },
      '"refresh.lockMs" must exceed 3 × timeoutMs (15000): a refresh must end within its lock',
    ],
    [
      'ID token algorithms that are not an array',
      { ...base, idTokenAlgorithms: 'RS256' },
      '"idTokenAlgorithms" must be a non-empty array of RS256, RS384',
    ],
    [
      'the ID token algorithm none',
      { ...base, idTokenAlgorithms: ['RS256', 'none'] },
      '"idTokenAlgorithms[1]" must be one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519, HS256, HS384, HS512 (got \'none\')',
    ],
    [
      'HMAC and asymmetric ID token algorithms together',
      { ...base, idTokenAlgorithms: ['HS256', 'RS256'] },
      '"idTokenAlgorithms" must list HS256, HS384 and HS512 alone or not at all',
    ],
    [
      'HMAC ID token algorithms for a client without a secret',
      {
        ...base,
        clientSecret: undefined,
        privateKey: fromEnv('OFFICE_WEB_KEY'),
        idTokenAlgorithms: ['HS512'],
      },
      '"idTokenAlgorithms" may list HS256, HS384 or HS512 only with a clientSecret',
    ],
  ])('refuses %s, naming the option', (_case, options, expected) => {
    const message = messageOf(options)
    expect(message.startsWith('createSignIn(options): ')).toBe(true)
    expect(message).toContain(expected)
    expect(message).not.toContain(SECRET)
  })

  it('takes a refresh lock just longer than three requests (discovery, token, keys)', () => {
    expect(() =>
      createSignIn({ ...base, timeoutMs: 5000, refresh: { lockMs: 15_001 } }),
    ).not.toThrow()
  })

  it('defaults the refresh lock to 3 × timeoutMs + 5000', () => {
    expect(() => createSignIn({ ...base, timeoutMs: 20_000 })).not.toThrow()
    expect(normalizeSignInOptions({ ...base, timeoutMs: 5000 }).lockMs).toBe(20_000)
    expect(normalizeSignInOptions(base).lockMs).toBe(
      3 * normalizeSignInOptions(base).client.timeoutMs + 5000,
    )
  })

  it('allows a non-Secure cookie for a baseUrl of http on loopback (local development)', () => {
    expect(() =>
      createSignIn({ ...base, baseUrl: 'http://127.0.0.1:3000', session: { secureCookie: false } }),
    ).not.toThrow()
  })

  it('accepts asymmetric ID token algorithms by default, and HMAC ones only when listed alone', () => {
    expect(normalizeSignInOptions(base)).toMatchObject({
      idTokenAlgorithms: [
        'RS256',
        'RS384',
        'RS512',
        'PS256',
        'PS384',
        'PS512',
        'ES256',
        'ES384',
        'ES512',
        'EdDSA',
        'Ed25519',
      ],
      idTokenHmac: false,
    })
    expect(
      normalizeSignInOptions({ ...base, idTokenAlgorithms: ['HS512', 'HS256'] }),
    ).toMatchObject({ idTokenAlgorithms: ['HS512', 'HS256'], idTokenHmac: true })
    expect(normalizeSignInOptions({ ...base, idTokenAlgorithms: ['ES256'] })).toMatchObject({
      idTokenAlgorithms: ['ES256'],
      idTokenHmac: false,
    })
  })

  it('never repeats a secret given by mistake in another option', () => {
    expect(messageOf({ ...base, clientId: 42, privateKeyId: SECRET })).not.toContain(SECRET)
    expect(messageOf({ ...base, baseUrl: SECRET })).not.toContain(SECRET)
  })
})
