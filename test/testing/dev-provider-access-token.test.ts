/**
 * `provider.accessTokenFor()`: a user's access token as a sign-in would give it, without the
 * pages, for trying step-up (`acr`, `auth_time`) and certificate binding (`cnf.x5t#S256`) locally
 * against a real gate, and the refusals that name what to change.
 */
import { createHash, X509Certificate } from 'node:crypto'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createGate, keycloak, requireAcr, requireRecentSignIn } from '../../src/index.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { claimsOf } from '../helpers/exchange.js'
import { clientCertField, makeCertificate } from '../helpers/tls.js'

const ORDERS = 'https://orders.example'
const LEDGER = 'urn:example:ledger'
const PWD = 'urn:example:pwd'
const MFA = 'urn:example:mfa'

describe('createDevProvider: accessTokenFor()', () => {
  let provider: DevProvider
  let plain: DevProvider
  const resources = {
    [ORDERS]: { audience: 'orders', scopes: ['orders:read'] },
    [LEDGER]: { audience: 'ledger', scopes: ['ledger:read'], accessTokenFormat: 'opaque' as const },
  }
  const clients = [{ clientId: 'orders-web', clientSecret: 'dev-only-web-secret' }]
  beforeAll(async () => {
    provider = await createDevProvider({
      users: [{ sub: 'alice' }],
      resources,
      clients,
      acrValues: [PWD, MFA],
    })
    plain = await createDevProvider({ users: [{ sub: 'alice' }], resources, clients })
  })
  afterAll(async () => {
    await provider?.close()
    await plain?.close()
  })

  const gateOf = (of: DevProvider, more: Partial<Parameters<typeof createGate>[0]> = {}) =>
    createGate({
      issuers: keycloak({ authUrl: of.url, realms: [of.realm] }),
      audience: 'orders',
      ...more,
    })
  const orders = { clientId: 'orders-web', resource: ORDERS }

  it('puts the acr a step-up sign-in completes with: the first of acrValues the provider supports, else its first', async () => {
    const asked = await provider.accessTokenFor('alice', {
      ...orders,
      acrValues: 'urn:example:hwk urn:example:mfa',
    })
    expect(claimsOf(asked)['acr']).toBe(MFA)
    expect(claimsOf(await provider.accessTokenFor('alice', orders))['acr']).toBe(PWD)
    // A provider without acrValues signs in with no acr, as its sign-in does.
    expect(claimsOf(await plain.accessTokenFor('alice', orders))).not.toHaveProperty('acr')
  })

  it('gives a token requireAcr() admits only with the acr asked for, through a real gate', async () => {
    const gate = gateOf(provider)
    const admitted = async (token: string) => {
      const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
      return () => gate.authorize(requireAcr(MFA), auth)
    }
    const weak = await admitted(await provider.accessTokenFor('alice', orders))
    expect(weak).toThrow(expect.objectContaining({ status: 401, reason: 'acr_insufficient' }))
    const strong = await admitted(
      await provider.accessTokenFor('alice', { ...orders, acrValues: MFA }),
    )
    expect(strong).not.toThrow()
  })

  it('puts auth_time (now by default, or authTime) that requireRecentSignIn() reads', async () => {
    const now = Math.floor(Date.now() / 1000)
    const fresh = claimsOf(await provider.accessTokenFor('alice', orders))
    expect(fresh['auth_time']).toBeGreaterThanOrEqual(now)
    expect(fresh['auth_time']).toBeLessThanOrEqual(fresh['iat'] as number)
    const gate = gateOf(provider)
    const check = async (token: string) => {
      const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
      return () => gate.authorize(requireRecentSignIn(300), auth)
    }
    const old = await provider.accessTokenFor('alice', { ...orders, authTime: now - 3600 })
    expect(claimsOf(old)['auth_time']).toBe(now - 3600)
    expect(await check(old)).toThrow(
      expect.objectContaining({ status: 401, reason: 'authentication_too_old' }),
    )
    expect(await check(await provider.accessTokenFor('alice', orders))).not.toThrow()
  })

  it('lives expiresInSeconds when given, else the provider’s accessTokenTtlSeconds', async () => {
    const long = claimsOf(
      await provider.accessTokenFor('alice', { ...orders, expiresInSeconds: 3600 }),
    )
    expect((long['exp'] as number) - (long['iat'] as number)).toBe(3600)
    const usual = claimsOf(await provider.accessTokenFor('alice', orders))
    expect((usual['exp'] as number) - (usual['iat'] as number)).toBe(300)
  })

  it('binds the token to a client certificate (cnf x5t#S256, RFC 8705 §3.1), admitted by an mtls gate only with that certificate', async () => {
    const certificate = makeCertificate('alice-device')
    const token = await provider.accessTokenFor('alice', {
      ...orders,
      certificate: certificate.cert,
    })
    const thumbprint = createHash('sha256').update(certificate.x509.raw).digest('base64url')
    expect(claimsOf(token)['cnf']).toEqual({ 'x5t#S256': thumbprint })
    // An X509Certificate binds to the same thumbprint as its PEM.
    const again = await provider.accessTokenFor('alice', {
      ...orders,
      certificate: new X509Certificate(certificate.cert),
    })
    expect(claimsOf(again)['cnf']).toEqual({ 'x5t#S256': thumbprint })

    const gate = gateOf(provider, { mtls: { mode: 'allowed', trustedProxies: ['127.0.0.1'] } })
    const fromProxy = (clientCert: string | undefined) =>
      gate.check({
        headers: {
          authorization: `Bearer ${token}`,
          ...(clientCert === undefined ? {} : { 'client-cert': clientCert }),
        },
        socket: { remoteAddress: '127.0.0.1' },
      })
    await expect(fromProxy(clientCertField(certificate))).resolves.toMatchObject({
      auth: { subject: 'alice' },
    })
    await expect(fromProxy(undefined)).rejects.toMatchObject({
      status: 401,
      reason: 'certificate_missing',
    })
    await expect(fromProxy(clientCertField(makeCertificate('mallory')))).rejects.toMatchObject({
      status: 401,
      reason: 'certificate_mismatch',
    })
    // A gate without mtls refuses a bound token sent as a bearer token.
    await expect(
      gateOf(provider).check({ headers: { authorization: `Bearer ${token}` } }),
    ).rejects.toMatchObject({ status: 401, reason: 'sender_constrained' })
  })

  it.each([
    [
      'acrValues the provider does not support',
      () => provider.accessTokenFor('alice', { ...orders, acrValues: 'urn:example:hwk' }),
      `accessTokenFor(): "acrValues" must name one of the provider's acrValues: ${PWD} ${MFA}`,
    ],
    [
      'acrValues of a provider without acrValues',
      () => plain.accessTokenFor('alice', { ...orders, acrValues: MFA }),
      `accessTokenFor(): "acrValues" needs the provider's acrValues option: createDevProvider({ acrValues: [...] })`,
    ],
    [
      'an authTime that is not whole seconds',
      () => provider.accessTokenFor('alice', { ...orders, authTime: 1_700_000_000.5 }),
      'accessTokenFor(): "authTime" must be whole seconds since the epoch',
    ],
    [
      'an expiresInSeconds that is not whole seconds',
      () => provider.accessTokenFor('alice', { ...orders, expiresInSeconds: 0 }),
      'accessTokenFor(): "expiresInSeconds" must be a whole number of seconds, at least 1',
    ],
    [
      'a certificate that is not one',
      () => provider.accessTokenFor('alice', { ...orders, certificate: 'not a certificate' }),
      'accessTokenFor(): "certificate" must be a PEM certificate or an X509Certificate',
    ],
    [
      'a resource whose tokens are opaque',
      () => provider.accessTokenFor('alice', { ...orders, resource: LEDGER }),
      `accessTokenFor(): ${LEDGER} has accessTokenFormat 'opaque': its tokens come from the token endpoint (a sign-in, or createTokenSource()), never from accessTokenFor()`,
    ],
  ])('refuses %s with a TypeError that names what to change', async (_name, ask, message) => {
    await expect(ask()).rejects.toThrow(new TypeError(message))
  })
})
