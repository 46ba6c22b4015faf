import { describe, expect, it } from 'vitest'
import { type GateOptions, normalizeOptions } from '../../src/gate/options.js'
import { keycloak } from '../../src/token/issuers.js'

const ISSUERS = keycloak({ authUrl: 'https://sso.example.com', realms: ['acme'] })
const BASE: GateOptions = { issuers: ISSUERS, audience: 'gateway' }
const withOptions = (extra: Record<string, unknown>) => ({ ...BASE, ...extra }) as GateOptions

describe('normalizeOptions', () => {
  it('fills every default', () => {
    const normalized = normalizeOptions(BASE)
    expect(normalized.algorithms).toEqual(['RS256', 'PS256', 'ES256', 'EdDSA'])
    expect(normalized.realm).toBe('api')
    expect(normalized.claims).toMatchObject({
      clockToleranceSeconds: 5,
      tokenProfile: 'access',
    })
    expect(normalized.jwks).toMatchObject({
      timeoutMs: 5000,
      cooldownMs: 30_000,
      minCooldownMs: 500,
      maxAgeMs: 600_000,
      staleIfErrorMs: 3_600_000,
      maxBodyBytes: 262_144,
    })
    expect(normalized.cache).toEqual({ maxEntries: 5000, maxTtlSeconds: 300 })
    expect(normalized.credentialsRequired).toBe(true)
    expect(normalized.errorHandling).toBe('respond')
    expect(Object.isFrozen(normalized)).toBe(true)
    expect(Object.isFrozen(normalized.jwks)).toBe(true)
  })

  it('caps the default minimum cooldown at a shorter cooldown', () => {
    expect(normalizeOptions(withOptions({ jwks: { cooldownMs: 200 } })).jwks.minCooldownMs).toBe(
      200,
    )
  })

  it('reads the token lifetime bound, the keycloak profile and the client allow-list', () => {
    const { claims } = normalizeOptions(
      withOptions({
        maxTokenLifetimeSeconds: 3600,
        tokenProfile: 'keycloak',
        allowedClientIds: ['office-web', 'billing-sync'],
      }),
    )
    expect(claims.maxTokenLifetimeSeconds).toBe(3600)
    expect(claims.tokenProfile).toBe('keycloak')
    expect([...(claims.allowedClientIds ?? [])]).toEqual(['office-web', 'billing-sync'])
  })

  it('turns the cache off with false', () => {
    expect(normalizeOptions(withOptions({ cache: false })).cache).toBeUndefined()
  })

  it('reads the realm of Keycloak-shaped issuers', () => {
    const normalized = normalizeOptions(
      withOptions({
        issuers: [{ issuer: 'https://sso/realms/beta', jwksUri: 'https://sso/certs' }],
      }),
    )
    expect(normalized.issuers[0]?.realm).toBe('beta')
  })

  it.each([
    ['options not an object', null, /"options" must be an object/],
    ['no issuers', { audience: 'a' }, /"issuers" must be a non-empty array/],
    ['an empty issuer list', { issuers: [], audience: 'a' }, /"issuers" must be a non-empty array/],
    [
      'an issuer without keys',
      { issuers: [{ issuer: 'https://sso' }], audience: 'a' },
      /exactly one of jwksUri or discovery/,
    ],
    [
      'an issuer with both',
      {
        issuers: [{ issuer: 'https://sso', jwksUri: 'https://sso/k', discovery: true }],
        audience: 'a',
      },
      /exactly one/,
    ],
    ['a duplicated issuer', { issuers: [...ISSUERS, ...ISSUERS], audience: 'a' }, /listed twice/],
    [
      'an http key URL off loopback',
      { issuers: [{ issuer: 'x', jwksUri: 'http://sso.internal/certs' }], audience: 'a' },
      /must be https/,
    ],
    [
      'a key URL with credentials',
      { issuers: [{ issuer: 'x', jwksUri: 'https://u:p@sso/certs' }], audience: 'a' },
      /must not carry credentials/,
    ],
    [
      'a relative key URL',
      { issuers: [{ issuer: 'x', jwksUri: '/certs' }], audience: 'a' },
      /absolute https URL/,
    ],
    [
      'a file key URL',
      { issuers: [{ issuer: 'x', jwksUri: 'file:///etc/keys' }], audience: 'a' },
      /https URL/,
    ],
    ['no audience', { issuers: ISSUERS }, /"audience"/],
    ['an empty audience', { issuers: ISSUERS, audience: '' }, /"audience"/],
    ['an empty audience list', { issuers: ISSUERS, audience: [] }, /"audience"/],
    ['alg none', { ...BASE, algorithms: ['none'] }, /"algorithms" may only list/],
    ['alg HS256', { ...BASE, algorithms: ['HS256'] }, /"algorithms" may only list/],
    ['lowercase rs256', { ...BASE, algorithms: ['rs256'] }, /"algorithms" may only list/],
    ['an empty algorithm list', { ...BASE, algorithms: [] }, /"algorithms"/],
    [
      'a negative tolerance',
      { ...BASE, clockToleranceSeconds: -1 },
      /"clockToleranceSeconds" must be a whole number from 0 to 300/,
    ],
    ['a fractional tolerance', { ...BASE, clockToleranceSeconds: 0.5 }, /clockToleranceSeconds/],
    [
      'an infinite timeout',
      { ...BASE, jwks: { timeoutMs: Number.POSITIVE_INFINITY } },
      /"jwks.timeoutMs"/,
    ],
    ['a string cooldown', { ...BASE, jwks: { cooldownMs: '30s' } }, /"jwks.cooldownMs"/],
    [
      'an unbounded cache',
      { ...BASE, cache: { maxEntries: Number.POSITIVE_INFINITY } },
      /"cache.maxEntries"/,
    ],
    ['a zero-entry cache', { ...BASE, cache: { maxEntries: 0 } }, /"cache.maxEntries"/],
    ['a realm with a quote', { ...BASE, realm: 'a"b' }, /"realm"/],
    ['an unknown profile', { ...BASE, tokenProfile: 'id' }, /"tokenProfile"/],
    ['an unknown option', { ...BASE, audiences: ['x'] }, /"audiences" is not an option/],
    ['a non-function skip', { ...BASE, skip: true }, /"skip" must be a function/],
    ['an unknown error handling', { ...BASE, errorHandling: 'throw' }, /"errorHandling"/],
    [
      'a minimum cooldown above the cooldown',
      { ...BASE, jwks: { cooldownMs: 1000, minCooldownMs: 2000 } },
      /"jwks.minCooldownMs" must not exceed jwks.cooldownMs \(1000\)/,
    ],
    [
      'a negative minimum cooldown',
      { ...BASE, jwks: { minCooldownMs: -1 } },
      /"jwks.minCooldownMs"/,
    ],
    [
      'a zero token lifetime',
      { ...BASE, maxTokenLifetimeSeconds: 0 },
      /"maxTokenLifetimeSeconds" must be a whole number from 1 to 31536000/,
    ],
    [
      'a fractional token lifetime',
      { ...BASE, maxTokenLifetimeSeconds: 1.5 },
      /maxTokenLifetimeSeconds/,
    ],
    ['an empty client allow-list', { ...BASE, allowedClientIds: [] }, /"allowedClientIds"/],
    ['an empty client id', { ...BASE, allowedClientIds: [''] }, /"allowedClientIds"/],
    ['a client id that is not a string', { ...BASE, allowedClientIds: [1] }, /"allowedClientIds"/],
  ])('refuses %s with a TypeError that says what to change', (_, options, message) => {
    expect(() => normalizeOptions(options as unknown as GateOptions)).toThrow(TypeError)
    expect(() => normalizeOptions(options as unknown as GateOptions)).toThrow(message)
  })

  it('allows http key URLs on loopback', () => {
    expect(() =>
      normalizeOptions(
        withOptions({ issuers: keycloak({ authUrl: 'http://127.0.0.1:8080', realms: ['a'] }) }),
      ),
    ).not.toThrow()
  })

  it('allows plain http off loopback only when asked, with a warning', () => {
    const options = withOptions({
      issuers: [{ issuer: 'x', jwksUri: 'http://sso.internal/certs' }],
      jwks: { allowInsecureHttp: true },
    })
    expect(() => normalizeOptions(options)).not.toThrow()
  })
})

