/**
 * `createDevProvider()`: a complete development OpenID provider on loopback, Keycloak-shaped,
 * built on panva's oidc-provider (an optional peer dependency, loaded only here).
 *
 * @module
 */
import { createHash, randomBytes, X509Certificate } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

import { audienceAsResource } from './dev-audience.js'
import { followAuthorization } from './dev-authorize.js'
import { configuration, ROUTES } from './dev-configuration.js'
import { mintAccessToken, registerExchangeGrants } from './dev-exchange.js'
import { loopbackHosts, refuseInProduction } from './dev-guard.js'
import { answerInteraction } from './dev-interaction.js'
import { sendLogoutToken } from './dev-logout.js'
import { type DevProviderOptions, normalizeDevProviderOptions } from './dev-options.js'
import { createDevStatusList, DEV_STATUS_LIST } from './dev-status.js'
import { createDevStore } from './dev-store.js'
import { listenOnLoopback, sendReply } from './http.js'
import { generateTestKey, type TestKey } from './keys.js'
import { loadOidcProvider, type ProviderInstance } from './oidc-provider-api.js'
import { type SignedOutSession, transmitSignOut } from './ssf-transmitter.js'

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
   * `{issuer}/protocol/openid-connect/token/introspect` (RFC 7662; RFC 9701 JWT responses on
   * request): where an API checks the opaque tokens of a resource with `accessTokenFormat: 'opaque'`.
   * Any registered client may call it with its credentials.
   */
  readonly introspectionEndpoint: string
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
  /**
   * An access token for `user` (a configured `sub`) as a sign-in at `clientId` with `resource`
   * and `scope` would give it, without the pages: signed with the provider's current key (header
   * `typ: at+jwt`), with the user's `tokenClaims`, `auth_time` and, when the provider has
   * `acrValues`, the `acr` the sign-in would complete with. For tests and samples that need a
   * user's token (to exchange it, to try step-up or certificate binding, for instance).
   *
   * @throws TypeError for an unknown user or client, a resource the client may not ask for or
   *   whose tokens are opaque (`accessTokenFormat: 'opaque'`: they come from the token endpoint),
   *   a scope the resource does not have, `acrValues` of which the provider supports none, an
   *   `authTime` or `expiresInSeconds` that is not whole seconds, or a `certificate` that is not
   *   one.
   */
  accessTokenFor(user: string, options: DevAccessTokenOptions): Promise<string>
  /**
   * Disables a user's account as an administrator would: sends RISC `account-disabled` (RISC 1.0
   * §2.2) for the user (an `iss_sub` subject with this provider's `issuer`) through each `ssf`
   * transmitter, and resolves once it was delivered (pushed, or queued for polling). The user can
   * still sign in here: only the signal is sent.
   *
   * @throws TypeError without the `ssf` option, or for a user who is not configured.
   */
  disableAccount(sub: string): Promise<void>
  /**
   * With `statusList: true`: where the provider's status list is served,
   * `{issuer}/statuslists/access-tokens`; `undefined` without it.
   */
  readonly statusListUri: string | undefined
  /**
   * With `statusList: true`: sets the status of `accessToken` (one this provider signed, expired
   * or not) to INVALID in its status list, served so from the next fetch of the list on. A gate
   * with `statusList` refuses the token once its cached copy of the list is refreshed.
   *
   * @throws TypeError for a token this provider did not sign, or one that names no index of its
   *   list (the provider was started without `statusList: true`, or the token is opaque).
   */
  revokeToken(accessToken: string): Promise<void>
  /** Stops for good, dropping open connections. */
  close(): Promise<void>
}

