/**
 * Attack class: configuration. Unsafe or unbounded options are refused when the gate is built
 * (`createGate`, and both adapters' `tollgate()`), with a TypeError naming the option, never at
 * the first request and never by quietly falling back to a default. Options cannot be changed
 * after construction by mutating the objects passed in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import { createGate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

const ISSUER = 'https://sso.example.com/realms/acme'
const JWKS = `${ISSUER}/protocol/openid-connect/certs`
const BASE = { issuers: [{ issuer: ISSUER, jwksUri: JWKS }], audience: 'gateway' }

/** Builds the gate every way a user can; each must throw a TypeError at once. */
const BUILDERS: Array<[string, (options: unknown) => unknown]> = [
  ['createGate', (options) => createGate(options as GateOptions)],
  ['express tollgate()', (options) => expressAdapter.tollgate(options as GateOptions)],
  ['koa tollgate()', (options) => koaAdapter.tollgate(options as GateOptions)],
]

const with_ = (extra: Record<string, unknown>) => ({ ...BASE, ...extra })

const refused: Array<[string, unknown]> = [
  // Who is trusted
  ['no options', undefined],
  ['null options', null],
  ['an empty object', {}],
  ['no issuers', { audience: 'gateway' }],
  ['an empty issuer list', with_({ issuers: [] })],
  ['issuers as a string', with_({ issuers: ISSUER })],
  ['an issuer without its iss', with_({ issuers: [{ jwksUri: JWKS }] })],
  ['an empty iss', with_({ issuers: [{ issuer: '', jwksUri: JWKS }] })],
  ['an issuer with neither jwksUri nor discovery', with_({ issuers: [{ issuer: ISSUER }] })],
  [
    'an issuer with both jwksUri and discovery',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: JWKS, discovery: true }] }),
  ],
  [
    'the same issuer twice',
    with_({
      issuers: [
        { issuer: ISSUER, jwksUri: JWKS },
        { issuer: ISSUER, jwksUri: JWKS },
      ],
    }),
  ],
  // Where keys come from
  [
    'a plain-http jwksUri on a remote host',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: 'http://sso.example.com/certs' }] }),
  ],
  [
    'plain-http discovery on a remote host',
    with_({ issuers: [{ issuer: 'http://sso.example.com/realms/acme', discovery: true }] }),
  ],
  [
    'an ftp jwksUri',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: 'ftp://sso.example.com/certs' }] }),
  ],
  ['a file jwksUri', with_({ issuers: [{ issuer: ISSUER, jwksUri: 'file:///etc/passwd' }] })],
  [
    'a data: jwksUri',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: 'data:application/json,{"keys":[]}' }] }),
  ],
  [
    'a javascript: jwksUri',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: 'javascript:alert(1)' }] }),
  ],
  [
    'a relative jwksUri',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: '/protocol/openid-connect/certs' }] }),
  ],
  [
    'a jwksUri with credentials',
    with_({
      issuers: [{ issuer: ISSUER, jwksUri: 'https://admin:hunter2@sso.example.com/certs' }],
    }),
  ],
  [
    'a jwksUri that is not a URL',
    with_({ issuers: [{ issuer: ISSUER, jwksUri: 'sso.example.com/certs' }] }),
  ],
  ['a jwks.fetch that is not a function', with_({ jwks: { fetch: 'fetch' } })],
  // Who the tokens are for
  ['no audience', { issuers: BASE.issuers }],
  ['an empty audience', with_({ audience: '' })],
  ['an empty audience list', with_({ audience: [] })],
  ['an audience list with an empty string', with_({ audience: ['gateway', ''] })],
  ['an audience that is not a string', with_({ audience: [42] })],
  // Algorithms (RFC 8725 §3.1–3.2)
  ['algorithm none', with_({ algorithms: ['none'] })],
  ['algorithm NONE', with_({ algorithms: ['NONE'] })],
  ['algorithm HS256', with_({ algorithms: ['HS256'] })],
  ['algorithm HS384', with_({ algorithms: ['HS384'] })],
  ['algorithm HS512', with_({ algorithms: ['HS512'] })],
  ['HS256 next to RS256', with_({ algorithms: ['RS256', 'HS256'] })],
  ['an empty algorithm list', with_({ algorithms: [] })],
  ['algorithms as a string', with_({ algorithms: 'none' })],
  ['an unknown algorithm (ES256K)', with_({ algorithms: ['ES256K'] })],
  ['an algorithm name with a space', with_({ algorithms: ['RS256 '] })],
  ['a lower-case algorithm name', with_({ algorithms: ['rs256'] })],
  ['an encryption algorithm', with_({ algorithms: ['RSA-OAEP'] })],
  // Unbounded or absurd limits
  ['cache.maxEntries Infinity', with_({ cache: { maxEntries: Number.POSITIVE_INFINITY } })],
  ['cache.maxEntries 0', with_({ cache: { maxEntries: 0 } })],
  ['cache.maxEntries a billion', with_({ cache: { maxEntries: 1e9 } })],
  ['cache.maxTtlSeconds Infinity', with_({ cache: { maxTtlSeconds: Number.POSITIVE_INFINITY } })],
  ['cache.maxTtlSeconds 0', with_({ cache: { maxTtlSeconds: 0 } })],
  ['cache as true', with_({ cache: true })],
  ['jwks.maxBodyBytes Infinity', with_({ jwks: { maxBodyBytes: Number.POSITIVE_INFINITY } })],
  ['jwks.maxBodyBytes a terabyte', with_({ jwks: { maxBodyBytes: 1e12 } })],
  ['jwks.timeoutMs 0', with_({ jwks: { timeoutMs: 0 } })],
  ['jwks.timeoutMs Infinity', with_({ jwks: { timeoutMs: Number.POSITIVE_INFINITY } })],
  ['jwks.timeoutMs a day', with_({ jwks: { timeoutMs: 86_400_000 } })],
  ['jwks.cooldownMs negative', with_({ jwks: { cooldownMs: -1 } })],
  ['jwks.cooldownMs NaN', with_({ jwks: { cooldownMs: Number.NaN } })],
  ['jwks.maxAgeMs 0', with_({ jwks: { maxAgeMs: 0 } })],
  ['jwks.maxAgeMs Infinity', with_({ jwks: { maxAgeMs: Number.POSITIVE_INFINITY } })],
  [
    'jwks.staleIfErrorMs Infinity (stale keys forever)',
    with_({ jwks: { staleIfErrorMs: Number.POSITIVE_INFINITY } }),
  ],
  ['jwks.staleIfErrorMs a year', with_({ jwks: { staleIfErrorMs: 31_536_000_000 } })],
  ['maxTokenBytes Infinity', with_({ maxTokenBytes: Number.POSITIVE_INFINITY })],
  ['maxTokenBytes a gigabyte', with_({ maxTokenBytes: 1e9 })],
  ['maxTokenBytes 0', with_({ maxTokenBytes: 0 })],
  // Time
  ['clockToleranceSeconds an hour', with_({ clockToleranceSeconds: 3600 })],
  ['clockToleranceSeconds negative', with_({ clockToleranceSeconds: -1 })],
  ['clockToleranceSeconds NaN', with_({ clockToleranceSeconds: Number.NaN })],
  ['clockToleranceSeconds Infinity', with_({ clockToleranceSeconds: Number.POSITIVE_INFINITY })],
  ['clockToleranceSeconds as a string', with_({ clockToleranceSeconds: '5' })],
  ['maxTokenAgeSeconds 0', with_({ maxTokenAgeSeconds: 0 })],
  ['maxTokenAgeSeconds Infinity', with_({ maxTokenAgeSeconds: Number.POSITIVE_INFINITY })],
  // Shape of answers and behaviour
  ['a realm with a double quote', with_({ realm: 'api", error="x' })],
  ['a realm with a backslash', with_({ realm: 'a\\b' })],
  ['a realm with CRLF', with_({ realm: 'api\r\nSet-Cookie: x=1' })],
  ['an empty realm', with_({ realm: '' })],
  ['an unknown tokenProfile', with_({ tokenProfile: 'id' })],
  ['credentialsRequired as a string', with_({ credentialsRequired: 'false' })],
  ['errorHandling unknown', with_({ errorHandling: 'ignore' })],
  ['skip that is not a function', with_({ skip: true })],
  ['onEvent that is not a function', with_({ onEvent: 'log' })],
  // Options from other libraries that would silently weaken checks if accepted and ignored
  ['jsonwebtoken-style ignoreExpiration', with_({ ignoreExpiration: true })],
  ['jsonwebtoken-style algorithm (singular)', with_({ algorithm: 'HS256' })],
  ['express-jwt-style secret', with_({ secret: 'shhh' })],
  ['a misspelled audience option', with_({ audiences: ['gateway'] })],
  ['a misspelled clock tolerance', with_({ clockTolerance: 3600 })],
  // Tenants and limits
  [
    'rateLimit without tenant',
    with_({ rateLimit: { windows: [{ points: 10, durationSeconds: 1 }] } }),
  ],
  ['a tenant idPattern that is not anchored', with_({ tenant: { idPattern: /[a-z]+/ } })],
  ['a tenant idPattern with the g flag', with_({ tenant: { idPattern: /^[a-z]+$/g } })],
  ['a tenant claim path through __proto__', with_({ tenant: { claim: '__proto__.tenant' } })],
  [
    'a rate-limit window of 0 points',
    with_({ tenant: {}, rateLimit: { windows: [{ points: 0, durationSeconds: 1 }] } }),
  ],
  [
    'a rate-limit window of Infinity points',
    with_({
      tenant: {},
      rateLimit: { windows: [{ points: Number.POSITIVE_INFINITY, durationSeconds: 1 }] },
    }),
  ],
  [
    'a rate-limit window of 0 seconds',
    with_({ tenant: {}, rateLimit: { windows: [{ points: 1, durationSeconds: 0 }] } }),
  ],
  ['no rate-limit windows', with_({ tenant: {}, rateLimit: { windows: [] } })],
]

