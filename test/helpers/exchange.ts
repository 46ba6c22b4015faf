/**
 * The token-exchange world of the tests: the development provider with the spec's products (the
 * gateway, the office, the desk), a user, a web client that signs the user in for the gateway, and
 * the services that exchange: the gateway (for the office), the office (for the desk), and a
 * client with no exchange policy. `userToken()` runs the authorization code flow with PKCE
 * through openid-client, as a sign-in library does.
 */
import * as oidc from 'openid-client'

import {
  createDevProvider,
  type DevClient,
  type DevProvider,
  type DevUser,
} from '../../src/testing/index.js'

export const GATEWAY = 'https://gateway.example.com'
export const OFFICE = 'https://office.example.com'
export const DESK = 'https://desk.example.com'
export const PULSE = 'https://pulse.example.com'
export const WEB = { clientId: 'billing-web', clientSecret: 'dev-only-web-secret' }
export const GATEWAY_CLIENT = { clientId: 'gateway', clientSecret: 'dev-only-gateway-secret' }
export const OFFICE_CLIENT = { clientId: 'office', clientSecret: 'dev-only-office-secret' }
export const JOB = { clientId: 'nightly-job', clientSecret: 'dev-only-job-secret' }
/** A service that may exchange the user's gateway tokens for the desk, never for the office. */
export const REPORTS = { clientId: 'reports', clientSecret: 'dev-only-reports-secret' }
export const REDIRECT_URI = 'http://127.0.0.1:4999/callback'

/** The products and clients; `extra` adds clients and users. */
export function startExchangeProvider(
  extra: {
    readonly clients?: readonly DevClient[]
    readonly users?: readonly DevUser[]
    readonly accessTokenTtlSeconds?: number
  } = {},
): Promise<DevProvider> {
  return createDevProvider({
    users: [
      { sub: 'alice', name: 'Alice Example', tokenClaims: { tenant: 'acme' } },
      { sub: 'bob', name: 'Bob Example', tokenClaims: { tenant: 'globex' } },
      ...(extra.users ?? []),
    ],
    resources: {
      [GATEWAY]: { audience: 'gateway', scopes: ['billing:read'] },
      [OFFICE]: { audience: 'office', scopes: ['office:records:read', 'office:records:write'] },
      [DESK]: { audience: 'desk', scopes: ['desk:tickets:read'] },
      [PULSE]: { audience: 'pulse', scopes: ['pulse:read'] },
    },
    clients: [
      { ...WEB, redirectUris: [REDIRECT_URI], audiences: [GATEWAY, OFFICE] },
      {
        ...GATEWAY_CLIENT,
        scopes: ['office:records:read', 'desk:tickets:read'],
        exchange: { from: [GATEWAY], to: [OFFICE] },
      },
      {
        ...OFFICE_CLIENT,
        scopes: ['desk:tickets:read'],
        exchange: { from: [OFFICE], to: [DESK] },
      },
      { ...JOB, scopes: ['office:records:read'], audiences: [OFFICE] },
      {
        ...REPORTS,
        scopes: ['office:records:read', 'desk:tickets:read'],
        exchange: { from: [GATEWAY], to: [DESK] },
      },
      ...(extra.clients ?? []),
    ],
    ...(extra.accessTokenTtlSeconds === undefined
      ? {}
      : { accessTokenTtlSeconds: extra.accessTokenTtlSeconds }),
  })
}

/** A user's access token for `resource`, by the authorization code flow with PKCE. */
export async function userToken(
  provider: DevProvider,
  options: { readonly user?: string; readonly resource?: string; readonly scope?: string } = {},
): Promise<string> {
  return (await userTokens(provider, options)).accessToken
}

/** A user's access and ID tokens, by the authorization code flow with PKCE at the web client. */
export async function userTokens(
  provider: DevProvider,
  options: { readonly user?: string; readonly resource?: string; readonly scope?: string } = {},
): Promise<{ readonly accessToken: string; readonly idToken: string }> {
  const config = await oidc.discovery(
    new URL(provider.issuer),
    WEB.clientId,
    WEB.clientSecret,
    undefined,
    { execute: [oidc.allowInsecureRequests] },
  )
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const parameters = new URLSearchParams({
    redirect_uri: REDIRECT_URI,
    scope: `openid ${options.scope ?? 'billing:read'}`,
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource: options.resource ?? GATEWAY,
  })
  const url = oidc.buildAuthorizationUrl(config, parameters)
  const back = await provider.authorize(url.href, { user: options.user ?? 'alice' })
  const tokens = await oidc.authorizationCodeGrant(config, back, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  })
  if (tokens.id_token === undefined) throw new Error('the sign-in gave no ID token')
  return { accessToken: tokens.access_token, idToken: tokens.id_token }
}

/** The claims of a JWT, unverified (the tests read what a provider issued). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >
}
