/**
 * The clients the token-source tests register at the real provider (`oidc-provider.ts`), one per
 * client authentication method, plus a sign-in client that receives refresh tokens, and a clock
 * the tests move by hand.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto'

import { type RunningProvider, startProvider } from './oidc-provider.js'

/** Long enough for oidc-provider's checks; a value a test can search for in any output. */
export const SECRET = 'test-secret-Zq8v3Kx1-must-never-be-printed'
export const POST_SECRET = 'post-secret-Ht5nW2pL-must-never-be-printed'
export const WEB_SECRET = 'web-secret-Qa7rT4mE-must-never-be-printed'
export const REDIRECT_URI = 'http://127.0.0.1:1/callback'

export const PLATFORM_SCOPES = 'billing:read office:records:read office:records:write'

/** The key pair of the private_key_jwt client: the provider holds the public half. */
export const assertionKey: { privateKey: KeyObject; publicKey: KeyObject } = generateKeyPairSync(
  'ec',
  { namedCurve: 'P-256' },
)

export function platformClients() {
  return [
    {
      client_id: 'billing-sync',
      client_secret: SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: PLATFORM_SCOPES,
    },
    {
      client_id: 'report-job',
      client_secret: POST_SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
      scope: PLATFORM_SCOPES,
    },
    {
      client_id: 'ledger-export',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      jwks: { keys: [{ ...assertionKey.publicKey.export({ format: 'jwk' }), kid: 'ledger-1' }] },
      scope: PLATFORM_SCOPES,
    },
    {
      client_id: 'office-web',
      client_secret: WEB_SECRET,
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: [REDIRECT_URI],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: `openid offline_access ${PLATFORM_SCOPES}`,
    },
  ]
}

/** The provider with the platform's clients, realm `acme`. */
export function startPlatformProvider(
  options: { accessTokenSeconds?: number; realms?: string[] } = {},
): Promise<RunningProvider> {
  return startProvider({ clients: platformClients(), ...options })
}

/** A clock that stands still until the test moves it. */
export function manualClock(start = Date.now()) {
  let now = start
  return {
    now: () => now,
    advance(ms: number) {
      now += ms
    },
  }
}

/** The payload of a JWT, without verifying it (tests only; the gate verifies where it matters). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >
}

/** Client `office-web`'s code exchange, done directly with openid-client at the real provider. */
async function exchangeCode(provider: RunningProvider, code: string, resource: string | undefined) {
  const client = await import('openid-client')
  const config = new client.Configuration(
    { issuer: provider.issuer(), token_endpoint: provider.tokenEndpoint() },
    'office-web',
    undefined,
    client.ClientSecretBasic(WEB_SECRET),
  )
  client.allowInsecureRequests(config)
  return client.authorizationCodeGrant(
    config,
    new URL(`${REDIRECT_URI}?code=${code}&iss=${encodeURIComponent(provider.issuer())}`),
    undefined,
    resource === undefined ? undefined : { resource },
  )
}

/**
 * A refresh token of client `office-web`, as a user's sign-in at the real provider hands it out:
 * authorization with auto-consent, then the code exchange done directly with openid-client (the
 * sign-in side's job, not the token source's).
 */
export async function signedInRefreshToken(
  provider: RunningProvider,
  request: {
    readonly scope: string
    readonly resource?: string | readonly string[]
    /** The `resource` of the code exchange itself. */
    readonly tokenResource?: string
  },
): Promise<string> {
  const code = await provider.authorize({
    clientId: 'office-web',
    redirectUri: REDIRECT_URI,
    scope: request.scope,
    ...(request.resource === undefined ? {} : { resource: request.resource }),
  })
  const tokens = await exchangeCode(provider, code, request.tokenResource)
  return tokens.refresh_token as string
}

/** Alice's access token for `resource`, by the code flow of client `office-web` (token exchange tests). */
export async function signedInAccessToken(
  provider: RunningProvider,
  resource: string,
): Promise<string> {
  const code = await provider.authorize({
    clientId: 'office-web',
    redirectUri: REDIRECT_URI,
    scope: 'openid billing:read',
    resource,
    user: 'alice',
  })
  const tokens = await exchangeCode(provider, code, resource)
  return tokens.access_token
}