/** What {@link DevProvider.accessTokenFor} is asked for. */
export interface DevAccessTokenOptions {
  /** The client the user signs in at (a configured `clientId`): the token's `client_id`. */
  readonly clientId: string
  /** One of the client's `audiences`: the token's `aud` is that resource's `audience`. */
  readonly resource: string
  /** Space-separated scopes of `resource`. Default: the client's scopes of that resource. */
  readonly scope?: string
  /**
   * Space-separated `acr` values, as a step-up sign-in asks for them (`acr_values`): the token's
   * `acr` is the first of them the provider's `acrValues` lists, as a sign-in completes with it.
   * Default: the provider's first `acrValues`, and no `acr` when it has none.
   */
  readonly acrValues?: string
  /**
   * When the user signed in (`auth_time`), seconds since the epoch: an older one tries
   * `requireRecentSignIn()`. Default: now.
   */
  readonly authTime?: number
  /** How long the token is valid, in seconds. Default: the provider's `accessTokenTtlSeconds`. */
  readonly expiresInSeconds?: number
  /**
   * Binds the token to this client certificate (RFC 8705 §3): `cnf: { 'x5t#S256': … }`, the
   * base64url SHA-256 of its DER, as a provider issues certificate-bound tokens to a client that
   * authenticated with it. A PEM string or a `node:crypto` `X509Certificate`.
   */
  readonly certificate?: string | X509Certificate
}

export type {
  DevClient,
  DevClientAuth,
  DevExchangePolicy,
  DevGrantType,
  DevProviderOptions,
  DevResource,
  DevUser,
} from './dev-options.js'

