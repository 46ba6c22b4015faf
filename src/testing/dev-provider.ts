/**
 * `createDevProvider()`: a complete development OpenID provider on loopback, Keycloak-shaped,
 * built on panva's oidc-provider (an optional peer dependency, loaded only here).
 *
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

import {
  type DevProviderOptions,
  type NormalizedDevClient,
  type NormalizedDevProviderOptions,
  normalizeDevProviderOptions,
} from './dev-options.js'
import { signInPage, signOutPage } from './dev-pages.js'
import { createDevStore } from './dev-store.js'
import { listenOnLoopback } from './http.js'
import { generateTestKey, signCompactJWS, type TestKey } from './keys.js'
import {
  loadOidcProvider,
  type ProviderClient,
  type ProviderInstance,
  type ProviderModule,
  type ProviderToken,
} from './oidc-provider-api.js'

/** A running development provider; see {@link createDevProvider}. */
export interface DevProvider {
  /** `http://127.0.0.1:PORT`: the `authUrl` of `keycloak({ authUrl, realms })`. */
  readonly url: string
  readonly realm: string
  /** `{url}/realms/{realm}`: the `iss` of its tokens. */
  readonly issuer: string
  /** `{issuer}/protocol/openid-connect/certs`. */
  readonly jwksUri: string
  /** `{issuer}/protocol/openid-connect/auth`. */
  readonly authorizationEndpoint: string
  /** `{issuer}/protocol/openid-connect/token`. */
  readonly tokenEndpoint: string
  /** `{issuer}/protocol/openid-connect/logout` (RP-initiated logout, with a confirmation page). */
  readonly endSessionEndpoint: string
  /**
   * Follows an authorization URL (what a sign-in route redirects to) as a browser would, without
   * the page: `user` (a configured `sub`; default `autoLogin`, else the first user) is signed in
   * and consents. Returns the URL the provider sends the browser back to: the redirect URI with
   * `code`, `state` and `iss`, or with `error`.
   */
  authorize(authorizationUrl: string, options?: { readonly user?: string }): Promise<URL>
  /**
   * Generates a new signing key and signs with it from now on; the previous keys stay published
   * unless `keepPrevious` is `false`. Sessions, grants and refresh tokens are kept.
   *
   * @returns the new key's `kid`.
   */
  rotateKeys(options?: { readonly keepPrevious?: boolean }): Promise<string>
  /**
   * Sends an OpenID Connect Back-Channel Logout token to the client's `backchannelLogoutUri`, as
   * the provider does when a user's session ends there: with `sub` (every session of the user),
   * `sid` (one provider session), or both. Signed with the current key.
   *
   * @returns the status the client answered (200 or 204 when it accepted).
   * @throws Error for an unknown client or one without `backchannelLogoutUri`.
   */
  sendBackchannelLogout(logout: {
    readonly clientId: string
    readonly sub?: string
    readonly sid?: string
  }): Promise<number>
  /** Stops for good, dropping open connections. */
  close(): Promise<void>
}

export type {
  DevClient,
  DevClientAuth,
  DevGrantType,
  DevProviderOptions,
  DevResource,
  DevUser,
} from './dev-options.js'