describe('normalizeOptions messages', () => {
  const messageOf = (options: unknown): string => {
    try {
      normalizeOptions(options as GateOptions)
    } catch (error) {
      return (error as Error).message
    }
    return 'no error'
  }

  it('names the issuer, not a jwksUri the app never wrote, when keycloak() was given plain http', () => {
    const issuers = keycloak({ authUrl: 'http://sso.internal', realms: ['acme'] })
    const message = messageOf({ issuers, audience: 'a' })
    expect(message).toContain('"issuers[0].issuer" must be https')
    expect(message).toContain("(got 'http://sso.internal/realms/acme')")
    expect(message).not.toContain('issuers[0].jwksUri')
  })

  it('names the issuer of a keycloak() authUrl with credentials, and hides them', () => {
    const issuers = keycloak({ authUrl: 'https://admin:hunter2@sso.internal', realms: ['acme'] })
    const message = messageOf({ issuers, audience: 'a' })
    expect(message).toBe(
      `createGate(options): "issuers[0].issuer" must not carry credentials; keycloak() builds its jwksUri from it (got 'https://***@sso.internal/realms/acme')`,
    )
  })

  it('still names a jwksUri the app wrote itself', () => {
    const message = messageOf({
      issuers: [
        { issuer: 'http://sso.internal/realms/acme', jwksUri: 'http://sso.internal/certs' },
      ],
      audience: 'a',
    })
    expect(message).toContain(`"issuers[0].jwksUri" must be https`)
    expect(message).toContain(`(got 'http://sso.internal/certs')`)
  })

  it.each([
    [
      'a key URL off loopback',
      { issuers: [{ issuer: 'x', jwksUri: 'http://sso.internal/certs' }], audience: 'a' },
      `"issuers[0].jwksUri" must be https (or set jwks.allowInsecureHttp: true on a trusted network) (got 'http://sso.internal/certs')`,
    ],
    [
      'a key URL with credentials and a query',
      { issuers: [{ issuer: 'x', jwksUri: 'https://u:hunter2@sso/certs?key=k' }], audience: 'a' },
      `"issuers[0].jwksUri" must not carry credentials (got 'https://***@sso/certs?…')`,
    ],
    [
      'a relative key URL',
      { issuers: [{ issuer: 'x', jwksUri: '/certs' }], audience: 'a' },
      `"issuers[0].jwksUri" must be an absolute https URL (got '/certs')`,
    ],
    [
      'plain-http discovery',
      { issuers: [{ issuer: 'http://sso.internal/realms/a', discovery: true }], audience: 'a' },
      `"issuers[0].issuer" must be https (or set jwks.allowInsecureHttp: true on a trusted network) (got 'http://sso.internal/realms/a')`,
    ],
    [
      'a duplicated issuer',
      { issuers: [...ISSUERS, ...ISSUERS], audience: 'a' },
      `"issuers[1].issuer" is listed twice (got 'https://sso.example.com/realms/acme')`,
    ],
    [
      'an HMAC algorithm',
      { ...BASE, algorithms: ['RS256', 'HS256'] },
      `"algorithms" may only list RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA (got 'HS256')`,
    ],
    [
      'an algorithm with an invisible character',
      { ...BASE, algorithms: ['RS256\u200b'] },
      `(got 'RS256\\u200b')`,
    ],
    [
      'an unknown profile',
      { ...BASE, tokenProfile: 'id' },
      `"tokenProfile" must be one of 'access', 'keycloak', 'rfc9068' (got 'id')`,
    ],
    [
      'an unknown error handling',
      { ...BASE, errorHandling: 'throw' },
      `"errorHandling" must be one of 'respond', 'framework' (got 'throw')`,
    ],
    [
      'a realm with a quote (sent to every client, so not a secret)',
      { ...BASE, realm: 'a"b' },
      `"realm" must be a non-empty string of printable ASCII without " or \\ (got 'a"b')`,
    ],
  ])('shows the value it refuses: %s', (_, options, message) => {
    expect(messageOf(options)).toContain(message)
  })

  it.each([
    ['an audience', { ...BASE, audience: [42, 'hunter2'] }],
    ['a client id', { ...BASE, allowedClientIds: ['', 'hunter2'] }],
  ])('summarizes a value of unknown meaning by its shape: %s', (_, options) => {
    expect(messageOf(options)).toMatch(/\(got an array of length 2\)$/)
  })
})