const REALM_PATH = /^\/realms\/([^/?#]+)(\/[^?#]*)?/
/**
 * Starts a development OpenID provider on 127.0.0.1, with Keycloak's paths under
 * `/realms/{realm}`: discovery, an authorization endpoint with a sign-in page listing `users`
 * (PKCE required), a token endpoint for `authorization_code`, `refresh_token` (rotated, reuse
 * revokes the grant), `client_credentials` and token exchange (RFC 8693, and Entra's on-behalf-of
 * shape, per each client's `exchange` policy), honouring `scope`, `resource` (RFC 8707) and
 * `audience`, ID tokens with profile claims, userinfo, end-session and back-channel logout, and
 * token introspection (RFC 7662, RFC 9701) for APIs whose tokens are opaque
 * (`resources: { …: { accessTokenFormat: 'opaque' } }`) and revocation (RFC 7009). Refusals are
 * oidc-provider's, as any certified provider answers: `invalid_client`, `invalid_grant`,
 * `invalid_scope`, `invalid_target`. Everything is kept in memory. Close it when done.
 *
 * Needs `oidc-provider` (v9) installed: it is an optional peer dependency of `tollgate/testing`.
 *
 * A development tool, guarded as one: it refuses to start where `NODE_ENV` is `production`
 * (unless `allowInProduction`), the one place tollgate reads the environment on its own, and it
 * answers only requests whose `Host` is `127.0.0.1`, `localhost` or `[::1]` with its port (421
 * otherwise, before anything is served), so that a page of another site cannot reach it from a
 * browser through DNS rebinding.
 *
 * @throws TypeError when an option is invalid (the message names it and what to fix), or under
 * `NODE_ENV=production` without `allowInProduction`.
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
  refuseInProduction(settings.allowInProduction)
  const oidc = await loadOidcProvider()
  const store = createDevStore()
  const cookieKeys = [randomBytes(32).toString('base64url')]
  let keys: TestKey[] = [await generateTestKey('RS256')]
  let provider: ProviderInstance | undefined
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined

  // Empty until the port is known: a request arriving before that is refused like any other.
  let hosts: ReadonlySet<string> = new Set()
  const server = await listenOnLoopback((req, res) => route(req, res), settings.port)
  const issuer = `${server.url}/realms/${settings.realm}`
  hosts = loopbackHosts(Number(new URL(server.url).port))
  const statusList = settings.statusList ? createDevStatusList(issuer) : undefined

  const build = () => {
    const next = new oidc.default(
      issuer,
      configuration(settings, oidc, keys, store, cookieKeys, statusList),
    )
    registerExchangeGrants(next, issuer, settings, () => keys, statusList)
    if (settings.ssf.length > 0) {
      // A sign-out at the end-session page: the session still holds the account and the
      // clients' authorizations after oidc-provider destroyed it. transmitSignOut never rejects.
      next.on('end_session.success', (ctx) => {
        const session = (ctx as { oidc?: { session?: SignedOutSession } }).oidc?.session
        if (session === undefined) return
        for (const transmitter of settings.ssf) void transmitSignOut(transmitter, issuer, session)
      })
    }
    provider = next
    handler = next.callback()
  }
  try {
    build()
  } catch (error) {
    await server.close()
    throw error
  }

  function route(req: IncomingMessage, res: ServerResponse): void {
    // DNS rebinding: a page of another site reaches this port from the user's browser under its
    // own name. Nothing is served to a request not addressed to loopback.
    if (!hosts.has(req.headers.host?.toLowerCase() ?? '')) {
      res
        .writeHead(421, { 'content-type': 'application/json', connection: 'close' })
        .end(
          '{"error":"invalid_request","error_description":"this provider answers on 127.0.0.1, localhost and [::1] only"}',
        )
      return
    }
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
    if (statusList !== undefined && rest.split('?', 1)[0] === `/statuslists/${DEV_STATUS_LIST}`) {
      if (req.method !== 'GET') {
        res.writeHead(405, { allow: 'GET' }).end()
        return
      }
      statusList.reply(keys[0] as TestKey).then(
        (reply) => sendReply(res, reply),
        () => {
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
          res.end('{"error":"server_error"}')
        },
      )
      return
    }
    if (rest.startsWith('/interaction/')) {
      answerInteraction(provider, settings, req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
        res.end('{"error":"server_error"}')
      })
      return
    }
    const mounted = handler
    const forward = (request: IncomingMessage) => {
      // oidc-provider finds its mount path from the difference between originalUrl and url.
      Object.assign(request, { originalUrl: req.url, url: rest })
      mounted(request, res)
    }
    if (rest.split('?', 1)[0] !== ROUTES.token) {
      forward(req)
      return
    }
    audienceAsResource(req, settings.resources).then(forward, () => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' })
      res.end('{"error":"invalid_request"}')
    })
  }

  async function authorize(
    authorizationUrl: string,
    authorizeOptions: { readonly user?: string } = {},
  ): Promise<URL> {
    const user = authorizeOptions.user ?? settings.autoLogin ?? [...settings.users.keys()][0] ?? ''
    if (!settings.users.has(user)) {
      throw new TypeError(`authorize(): "${user}" is not a configured user`)
    }
    return followAuthorization(issuer, authorizationUrl, user)
  }

  return Object.freeze({
    url: server.url,
    realm: settings.realm,
    issuer,
    jwksUri: `${issuer}${ROUTES.jwks}`,
    authorizationEndpoint: `${issuer}${ROUTES.authorization}`,
    tokenEndpoint: `${issuer}${ROUTES.token}`,
    endSessionEndpoint: `${issuer}${ROUTES.end_session}`,
    introspectionEndpoint: `${issuer}${ROUTES.introspection}`,
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
      return sendLogoutToken(
        issuer,
        keys[0] as TestKey,
        { ...client, backchannelLogoutUri: client.backchannelLogoutUri },
        logout,
      )
    },
    statusListUri: statusList?.uri,
    async revokeToken(accessToken) {
      if (statusList === undefined) {
        throw new TypeError(
          'revokeToken(): the provider issues no status list: start it with createDevProvider({ statusList: true })',
        )
      }
      await statusList.revoke(accessToken, keys)
    },
    async disableAccount(sub) {
      if (settings.ssf.length === 0) {
        throw new TypeError(
          'disableAccount(): the provider has no transmitter: start it with createDevProvider({ ssf: await createTestTransmitter(…) })',
        )
      }
      if (!settings.users.has(sub)) {
        throw new TypeError(`disableAccount(): "${sub}" is not a configured user`)
      }
      await Promise.all(settings.ssf.map((stream) => stream.accountDisabled({ iss: issuer, sub })))
    },
    async accessTokenFor(user, tokenOptions) {
      const person = settings.users.get(user)
      const client = settings.clients.get(tokenOptions?.clientId)
      const resource = settings.resources.get(tokenOptions?.resource)
      if (person === undefined)
        throw new TypeError(`accessTokenFor(): "${user}" is not a configured user`)
      if (
        client === undefined ||
        resource === undefined ||
        !client.audiences.includes(tokenOptions.resource)
      ) {
        throw new TypeError(
          'accessTokenFor(): "clientId" must be a configured client and "resource" one of its audiences',
        )
      }
      if (resource.accessTokenFormat === 'opaque') {
        // A JWT minted here would be one this provider never issues for that API, unknown to its
        // introspection endpoint.
        throw new TypeError(
          `accessTokenFor(): ${tokenOptions.resource} has accessTokenFormat 'opaque': its tokens come from the token endpoint (a sign-in, or createTokenSource()), never from accessTokenFor()`,
        )
      }
      const offered = resource.scopes.filter((scope) => client.scopes.includes(scope))
      const scopes = tokenOptions.scope?.split(' ').filter(Boolean) ?? offered
      if (scopes.some((scope) => !resource.scopes.includes(scope))) {
        throw new TypeError(`accessTokenFor(): "scope" must be scopes of ${tokenOptions.resource}`)
      }
      const acr = acrFor(settings.acrValues, tokenOptions.acrValues)
      const now = Math.floor(Date.now() / 1000)
      const authTime = tokenOptions.authTime ?? now
      if (!Number.isSafeInteger(authTime) || authTime < 0) {
        throw new TypeError('accessTokenFor(): "authTime" must be whole seconds since the epoch')
      }
      const lifetime = tokenOptions.expiresInSeconds ?? settings.accessTokenTtlSeconds
      if (!Number.isSafeInteger(lifetime) || lifetime < 1) {
        throw new TypeError(
          'accessTokenFor(): "expiresInSeconds" must be a whole number of seconds, at least 1',
        )
      }
      const thumbprint =
        tokenOptions.certificate === undefined
          ? undefined
          : certificateThumbprint(tokenOptions.certificate)
      return mintAccessToken(issuer, keys[0] as TestKey, {
        ...person.tokenClaims,
        sub: user,
        iat: now,
        exp: now + lifetime,
        ...(scopes.length === 0 ? {} : { scope: scopes.join(' ') }),
        client_id: client.clientId,
        aud: resource.audience,
        auth_time: authTime,
        ...(acr === undefined ? {} : { acr }),
        ...(thumbprint === undefined ? {} : { cnf: { 'x5t#S256': thumbprint } }),
        ...statusList?.claim(),
      })
    },
    close: () => server.close(),
  } satisfies DevProvider)
}

/**
 * The `acr` a sign-in asking for `requested` completes with: the first asked that the provider
 * supports; without a request, the provider's first (none when it has none).
 */
function acrFor(supported: readonly string[], requested: unknown): string | undefined {
  if (requested === undefined) return supported[0]
  const asked = typeof requested === 'string' ? requested.split(' ').filter(Boolean) : []
  const acr = asked.find((value) => supported.includes(value))
  if (acr === undefined) {
    throw new TypeError(
      supported.length === 0
        ? 'accessTokenFor(): "acrValues" needs the provider\'s acrValues option: createDevProvider({ acrValues: [...] })'
        : `accessTokenFor(): "acrValues" must name one of the provider's acrValues: ${supported.join(' ')}`,
    )
  }
  return acr
}

/** RFC 8705 §3.1: base64url of the SHA-256 of the certificate's DER. */
function certificateThumbprint(certificate: unknown): string {
  let x509: X509Certificate
  try {
    x509 =
      certificate instanceof X509Certificate
        ? certificate
        : new X509Certificate(typeof certificate === 'string' ? certificate : '')
  } catch (error) {
    throw new TypeError(
      'accessTokenFor(): "certificate" must be a PEM certificate or an X509Certificate',
      { cause: error },
    )
  }
  return createHash('sha256').update(x509.raw).digest('base64url')
}
