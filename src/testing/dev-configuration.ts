/**
 * The oidc-provider configuration of the development provider: Keycloak's routes, the registered
 * clients in RFC 7591 metadata, resource indicators, claims, refresh-token rotation, the pages.
 *
 * @module
 */
import { JWT_BEARER_GRANT, TOKEN_EXCHANGE_GRANT } from './dev-exchange.js'
import type { NormalizedDevClient, NormalizedDevProviderOptions } from './dev-options.js'
import { signOutPage } from './dev-pages.js'
import type { DevStatusList } from './dev-status.js'
import type { createDevStore } from './dev-store.js'
import type { TestKey } from './keys.js'
import type { ProviderClient, ProviderModule, ProviderToken } from './oidc-provider-api.js'

/** Keycloak's endpoint paths, under `/realms/{realm}`. */
export const ROUTES = {
  authorization: '/protocol/openid-connect/auth',
  token: '/protocol/openid-connect/token',
  jwks: '/protocol/openid-connect/certs',
  userinfo: '/protocol/openid-connect/userinfo',
  end_session: '/protocol/openid-connect/logout',
  introspection: '/protocol/openid-connect/token/introspect',
  revocation: '/protocol/openid-connect/revoke',
} as const
// Standard claims (OpenID Connect Core §5.4) released per scope.
const PROFILE_CLAIMS = [
  'name',
  'family_name',
  'given_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'updated_at',
]

/** The oidc-provider client metadata (RFC 7591 names) of one registered client. */
function clientMetadata(client: NormalizedDevClient): Record<string, unknown> {
  return {
    client_id: client.clientId,
    ...(client.clientSecret === undefined ? {} : { client_secret: client.clientSecret }),
    ...(client.jwks === undefined
      ? {}
      : { jwks: { keys: client.jwks.keys.map((key) => ({ ...key })) } }),
    token_endpoint_auth_method: client.clientAuth,
    // Every client may ask for an exchange: one without an `exchange` policy is then refused
    // with RFC 6749's unauthorized_client, not oidc-provider's invalid_request.
    grant_types: [...client.grantTypes, TOKEN_EXCHANGE_GRANT, JWT_BEARER_GRANT],
    response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
    redirect_uris: [...client.redirectUris],
    post_logout_redirect_uris: [...client.postLogoutRedirectUris],
    ...(client.backchannelLogoutUri === undefined
      ? {}
      : {
          backchannel_logout_uri: client.backchannelLogoutUri,
          backchannel_logout_session_required: false,
        }),
    scope: ['openid', 'profile', 'email', 'offline_access', ...client.scopes].join(' '),
  }
}

/** What a token request holds of the sign-in a token comes from (oidc-provider's entities). */
interface SignInEntities {
  readonly oidc?: {
    readonly entities?: Readonly<
      Record<string, { readonly acr?: unknown; readonly authTime?: unknown } | undefined>
    >
  }
}

/**
 * `acr` and `auth_time` of the sign-in an access token comes from (RFC 9068 §2.2.1), read from the
 * code or the refresh token being exchanged: a resource server's step-up guards read them.
 */
function signInClaims(ctx: SignInEntities | undefined): Record<string, unknown> {
  const entities = ctx?.oidc?.entities
  const source = entities?.['AuthorizationCode'] ?? entities?.['RefreshToken']
  const claims: Record<string, unknown> = {}
  if (typeof source?.acr === 'string') claims['acr'] = source.acr
  if (typeof source?.authTime === 'number') claims['auth_time'] = source.authTime
  return claims
}

/**
 * oidc-provider's default prompts, and one more reason to sign in again: the authorization
 * request's `acr_values` name an `acr` this provider supports that the session was not signed in
 * with (OIDC Core §3.1.2.1 makes `acr_values` voluntary; a step-up asks for it, RFC 9470 §4).
 */
function interactionPolicy(oidc: ProviderModule, options: NormalizedDevProviderOptions): unknown {
  const { base, Check } = oidc.interactionPolicy
  const policy = base()
  policy.get('login')?.checks.add(
    new Check('acr_values', 'the requested acr could not be obtained', 'login_required', (ctx) => {
      const requested = String(ctx.oidc.params['acr_values'] ?? '')
        .split(' ')
        .filter((value) => options.acrValues.includes(value))
      if (requested.length === 0 || ctx.oidc.result?.['login'] !== undefined) {
        return Check.NO_NEED_TO_PROMPT
      }
      return requested.includes(String(ctx.oidc.acr))
        ? Check.NO_NEED_TO_PROMPT
        : Check.REQUEST_PROMPT
    }),
  )
  return policy
}

/**
 * The oidc-provider configuration; `keys` are the signing keys, the current one first;
 * `statusList`, when the provider issues one, gives each access token its index.
 */