describe('keycloak', () => {
  it('builds the spec paths for each realm', () => {
    expect(keycloak({ authUrl: 'https://sso.example.com/', realms: ['acme', 'beta'] })).toEqual([
      {
        issuer: 'https://sso.example.com/realms/acme',
        jwksUri: 'https://sso.example.com/realms/acme/protocol/openid-connect/certs',
        realm: 'acme',
      },
      {
        issuer: 'https://sso.example.com/realms/beta',
        jwksUri: 'https://sso.example.com/realms/beta/protocol/openid-connect/certs',
        realm: 'beta',
      },
    ])
  })

  it('keeps a context path such as /auth', () => {
    expect(keycloak({ authUrl: 'https://sso.example.com/auth', realms: ['a'] })[0]?.issuer).toBe(
      'https://sso.example.com/auth/realms/a',
    )
  })

  it.each([
    ['a relative authUrl', { authUrl: '/sso', realms: ['a'] }],
    ['an ftp authUrl', { authUrl: 'ftp://sso', realms: ['a'] }],
    ['an authUrl with a query', { authUrl: 'https://sso?x=1', realms: ['a'] }],
    ['no realms', { authUrl: 'https://sso', realms: [] }],
    ['a realm with a slash', { authUrl: 'https://sso', realms: ['a/b'] }],
    ['a dot-dot realm', { authUrl: 'https://sso', realms: ['..'] }],
    ['a non-string realm', { authUrl: 'https://sso', realms: [1] }],
  ])('refuses %s', (_, options) => {
    expect(() => keycloak(options as never)).toThrow(TypeError)
  })
})
