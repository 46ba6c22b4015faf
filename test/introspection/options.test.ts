/**
 * The `introspection` field of an issuer entry: defaults, where the endpoint comes from, and the
 * messages that name what to change.
 */
import { describe, expect, it } from 'vitest'
import { fromEnv } from '../../src/client/secrets.js'
import { createGate, type GateOptions, keycloak } from '../../src/index.js'
import { normalizeIntrospection } from '../../src/introspection/options.js'

const ISSUER = 'https://sso.example.com/realms/acme'
const entry = {
  issuer: ISSUER,
  jwksUri: `${ISSUER}/protocol/openid-connect/certs`,
  discovery: false,
}
const SECRET = { clientId: 'orders-api', clientSecret: 'orders-secret' }

const gate = (introspection: unknown, issuer: Partial<GateOptions['issuers'][number]> = {}) =>
  createGate({
    issuers: [
      {
        ...keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' })[0],
        ...issuer,
        introspection,
      } as never,
    ],
    audience: 'orders',
  })

describe('normalizeIntrospection', () => {
  it('defaults: mode introspection, Keycloak endpoint beside the key URL, 60 s cache, 100 calls a second', () => {
    expect(normalizeIntrospection(SECRET, 'issuers[0]', entry)).toMatchObject({
      mode: 'introspection',
      endpoint: `${ISSUER}/protocol/openid-connect/token/introspect`,
      clientAuth: 'client_secret_basic',
      jwtResponse: false,
      timeoutMs: 5000,
      cache: { maxEntries: 10_000, maxTtlSeconds: 60, inactiveTtlSeconds: 5 },
      budget: { calls: 100, perSeconds: 1 },
    })
  })

  it('is off when absent or mode jwt', () => {
    expect(normalizeIntrospection(undefined, 'issuers[0]', entry)).toBeUndefined()
    expect(normalizeIntrospection({ ...SECRET, mode: 'jwt' }, 'issuers[0]', entry)).toBeUndefined()
  })

  it('leaves the endpoint to discovery with discovery: true', () => {
    expect(
      normalizeIntrospection(SECRET, 'issuers[0]', {
        issuer: ISSUER,
        jwksUri: undefined,
        discovery: true,
      })?.endpoint,
    ).toBeUndefined()
  })

  it('picks private_key_jwt for a privateKey, and describes secrets by their source, never their value', () => {
    const normalized = normalizeIntrospection(
      { clientId: 'orders-api', privateKey: fromEnv('ORDERS_KEY') },
      'issuers[0]',
      entry,
    )
    expect(normalized?.clientAuth).toBe('private_key_jwt')
    expect(normalized?.credentialSource).toBe("fromEnv('ORDERS_KEY')")
  })
})

describe('createGate() refuses, naming the option', () => {
  const cases: Array<[string, unknown, Partial<GateOptions['issuers'][number]>, string]> = [
    [
      'no credentials',
      { clientId: 'a' },
      {},
      '"issuers[0].introspection.clientSecret" or "privateKey" is required',
    ],
    [
      'both credentials',
      { clientId: 'a', clientSecret: 's', privateKey: 'k' },
      {},
      '"issuers[0].introspection.clientSecret" and privateKey exclude each other',
    ],
    [
      'no client id',
      { clientSecret: 's' },
      {},
      '"issuers[0].introspection.clientId" must be a non-empty string',
    ],
    [
      'an unknown mode',
      { ...SECRET, mode: 'opaque' },
      {},
      '"issuers[0].introspection.mode" must be',
    ],
    ['an unknown key', { ...SECRET, endpiont: 'x' }, {}, 'endpiont'],
    [
      'no endpoint to find',
      SECRET,
      { jwksUri: 'https://keys.example.com/jwks' },
      '"issuers[0].introspection.endpoint" is required unless the issuer entry has discovery: true or was made by keycloak()',
    ],
    [
      'an endpoint over http off loopback',
      { ...SECRET, endpoint: 'http://sso.example.com/introspect' },
      {},
      '"issuers[0].introspection.endpoint" must be https',
    ],
    [
      'an endpoint with credentials in it',
      { ...SECRET, endpoint: 'https://u:p@sso.example.com/introspect' },
      {},
      'must not carry credentials',
    ],
    [
      'a cache lifetime beyond an hour',
      { ...SECRET, cache: { maxTtlSeconds: 7200 } },
      {},
      '"issuers[0].introspection.cache.maxTtlSeconds"',
    ],
    [
      'a budget of no calls',
      { ...SECRET, budget: { calls: 0 } },
      {},
      '"issuers[0].introspection.budget.calls"',
    ],
  ]
  for (const [what, introspection, issuer, message] of cases) {
    it(what, () => {
      expect(() => gate(introspection, issuer)).toThrow(message)
    })
  }

  it('never shows a secret in a message', () => {
    expect(() =>
      gate({ clientId: 'a', clientSecret: 'hunter2-secret', privateKey: 'pem' }),
    ).toThrow(/^(?!.*hunter2).*$/s)
  })

  it('accepts http to loopback without a warning', () => {
    expect(() => gate({ ...SECRET, endpoint: 'http://127.0.0.1:8080/introspect' })).not.toThrow()
  })

  it('accepts http off loopback with allowInsecureHttp, and warns once (TOLLGATE_INSECURE_INTROSPECTION)', async () => {
    const warnings: (Error & { code?: string })[] = []
    const listener = (warning: Error & { code?: string }) => warnings.push(warning)
    process.on('warning', listener)
    try {
      for (let i = 0; i < 2; i++) {
        gate({
          ...SECRET,
          endpoint: 'http://sso.internal/introspect',
          allowInsecureHttp: true,
        })
      }
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', listener)
    }
    const ours = warnings.filter((warning) => warning.code === 'TOLLGATE_INSECURE_INTROSPECTION')
    expect(ours).toHaveLength(1)
    expect(ours[0]?.message).toContain('sso.internal')
  })
})
