/** Option validation of createTokenSource(): a hostile-input table, messages as the contract. */
import { describe, expect, it } from 'vitest'

import { createTokenSource, fromEnv, type TokenSourceOptions } from '../../src/client/index.js'
import { normalizeTokenSourceOptions } from '../../src/client/options.js'
import { auth0, cognito, entra, keycloak, okta } from '../../src/index.js'

const SECRET = 'a-secret-that-must-not-appear-in-any-message'
const base = {
  issuer: keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] }),
  clientId: 'billing-sync',
  clientSecret: SECRET,
}

function messageOf(options: unknown): string {
  try {
    createTokenSource(options as TokenSourceOptions)
  } catch (error) {
    return (error as Error).message
  }
  return 'no error'
}

describe('createTokenSource(options)', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown option', { scopes: 'a' }, '"scopes" is not an option'],
    ['no issuer', { issuer: undefined }, '"issuer" must be an issuer URL'],
    [
      'two realms',
      { issuer: keycloak({ authUrl: 'https://sso.example.com', realms: ['a', 'b'] }) },
      '"issuer" must name exactly one issuer',
    ],
    [
      'a non-Keycloak issuer without endpoint',
      { issuer: 'https://sso.example.com' },
      'give "tokenEndpoint" or "discovery: true"',
    ],
    [
      'http to another host',
      { issuer: 'http://sso.example.com/realms/acme' },
      '"issuer" must be https',
    ],
    [
      'an issuer with a query',
      { issuer: 'https://sso.example.com/realms/acme?x=1' },
      'must not have a query',
    ],
    [
      'an issuer with credentials',
      { issuer: 'https://u:p@sso.example.com/realms/acme' },
      'must not carry credentials',
    ],
    [
      'an endpoint and discovery',
      { tokenEndpoint: 'https://sso.example.com/token', discovery: true },
      'exclude each other',
    ],
    ['an empty client id', { clientId: '' }, '"clientId" must be a non-empty string'],
    ['a numeric client id', { clientId: 42 }, '"clientId" must be a non-empty string'],
    ['no secret or key', { clientSecret: undefined }, '"clientSecret" or "privateKey" is required'],
    ['an empty secret', { clientSecret: '' }, '"clientSecret" must be a non-empty string'],
    ['a numeric secret', { clientSecret: 1234 }, '"clientSecret" must be a non-empty string'],
    ['a secret and a key', { privateKey: 'pem' }, 'exclude each other'],
    ['an unknown auth method', { clientAuth: 'client_secret_jwt' }, '"clientAuth" must be one of'],
    ['private_key_jwt without a key', { clientAuth: 'private_key_jwt' }, 'needs "privateKey"'],
    ['a scope with a quote', { scope: 'a"b' }, '"scope" must be a space-separated string'],
    [
      'a scope array with a number',
      { scope: ['a', 1] },
      '"scope" must be a space-separated string',
    ],
    ['a relative resource', { resource: '/office' }, '"resource" must hold absolute URIs'],
    [
      'a resource with a fragment',
      { resource: 'https://office.example.com/#x' },
      '"resource" must hold absolute URIs',
    ],
    ['an empty audience', { audience: '' }, '"audience" must be a non-empty string'],
    [
      'renewal at 1',
      { renewal: { atFraction: 1 } },
      '"renewal.atFraction" must be a number from 0 to below 1',
    ],
    ['renewal at 0', { renewal: { atFraction: 0 } }, '"renewal.atFraction" must be above 0'],
    [
      'jitter above renewal',
      { renewal: { atFraction: 0.5, jitterFraction: 0.6 } },
      '"renewal.jitterFraction" must be below',
    ],
    [
      'a negative margin',
      { renewal: { expiryMarginSeconds: -1 } },
      '"renewal.expiryMarginSeconds" must be a whole number',
    ],
    [
      'zero attempts',
      { retry: { attempts: 0 } },
      '"retry.attempts" must be a whole number from 1 to 10',
    ],
    [
      'a fractional delay',
      { retry: { baseDelayMs: 1.5 } },
      '"retry.baseDelayMs" must be a whole number',
    ],
    ['a tiny timeout', { timeoutMs: 1 }, '"timeoutMs" must be a whole number from 100'],
    [
      'a node-redis client',
      { sharedCache: { redis: { get() {} } } },
      '"sharedCache.redis" must be an ioredis',
    ],
    [
      'a prefix with braces',
      { sharedCache: { redis: { status: 'ready', defineCommand() {} }, keyPrefix: 'a{b}' } },
      '"sharedCache.keyPrefix"',
    ],
    [
      'a renewal lock shorter than one request',
      {
        timeoutMs: 20_000,
        sharedCache: { redis: { status: 'ready', defineCommand() {} }, lockMs: 10_000 },
      },
      '"sharedCache.lockMs" must be a whole number from 20000',
    ],
    [
      'a shared refresh token',
      { refreshToken: 'rt', sharedCache: { redis: { status: 'ready', defineCommand() {} } } },
      'works with Client Credentials sources only',
    ],
    [
      'onRefreshToken without refresh token',
      { onRefreshToken: () => {} },
      '"onRefreshToken" needs "refreshToken"',
    ],
    ['a clock without now', { clock: {} }, '"clock" must be an object with a now() method'],
    ['a string listener', { onEvent: 'log' }, '"onEvent" must be a function'],
  ])('refuses %s', (_case, override, expected) => {
    const message = messageOf({ ...base, ...override })
    expect(message).toMatch(/^createTokenSource\(options\): /)
    expect(message).toContain(expected)
    expect(message).not.toContain(SECRET)
  })

  it.each([null, 0, 'x', [], true])('refuses %j as options', (value) => {
    expect(messageOf(value)).toMatch(/^createTokenSource\(options\): "options" must be an object/)
  })

  it('accepts http to loopback without an opt-in', () => {
    expect(messageOf({ ...base, issuer: 'http://127.0.0.1:8080/realms/acme' })).toBe('no error')
  })

  it('accepts http to another host only with allowInsecureHttp, and warns', async () => {
    const warnings: string[] = []
    const listener = (warning: Error & { code?: string }) => warnings.push(warning.code ?? '')
    process.on('warning', listener)
    try {
      const issuer = 'http://sso.internal/realms/acme'
      expect(messageOf({ ...base, issuer, allowInsecureHttp: true })).toBe('no error')
      await new Promise<void>((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', listener)
    }
    expect(warnings).toContain('TOLLGATE_INSECURE_HTTP')
  })

  it('holds the renewal lock by default as long as a renewal can take, retries included', () => {
    const redis = { status: 'ready', defineCommand() {} }
    const lockMs = (options: Record<string, unknown>) =>
      normalizeTokenSourceOptions({ ...base, sharedCache: { redis }, ...options }).sharedCache
        ?.lockMs
    // 3 attempts of 10 s, and retry delays of at most 200 and 400 ms between them.
    expect(lockMs({})).toBe(30_600)
    expect(lockMs({ timeoutMs: 1000, retry: { attempts: 1 } })).toBe(10_000)
    expect(lockMs({ timeoutMs: 60_000 })).toBe(120_000)
  })

  it('does not read the environment at construction', () => {
    expect(messageOf({ ...base, clientSecret: fromEnv('TOLLGATE_TEST_NEVER_SET') })).toBe(
      'no error',
    )
  })
})

