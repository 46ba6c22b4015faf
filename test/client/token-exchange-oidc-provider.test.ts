/**
 * `createTokenExchange()` against a stock oidc-provider (test/helpers/oidc-provider.ts), which
 * grants no token exchange: what an application meets at a provider where the grant is not
 * enabled, or the client is not the one registered. The exchange itself against a provider that
 * grants it: token-exchange.test.ts (the development provider), and test/adapters/delegation.test.ts
 * (this provider with the grant registered, `tokenExchange`, through every adapter).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTokenExchange, createTokenSource } from '../../src/client/index.js'
import { keycloak } from '../../src/index.js'
import { SECRET, startPlatformProvider } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'

describe('createTokenExchange at a provider without token exchange', () => {
  let provider: RunningProvider
  let subject: string
  beforeAll(async () => {
    provider = await startPlatformProvider()
    const source = createTokenSource({
      issuer: keycloak({ authUrl: provider.url, realm: 'acme' }),
      clientId: 'billing-sync',
      clientSecret: SECRET,
      scope: 'billing:read',
    })
    subject = await source.get()
    source.close()
  })
  afterAll(() => provider?.close())

  const exchanger = (clientSecret: string) =>
    createTokenExchange({
      issuer: keycloak({ authUrl: provider.url, realm: 'acme' }),
      clientId: 'billing-sync',
      clientSecret,
      retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    })

  it('sends the RFC 8693 grant, and reports the provider’s unsupported_grant_type as a refusal, not retried', async () => {
    provider.resetGrants()
    const refused = await exchanger(SECRET)
      .exchange(subject, { audience: 'office', scope: 'office:records:read' })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({
      name: 'TokenSourceError',
      code: 'ERR_TOKEN_REQUEST_REFUSED',
      oauthError: 'unsupported_grant_type',
      oauthErrorDescription: 'unsupported grant_type requested',
      retryable: false,
    })
    expect(provider.grants.map((grant) => grant.grantType)).toEqual([
      'urn:ietf:params:oauth:grant-type:token-exchange',
    ])
  })

  it('reports a wrong secret as the client refused, never quoting the secret or the token', async () => {
    const refused = (await exchanger('a-wrong-secret-4e1f')
      .exchange(subject, 'office')
      .catch((error: unknown) => error)) as Error
    expect(refused).toMatchObject({ code: 'ERR_CLIENT_REFUSED', oauthError: 'invalid_client' })
    expect(refused.message).not.toContain('a-wrong-secret-4e1f')
    expect(refused.message).not.toContain(subject.slice(-16))
  })
})