export function configuration(
  options: NormalizedDevProviderOptions,
  oidc: ProviderModule,
  keys: readonly TestKey[],
  store: ReturnType<typeof createDevStore>,
  cookieKeys: readonly string[],
  statusList?: DevStatusList,
): Record<string, unknown> {
  const { resources, clients, users } = options
  const allScopes = new Set([...resources.values()].flatMap((resource) => resource.scopes))
  return {
    adapter: store.adapter,
    clients: [...clients.values()].map(clientMetadata),
    jwks: { keys: keys.map((key) => ({ ...key.privateJwk })) },
    cookies: { keys: [...cookieKeys] },
    routes: ROUTES,
    scopes: ['openid', 'offline_access', 'profile', 'email', ...allScopes],
    claims: { openid: ['sub'], profile: PROFILE_CLAIMS, email: ['email', 'email_verified'] },
    // Profile claims in the ID token itself, as Keycloak sends them (by default oidc-provider
    // keeps them for userinfo when an access token is issued too).
    conformIdTokenClaims: false,
    findAccount: async (_ctx: unknown, sub: string) => {
      const user = users.get(sub)
      if (user === undefined) return undefined
      return {
        accountId: sub,
        claims: async () => ({
          ...user.claims,
          sub,
          ...(user.name === undefined ? {} : { name: user.name }),
          ...(user.email === undefined ? {} : { email: user.email, email_verified: true }),
        }),
      }
    },
    extraTokenClaims: async (ctx: SignInEntities | undefined, token: ProviderToken) => {
      // A fresh index of the status list for each token, when the provider issues one.
      const status = statusList?.claim()
      if (token.accountId !== undefined) {
        return { ...users.get(token.accountId)?.tokenClaims, ...signInClaims(ctx), ...status }
      }
      return { ...clients.get(token.clientId ?? '')?.tokenClaims, ...status }
    },
    ...(options.acrValues.length === 0 ? {} : { acrValues: [...options.acrValues] }),
    // Keycloak issues a refresh token with every code exchange; rotated on every use, and a
    // rotated one used again revokes the whole grant (oidc-provider's reuse detection).
    issueRefreshToken: async (_ctx: unknown, client: ProviderClient) =>
      client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    renderError: async (ctx: { type: string; body: string }, out: Record<string, unknown>) => {
      ctx.type = 'json'
      ctx.body = JSON.stringify(out)
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      backchannelLogout: { enabled: true },
      // RFC 7662 for every registered client (an API checks other clients' tokens), RFC 9701 JWT
      // responses when asked for, and RFC 7009 revocation, as Keycloak offers them.
      introspection: { enabled: true, allowedPolicy: async () => true },
      jwtIntrospection: { enabled: true },
      revocation: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: async (ctx: { body: string }, form: string) => {
          ctx.body = signOutPage(options.realm, form)
        },
        postLogoutSuccessSource: async (ctx: { body: string }) => {
          ctx.body = signOutPage(options.realm, '').replace(
            /<h1>.*$/s,
            '<h1>Signed out</h1></body></html>',
          )
        },
      },
      resourceIndicators: {
        enabled: true,
        // A request naming no resource gets a token for the client's first audience; one whose
        // authorization named several, for the first of the client's audiences among them.
        defaultResource: async (_ctx: unknown, client: ProviderClient, oneOf?: string[]) => {
          const audiences = clients.get(client.clientId)?.audiences ?? []
          if (oneOf === undefined) return audiences[0]
          return audiences.find((indicator) => oneOf.includes(indicator)) ?? oneOf[0]
        },
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, indicator: string, client: ProviderClient) => {
          const resource = resources.get(indicator)
          if (
            resource === undefined ||
            clients.get(client.clientId)?.audiences.includes(indicator) !== true
          ) {
            throw new oidc.errors.InvalidTarget()
          }
          const info = {
            audience: resource.audience,
            scope: resource.scopes.join(' '),
            accessTokenTTL: options.accessTokenTtlSeconds,
          }
          return resource.accessTokenFormat === 'opaque'
            ? { ...info, accessTokenFormat: 'opaque' }
            : { ...info, accessTokenFormat: 'jwt', jwt: { sign: { alg: keys[0]?.alg ?? 'RS256' } } }
        },
      },
    },
    interactions: {
      policy: interactionPolicy(oidc, options),
      url: (_ctx: unknown, interaction: { uid: string }) =>
        `/realms/${options.realm}/interaction/${interaction.uid}`,
    },
    // oidc-provider refuses outgoing requests to special-use addresses (SSRF protection); this
    // provider only calls applications on the developer's machine (back-channel logout).
    fetch: (target: string, init: RequestInit & { dispatcher?: unknown }) => {
      const { dispatcher: _dispatcher, ...direct } = init
      return fetch(target, direct)
    },
    ttl: {
      AccessToken: options.accessTokenTtlSeconds,
      ClientCredentials: options.accessTokenTtlSeconds,
      RefreshToken: options.refreshTokenTtlSeconds,
      IdToken: options.accessTokenTtlSeconds,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 36_000,
      Grant: 36_000,
    },
  }
}
