/**
 * Fixtures of the development provider's tests: a platform of two APIs, a backend job, a
 * `private_key_jwt` job and a sign-in client, and a token request helper speaking plain HTTP.
 */
import { exportJWK, generateKeyPair } from 'jose'

import { createDevProvider, type DevClient, type DevProvider } from '../../src/testing/index.js'

export const ORDERS = 'https://orders.example'
export const BILLING = 'urn:example:billing'
export const JOB = { clientId: 'orders-job', clientSecret: 'dev-only-job-secret' }
export const WEB = { clientId: 'orders-web', clientSecret: 'dev-only-web-secret' }

export const USERS = [
  {
    sub: 'alice',
    name: 'Alice Example',
    email: 'alice@example.com',
    tokenClaims: { tenant: 'acme' },
  },
  { sub: 'bob', name: 'Bob Example', claims: { preferred_username: 'bob' } },
]

/** A provider with the platform's APIs and clients; `web` registers the sign-in client. */
export async function startDevProvider(
  extra: { readonly clients?: readonly DevClient[]; readonly web?: Partial<DevClient> } = {},
): Promise<DevProvider> {
  return createDevProvider({
    users: USERS,
    resources: {
      [ORDERS]: { audience: 'orders', scopes: ['orders:read', 'orders:write'] },
      [BILLING]: { audience: 'billing', scopes: ['billing:read'] },
    },
    clients: [
      { ...JOB, scopes: ['orders:read'], audiences: [ORDERS], tokenClaims: { tenant: 'acme' } },
      {
        ...WEB,
        redirectUris: ['http://127.0.0.1:4999/callback'],
        scopes: ['orders:read', 'billing:read'],
        ...extra.web,
      },
      ...(extra.clients ?? []),
    ],
  })
}

/** A `private_key_jwt` client's key pair, its public JWK registered at the provider. */
export async function privateKeyJwtClient(clientId: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid: 'job-key-1', alg: 'ES256', use: 'sig' }
  return { privateKey, client: { clientId, jwks: { keys: [jwk] } } satisfies DevClient }
}

/** POSTs a token request with HTTP Basic client authentication; the status and JSON body. */
export async function tokenRequest(
  provider: DevProvider,
  client: { readonly clientId: string; readonly clientSecret: string },
  parameters: Record<string, string | readonly string[]>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = new URLSearchParams()
  for (const [name, value] of Object.entries(parameters)) {
    for (const item of [value].flat()) body.append(name, item)
  }
  const basic = Buffer.from(
    `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
  ).toString('base64')
  const response = await fetch(provider.tokenEndpoint, {
    method: 'POST',
    headers: {
      authorization: `Basic ${basic}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body,
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}