const ROUTES = {
  authorization: '/protocol/openid-connect/auth',
  token: '/protocol/openid-connect/token',
  jwks: '/protocol/openid-connect/certs',
  userinfo: '/protocol/openid-connect/userinfo',
  end_session: '/protocol/openid-connect/logout',
} as const
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
const LOGOUT_TOKEN_SECONDS = 120
const REALM_PATH = /^\/realms\/([^/?#]+)(\/[^?#]*)?/
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
    grant_types: [...client.grantTypes],
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

/** The oidc-provider configuration; `keys` are the signing keys, the current one first. */
function configuration(
  options: NormalizedDevProviderOptions,
  oidc: ProviderModule,
  keys: readonly TestKey[],
  store: ReturnType<typeof createDevStore>,
  cookieKeys: readonly string[],
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
    extraTokenClaims: async (_ctx: unknown, token: ProviderToken) => {
      if (token.accountId !== undefined) return { ...users.get(token.accountId)?.tokenClaims }
      return { ...clients.get(token.clientId ?? '')?.tokenClaims }
    },
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
          return {
            audience: resource.audience,
            scope: resource.scopes.join(' '),
            accessTokenFormat: 'jwt',
            accessTokenTTL: options.accessTokenTtlSeconds,
            jwt: { sign: { alg: keys[0]?.alg ?? 'RS256' } },
          }
        },
      },
    },
    interactions: {
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

async function formBody(req: IncomingMessage): Promise<URLSearchParams> {
  let body = ''
  for await (const chunk of req) {
    body += String(chunk)
    if (body.length > 4096) break
  }
  return new URLSearchParams(body)
}

/**
 * Starts a development OpenID provider on 127.0.0.1, with Keycloak's paths under
 * `/realms/{realm}`: discovery, an authorization endpoint with a sign-in page listing `users`
 * (PKCE required), a token endpoint for `authorization_code`, `refresh_token` (rotated, reuse
 * revokes the grant) and `client_credentials`, honouring `scope` and `resource` (RFC 8707), ID
 * tokens with profile claims, userinfo, end-session and back-channel logout. Refusals are
 * oidc-provider's, as any certified provider answers: `invalid_client`, `invalid_grant`,
 * `invalid_scope`, `invalid_target`. Everything is kept in memory. Close it when done.
 *
 * Needs `oidc-provider` (v9) installed: it is an optional peer dependency of `tollgate/testing`.
 *
 * @throws TypeError when an option is invalid (the message names it and what to fix).
 *
 * @example
 * ```ts
 * const provider = await createDevProvider({
 *   users: [{ sub: 'alice', name: 'Alice Example', email: 'alice@example.com' }],
 *   resources: { 'urn:example:orders': { audience: 'orders', scopes: ['orders:read'] } },
 *   clients: [{ clientId: 'orders-job', clientSecret: 'dev-secret' }],
 * })
 * const gate = createGate({ issuers: keycloak({ authUrl: provider.url, realms: ['dev'] }), audience: 'orders' })
 * ```
 */
export async function createDevProvider(options: DevProviderOptions): Promise<DevProvider> {
  const settings = normalizeDevProviderOptions(options)
  const oidc = await loadOidcProvider()
  const store = createDevStore()
  const cookieKeys = [randomBytes(32).toString('base64url')]
  let keys: TestKey[] = [await generateTestKey('RS256')]
  let provider: ProviderInstance | undefined
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined

  const server = await listenOnLoopback((req, res) => route(req, res), settings.port)
  const issuer = `${server.url}/realms/${settings.realm}`

  const build = () => {
    const next = new oidc.default(issuer, configuration(settings, oidc, keys, store, cookieKeys))
    provider = next
    handler = next.callback()
  }
  try {
    build()
  } catch (error) {
    await server.close()
    throw error
  }

  async function finishInteraction(
    current: ProviderInstance,
    req: IncomingMessage,
    res: ServerResponse,
    sub: string,
  ): Promise<void> {
    const details = await current.interactionDetails(req, res)
    const clientId = String(details.params['client_id'])
    const grant = new current.Grant({ accountId: sub, clientId })
    grant.addOIDCScope(String(details.params['scope'] ?? 'openid'))
    // The user consents to everything the client may ask for; what a token carries is still what
    // the request asked for, among that.
    const client = settings.clients.get(clientId)
    for (const indicator of client?.audiences ?? []) {
      const known = settings.resources.get(indicator)?.scopes ?? []
      grant.addResourceScope(
        indicator,
        known.filter((scope) => client?.scopes.includes(scope)).join(' '),
      )
    }
    const grantId = await grant.save()
    await current.interactionFinished(
      req,
      res,
      { login: { accountId: sub }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    )
  }

  async function interaction(current: ProviderInstance, req: IncomingMessage, res: ServerResponse) {
    const details = await current.interactionDetails(req, res)
    const hint = details.params['login_hint']
    const chosen =
      req.method === 'POST'
        ? (await formBody(req)).get('user')
        : (settings.autoLogin ??
          (typeof hint === 'string' && settings.users.has(hint) ? hint : undefined))
    if (chosen !== null && chosen !== undefined && settings.users.has(chosen)) {
      return finishInteraction(current, req, res, chosen)
    }
    const action = (req.url ?? '').split('?', 1)[0] ?? ''
    const page = signInPage(
      settings.realm,
      action,
      String(details.params['client_id']),
      settings.users.values(),
    )
    res.writeHead(req.method === 'POST' ? 400 : 200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
    })
    res.end(page)
  }

  function route(req: IncomingMessage, res: ServerResponse): void {
    const match = REALM_PATH.exec(req.url ?? '')
    if (
      match === null ||
      match[1] !== settings.realm ||
      provider === undefined ||
      handler === undefined
    ) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"error":"Realm does not exist"}')
      return
    }
    const rest = (req.url ?? '').slice(`/realms/${settings.realm}`.length) || '/'
    if (rest.startsWith('/interaction/')) {
      interaction(provider, req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
        res.end('{"error":"server_error"}')
      })
      return
    }
    // oidc-provider finds its mount path from the difference between originalUrl and url.
    Object.assign(req, { originalUrl: req.url, url: rest })
    handler(req, res)
  }

  async function authorize(
    authorizationUrl: string,
    authorizeOptions: { readonly user?: string } = {},
  ) {
    const user = authorizeOptions.user ?? settings.autoLogin ?? [...settings.users.keys()][0] ?? ''
    if (!settings.users.has(user))
      throw new TypeError(`authorize(): "${user}" is not a configured user`)
    const target = new URL(authorizationUrl)
    if (!target.href.startsWith(`${issuer}/`)) {
      throw new TypeError(`authorize(): the URL is not this provider's (${issuer})`)
    }
    target.searchParams.set('login_hint', user)
    const providerOrigin = new URL(server.url).origin
    const cookies = new Map<string, string>()
    let next = target.href
    for (let hop = 0; hop < 10; hop++) {
      const response = await fetch(next, {
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
      })
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';', 1)
        const equals = pair.indexOf('=')
        cookies.set(pair.slice(0, equals), pair.slice(equals + 1))
      }
      await response.body?.cancel()
      const location = response.headers.get('location')
      if (location === null) throw new Error(`authorize(): ${response.status} without a redirect`)
      const resolved = new URL(location, next)
      if (resolved.origin !== providerOrigin) return resolved
      next = resolved.href
    }
    throw new Error('authorize(): more than 10 redirects')
  }

  return Object.freeze({
    url: server.url,
    realm: settings.realm,
    issuer,
    jwksUri: `${issuer}${ROUTES.jwks}`,
    authorizationEndpoint: `${issuer}${ROUTES.authorization}`,
    tokenEndpoint: `${issuer}${ROUTES.token}`,
    endSessionEndpoint: `${issuer}${ROUTES.end_session}`,
    authorize,
    async rotateKeys(rotateOptions = {}) {
      const key = await generateTestKey('RS256')
      keys = rotateOptions.keepPrevious === false ? [key] : [key, ...keys]
      build()
      return key.kid
    },
    async sendBackchannelLogout(logout) {
      const client = settings.clients.get(logout.clientId)
      if (client?.backchannelLogoutUri === undefined) {
        throw new Error(
          `sendBackchannelLogout(): client "${logout.clientId}" is not registered with a backchannelLogoutUri`,
        )
      }
      if (logout.sub === undefined && logout.sid === undefined) {
        throw new TypeError('sendBackchannelLogout(): give "sub", "sid" or both')
      }
      const key = keys[0] as TestKey
      const now = Math.floor(Date.now() / 1000)
      const token = await signCompactJWS(
        key,
        { alg: key.alg, typ: 'logout+jwt', kid: key.kid },
        {
          iss: issuer,
          aud: client.clientId,
          iat: now,
          exp: now + LOGOUT_TOKEN_SECONDS,
          jti: randomUUID(),
          events: { [LOGOUT_EVENT]: {} },
          ...(logout.sub === undefined ? {} : { sub: logout.sub }),
          ...(logout.sid === undefined ? {} : { sid: logout.sid }),
        },
      )
      const response = await fetch(client.backchannelLogoutUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }).toString(),
      })
      await response.body?.cancel()
      return response.status
    },
    close: () => server.close(),
  } satisfies DevProvider)
}