describe('createTokenSource with a provider profile', () => {
  it.each([
    ['auth0()', auth0({ domain: 'tenant.example.com', audience: 'https://api.example.com' })],
    ['okta()', okta({ domain: 'org.example.com' })],
    ['entra()', entra({ tenant: '72f988bf-86f1-41af-91ab-2d7cd011db47', audience: 'api://app' })],
    [
      'cognito()',
      cognito({ region: 'eu-west-1', userPoolId: 'eu-west-1_AbC123', clientIds: ['c1'] }),
    ],
  ])('takes the issuer %s builds, with discovery', (_name, issuer) => {
    const source = createTokenSource({ ...base, issuer, discovery: true })
    source.close()
  })

  it('refuses a profile of several tenants: one issuer per token source', () => {
    const issuer = entra({
      tenants: ['72f988bf-86f1-41af-91ab-2d7cd011db47', '0a6f8e2c-1111-4c3a-9d2e-3b4a5c6d7e8f'],
      audience: 'api://app',
    })
    expect(messageOf({ ...base, issuer, discovery: true })).toContain(
      '"issuer" must name exactly one issuer',
    )
  })
})

describe('get(parameters)', () => {
  it.each<[string, unknown, string]>([
    ['an unknown parameter', { scopes: 'a' }, '"parameters.scopes" is not an option'],
    ['a bad scope', { scope: 'a\\b' }, '"scope" must be a space-separated string'],
    ['a bad resource', { resource: 'office' }, '"resource" must hold absolute URIs'],
    ['a string', 'scope', '"parameters" must be an object'],
  ])('refuses %s with a TypeError', async (_case, parameters, expected) => {
    const source = createTokenSource(base)
    expect(() => source.get(parameters as never)).toThrow(
      new RegExp(`^get\\(parameters\\): .*${expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    )
  })
})

describe('fromEnv(name)', () => {
  it.each(['', '1ABC', 'A-B', 'A B', 'x'.repeat(300)])('refuses the name %j', (name) => {
    expect(() => fromEnv(name)).toThrow(
      /^fromEnv\(name\): "name" must be an environment variable name/,
    )
  })
})