describe.each(BUILDERS)('%s refuses unsafe options at construction', (_builder, build) => {
  it.each(refused)('refuses %s', (_name, options) => {
    expect(() => build(options)).toThrow(TypeError)
  })
})

describe('option errors', () => {
  it('never quote a secret from a jwksUri', () => {
    let message = ''
    try {
      createGate(
        with_({
          issuers: [{ issuer: ISSUER, jwksUri: 'https://admin:hunter2@sso.example.com/certs' }],
        }) as GateOptions,
      )
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toMatch(/jwksUri/)
    expect(message).not.toContain('hunter2')
  })

  const messageOf = (build: (options: unknown) => unknown, options: unknown): string => {
    try {
      build(options)
    } catch (error) {
      return (error as Error).message
    }
    return 'no error'
  }

  // Each secret sits where a careless configuration could put it; none may reach a message.
  const secretBearing: Array<[string, unknown]> = [
    [
      'a jwksUri with a password',
      with_({
        issuers: [{ issuer: ISSUER, jwksUri: 'https://admin:hunter2@sso.example.com/certs' }],
      }),
    ],
    [
      'a jwksUri with a key in its query',
      with_({ issuers: [{ issuer: ISSUER, jwksUri: 'http://sso.example.com/certs?key=hunter2' }] }),
    ],
    [
      'a keycloak() authUrl with a password',
      with_({
        issuers: keycloak({ authUrl: 'https://admin:hunter2@sso.example.com', realm: 'a' }),
      }),
    ],
    [
      'a discovery issuer with a password',
      with_({ issuers: [{ issuer: 'https://admin:hunter2@sso.example.com', discovery: true }] }),
    ],
    ['a short DPoP nonce secret', with_({ dpop: { nonce: { secret: 'hunter2' } } })],
    [
      'a DPoP publicBaseUrl with a password',
      with_({ dpop: { mode: 'allowed', publicBaseUrl: 'https://u:hunter2@api.example.com' } }),
    ],
    [
      'a metadata resource with a key in its query',
      with_({ resourceMetadata: { resource: 'https://api.example.com/?key=hunter2' } }),
    ],
    ['a Redis URL as the revocation store', with_({ revocation: { store: 'redis://:hunter2@c' } })],
    ['a secret as an audience', with_({ audience: ['gateway', { key: 'hunter2' }] })],
  ]

  describe.each(BUILDERS)('%s', (_builder, build) => {
    it.each(secretBearing)('never quotes a secret: %s', (_name, options) => {
      const message = messageOf(build, options)
      expect(message).toMatch(/^createGate\(options\): "/)
      expect(message).not.toContain('hunter2')
    })

    it.each([
      [
        'an http keycloak() authUrl, named as the issuer written through it',
        with_({ issuers: keycloak({ authUrl: 'http://sso.example.com', realms: ['acme'] }) }),
        `"issuers[0].issuer" must be https (or set jwks.allowInsecureHttp: true on a trusted network); keycloak() builds its jwksUri from it (got 'http://sso.example.com/realms/acme')`,
      ],
      [
        'a jwksUri with credentials, shown without them',
        with_({
          issuers: [{ issuer: ISSUER, jwksUri: 'https://admin:hunter2@sso.example.com/certs' }],
        }),
        `"issuers[0].jwksUri" must not carry credentials (got 'https://***@sso.example.com/certs')`,
      ],
      ['an HMAC algorithm', with_({ algorithms: ['HS256'] }), `"algorithms" may only list`],
      ['an HMAC algorithm, shown', with_({ algorithms: ['HS256'] }), `(got 'HS256')`],
      [
        'a DPoP mode',
        with_({ dpop: { mode: 'enforce' } }),
        `"dpop.mode" must be one of 'off', 'allowed', 'required' (got 'enforce')`,
      ],
      [
        'a DPoP algorithm',
        with_({ dpop: { mode: 'allowed', allowedHosts: ['a.test'], algorithms: ['none'] } }),
        `"dpop.algorithms" may only list RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA (got 'none')`,
      ],
      [
        'a tenant source',
        with_({ tenant: { from: 'claims' } }),
        `"tenant.from" must be 'claim', 'realm' or a function (got 'claims')`,
      ],
      [
        'a token profile',
        with_({ tokenProfile: 'id' }),
        `"tokenProfile" must be one of 'access', 'keycloak', 'rfc9068' (got 'id')`,
      ],
      [
        'an error handling',
        with_({ errorHandling: 'ignore' }),
        `"errorHandling" must be one of 'respond', 'framework' (got 'ignore')`,
      ],
      [
        'a rate-limit store error policy',
        with_({
          tenant: {},
          rateLimit: { windows: [{ points: 1, durationSeconds: 1 }], onStoreError: 'fail' },
        }),
        `"rateLimit.onStoreError" must be one of`,
      ],
      [
        'a rate-limit store error policy, shown',
        with_({
          tenant: {},
          rateLimit: { windows: [{ points: 1, durationSeconds: 1 }], onStoreError: 'fail' },
        }),
        `(got 'fail')`,
      ],
      [
        'a metadata resource',
        with_({ resourceMetadata: { resource: 'http://api.example.com/' } }),
        `"resourceMetadata.resource" must be an https URL (http only on loopback) without credentials, query or fragment (got 'http://api.example.com/')`,
      ],
      [
        'a metadata authorization server the gate does not trust',
        with_({
          resourceMetadata: {
            resource: 'https://api.example.com/',
            authorizationServers: ['https://evil.example.com'],
          },
        }),
        `"resourceMetadata.authorizationServers" may only list configured issuers (got 'https://evil.example.com')`,
      ],
    ])(
      'names the option written and shows a value that is not secret: %s',
      (_name, options, text) => {
        expect(messageOf(build, options)).toContain(text)
      },
    )
  })

  it.each([
    ['algorithms', with_({ algorithms: ['HS256'] })],
    ['clockToleranceSeconds', with_({ clockToleranceSeconds: 3600 })],
    ['cache.maxEntries', with_({ cache: { maxEntries: Number.POSITIVE_INFINITY } })],
    ['jwks.staleIfErrorMs', with_({ jwks: { staleIfErrorMs: Number.POSITIVE_INFINITY } })],
    ['ignoreExpiration', with_({ ignoreExpiration: true })],
  ])('names the option (%s)', (name, options) => {
    expect(() => createGate(options as GateOptions)).toThrow(name)
  })

  it.each([
    ['keycloak() without a scheme', { authUrl: 'sso.example.com', realms: ['acme'] }],
    ['keycloak() with ftp', { authUrl: 'ftp://sso.example.com', realms: ['acme'] }],
    ['keycloak() with a query', { authUrl: 'https://sso.example.com/?x=1', realms: ['acme'] }],
    ['keycloak() with no realms', { authUrl: 'https://sso.example.com', realms: [] }],
    [
      'keycloak() with a traversal realm',
      { authUrl: 'https://sso.example.com', realms: ['../admin'] },
    ],
    [
      'keycloak() with a realm containing a slash',
      { authUrl: 'https://sso.example.com', realms: ['a/b'] },
    ],
    ['keycloak() with an empty realm', { authUrl: 'https://sso.example.com', realms: [''] }],
    [
      'keycloak() with a realm containing a query',
      { authUrl: 'https://sso.example.com', realms: ['acme?x=1'] },
    ],
  ])('refuses %s', (_name, options) => {
    expect(() => keycloak(options as never)).toThrow(TypeError)
  })

  it('accepts plain http to a remote host only when asked, and warns with a code', async () => {
    const warnings: Array<{ name: string; code?: string }> = []
    const listener = (warning: Error & { code?: string }) => warnings.push(warning)
    process.on('warning', listener)
    try {
      expect(() =>
        createGate(
          with_({
            issuers: [
              { issuer: 'http://sso.internal/realms/acme', jwksUri: 'http://sso.internal/certs' },
            ],
            jwks: { allowInsecureHttp: true },
          }) as GateOptions,
        ),
      ).not.toThrow()
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', listener)
    }
    expect(warnings.map((warning) => warning.code)).toContain('TOLLGATE_INSECURE_KEY_URL')
  })
})

describe('options cannot be changed after construction', () => {
  let issuer: TestIssuer
  beforeAll(async () => {
    issuer = await createTestIssuer({ realms: ['acme', 'evil'], audience: 'gateway' })
  })
  afterAll(async () => {
    await issuer.close()
  })

  it('ignores later changes to the audience, issuer and algorithm arrays passed in', async () => {
    const audience = ['gateway']
    const issuers = keycloak({ authUrl: issuer.url, realms: ['acme'] })
    const algorithms: string[] = ['RS256']
    const options = { issuers, audience, algorithms } as GateOptions
    const gate = createGate(options)
    try {
      audience.push('office')
      issuers.push(...keycloak({ authUrl: issuer.url, realms: ['evil'] }))
      algorithms.push('PS256')
    } catch {
      // Frozen input is fine too.
    }
    const office = await issuer.mint({ aud: 'office' })
    const evil = await issuer.mint({}, { realm: 'evil' })
    const ok = await issuer.mint()
    await expect(gate.check({ headers: { authorization: `Bearer ${ok}` } })).resolves.toMatchObject(
      {
        auth: { subject: 'user-1' },
      },
    )
    await expect(
      gate.check({ headers: { authorization: `Bearer ${office}` } }),
    ).rejects.toMatchObject({ status: 401 })
    await expect(
      gate.check({ headers: { authorization: `Bearer ${evil}` } }),
    ).rejects.toMatchObject({ status: 401 })
    expect(issuer.fetchCount('evil')).toBe(0)
  })
})
