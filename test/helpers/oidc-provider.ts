/**
 * A real OpenID provider for the client-side tests: panva's `oidc-provider` (certified), one
 * instance per realm behind one loopback HTTP server, with Keycloak's paths
 * (`/realms/{realm}/protocol/openid-connect/{auth,token,certs}`) and issuer
 * `http://127.0.0.1:{port}/realms/{realm}`. Client Credentials on, resource indicators giving JWT
 * access tokens with a product audience (`urn:platform:office` → `aud: "office"`), refresh tokens
 * rotated on every use, and an authorization endpoint that signs a fixed user in without a page
 * (`authorize()`), so that the sign-in tests (Authorization Code + PKCE) can reuse it.
 *
 * The test controls it from outside only: it counts grants, can stop answering (`stop()`, the
 * port refuses connections) and come back on the same port (`start()`). Never a mock.
 *
 * @module
 */
import { generateKeyPairSync, type JsonWebKey, webcrypto, X509Certificate } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

import { importJWK, type JWK, SignJWT } from 'jose'
import Provider, {
  type ClientMetadata,
  type Configuration,
  errors,
  type KoaContextWithOIDC,
} from 'oidc-provider'
import { followAuthorization as followAuthorizationAs } from '../../src/testing/dev-authorize.js'
import { registerExchangeGrants } from '../../src/testing/dev-exchange.js'
import type { NormalizedDevProviderOptions } from '../../src/testing/dev-options.js'
import { createDevStore } from '../../src/testing/dev-store.js'
import type { TestKey } from '../../src/testing/keys.js'
import type { ProviderInstance } from '../../src/testing/oidc-provider-api.js'

/** A registered client, in oidc-provider's (RFC 7591) metadata. */
export type ProviderClient = ClientMetadata

/** One grant the token endpoint answered (successfully or not). */
export interface GrantRecord {
  readonly realm: string
  readonly grantType: string
  readonly clientId: string | undefined
  readonly scope: string | undefined
  readonly resource: string | readonly string[] | undefined
  readonly ok: boolean
  /** The OAuth error code of a refused grant. */
  readonly error: string | undefined
}

export interface StartProviderOptions {
  /** Realm names; each is one provider with its own keys. Default `['acme']`. */
  readonly realms?: readonly string[]
  /** Clients of every realm. */
  readonly clients: readonly ProviderClient[]
  /** Resource indicator → audience. Default: gateway, office, desk and pulse (`urn:platform:<name>`). */
  readonly resources?: Readonly<Record<string, string>>
  /** The resource of a request without one. Default `urn:platform:gateway`. */
  readonly defaultResource?: string
  /** Scopes each resource server grants. Default: the platform's. */
  readonly resourceScopes?: string
  /** Lifetime of access tokens, seconds. Default 300 (Keycloak's default). */
  readonly accessTokenSeconds?: number
  /** Lifetime of refresh tokens, seconds. Default 1800. */
  readonly refreshTokenSeconds?: number
  /**
   * Show a login form (user name, password `demo`) instead of signing `login_hint` in without a
   * page: what a browser meets at a real provider. Default false.
   */
  readonly interactiveLogin?: boolean
  /** OpenID Connect Back-Channel Logout 1.0: logout tokens to clients' `backchannel_logout_uri`. */
  readonly backchannelLogout?: boolean
  /**
   * OpenID Connect Front-Channel Logout 1.0, which oidc-provider v9 does not implement, emulated:
   * after the end-session confirmation the provider answers a page that loads, in an iframe each,
   * the `frontchannel_logout_uri` of every client of that provider session with `iss` and `sid`
   * (§2, §3), then goes where it would have redirected once they have loaded.
   */
  readonly frontchannelLogout?: boolean
  /**
   * The ID token algorithms the provider may sign with (oidc-provider's `enabledJWA`), for clients
   * whose `id_token_signed_response_alg` names one: `HS256`/`HS512` sign with the client secret.
   * Default: oidc-provider's (asymmetric ones).
   */
  readonly idTokenSigningAlgValues?: readonly string[]
  /** Claims added to every JWT access token (the demo's `tenant`). */
  readonly extraTokenClaims?: Readonly<Record<string, unknown>>
  /** Port on 127.0.0.1. Default 0 (a free one). */
  readonly port?: number
  /**
   * Resource indicator → the scopes (space-separated) an authorization request for it must ask
   * for: the authorization endpoint sends `error=invalid_scope` back to the redirect URI when a
   * requested `resource` needs a scope the request's `scope` lacks, as a provider that checks
   * each resource against the requested scopes does. Default: no such check.
   */
  readonly resourceScopesRequired?: Readonly<Record<string, string>>
  /**
   * Signs users in as if they had authenticated this many seconds ago (the ID token's
   * `auth_time`), whatever the request's `max_age`: a provider that ignores `max_age`. Default: now.
   */
  readonly loginAgeSeconds?: number
  /**
   * Token introspection (RFC 7662) at Keycloak's path `…/token/introspect`, and JWT responses
   * (RFC 9701) for clients registered with `introspection_signed_response_alg`. Default false.
   */
  readonly introspection?: boolean
  /** Resource indicators whose access tokens are opaque (oidc-provider's `accessTokenFormat`). */
  readonly opaqueResources?: readonly string[]
  /**
   * Certificate-bound access tokens (RFC 8705 §3, oidc-provider's `features.mTLS`): a client
   * registered with `tls_client_certificate_bound_access_tokens: true` gets tokens bound to the
   * certificate in the request's RFC 9440 `Client-Cert` field, as a provider behind a
   * TLS-terminating proxy reads it. Default false.
   */
  readonly mtls?: boolean
  /**
   * Token exchange (RFC 8693), by client id: which resources' tokens the client may exchange
   * (`from`) for which (`to`), with `act` naming it. The development provider's grant
   * (src/testing/dev-exchange.ts) registered on this provider, signing with the realm's key; the
   * client's `grant_types` must list `urn:ietf:params:oauth:grant-type:token-exchange`.
   */
  readonly tokenExchange?: Readonly<
    Record<string, { readonly from: readonly string[]; readonly to: readonly string[] }>
  >
}

/** What the token endpoint answers instead of the provider (a gateway in front of it). */
export interface TokenEndpointAnswer {
  readonly status: number
  readonly body?: string
  readonly contentType?: string
}

export interface RunningProvider {
  /** `http://127.0.0.1:{port}`: the `authUrl` of `keycloak()`. */
  readonly url: string
  issuer(realm?: string): string
  tokenEndpoint(realm?: string): string
  /** Every grant answered since the start or the last `resetGrants()`, in order. */
  readonly grants: GrantRecord[]
  /** Successful grants of a type (default `client_credentials`). */
  grantCount(grantType?: string): number
  resetGrants(): void
  /**
   * Runs the authorization endpoint for `user` (signed in and consenting without a page) and
   * returns the `code` sent to the redirect URI.
   */
  authorize(request: AuthorizeRequest): Promise<string>
  /**
   * Follows an authorization URL (the redirect an application's login route answers) as a
   * browser would, signing `user` in without a page, and returns the URL the provider sends the
   * browser back to (the redirect URI with `code`, `state` and `iss`, or with `error`).
   */
  followAuthorization(authorizationUrl: string, redirectUri: string, user?: string): Promise<URL>
  /**
   * Signs `user` out at the provider (RP-initiated logout with the provider session the last
   * `followAuthorization()` for that user opened, confirmed as on the page): with back-channel
   * logout on, the provider then POSTs logout tokens to the clients of that session.
   */
  endProviderSession(user?: string, realm?: string): Promise<void>
  /** Signs a JWT with the realm's own key, as the provider would (logout tokens in tests). */
  sign(
    claims: Record<string, unknown>,
    header?: Record<string, unknown>,
    realm?: string,
  ): Promise<string>
  /**
   * From now on the token endpoint answers `answer` without reaching the provider (a bare 403 of
   * a gateway, a `{"error":"unauthorized_client"}`); `undefined` lets requests through again.
   */
  interceptTokenEndpoint(answer: TokenEndpointAnswer | undefined): void
  /** Requests the introspection endpoint received (answered or not) since the start. */
  readonly introspections: number
  /**
   * From now on the introspection endpoint answers `answer` without reaching the provider, or
   * never answers (`'hang'`); `undefined` lets requests through again.
   */
  interceptIntrospection(answer: TokenEndpointAnswer | 'hang' | undefined): void
  /** Closes the port: new connections are refused, open ones dropped. */
  stop(): Promise<void>
  /** Listens again on the same port. */
  start(): Promise<void>
  close(): Promise<void>
}

export interface AuthorizeRequest {
  readonly realm?: string
  readonly clientId: string
  readonly redirectUri: string
  readonly scope: string
  /** Resource indicators the code (and its refresh token) may later be exchanged for. */
  readonly resource?: string | readonly string[]
  readonly user?: string
}

export const PLATFORM_RESOURCES: Readonly<Record<string, string>> = {
  'urn:platform:gateway': 'gateway',
  'urn:platform:office': 'office',
  'urn:platform:desk': 'desk',
  'urn:platform:pulse': 'pulse',
}

const PLATFORM_SCOPES =
  'billing:read office:records:read office:records:write desk:tickets:read pulse:read'

const KEYCLOAK_ROUTES = {
  authorization: '/protocol/openid-connect/auth',
  token: '/protocol/openid-connect/token',
  jwks: '/protocol/openid-connect/certs',
  userinfo: '/protocol/openid-connect/userinfo',
  end_session: '/protocol/openid-connect/logout',
  revocation: '/protocol/openid-connect/revoke',
  introspection: '/protocol/openid-connect/token/introspect',
} as const

/** Registers the development provider's exchange grant on `provider`, signing with `jwk`. */
async function registerTokenExchange(
  provider: Provider,
  issuer: string,
  jwk: JsonWebKey,
  setup: {
    readonly policies: NonNullable<StartProviderOptions['tokenExchange']>
    readonly resources: Readonly<Record<string, string>>
    readonly scopes: readonly string[]
    readonly accessTokenSeconds: number
  },
): Promise<void> {
  const privateKey = await webcrypto.subtle.importKey(
    'jwk',
    jwk as webcrypto.JsonWebKey,
    { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
    false,
    ['sign'],
  )
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = jwk
  const key: TestKey = {
    kid: 'rs-1',
    alg: 'RS256',
    privateKey,
    privateJwk: { ...jwk },
    publicJwk: { ...publicJwk },
  }
  const settings = {
    users: new Map(),
    clients: new Map(
      Object.entries(setup.policies).map(([clientId, policy]) => [
        clientId,
        { scopes: setup.scopes, exchange: policy },
      ]),
    ),
    resources: new Map(
      Object.entries(setup.resources).map(([indicator, audience]) => [
        indicator,
        { audience, scopes: setup.scopes },
      ]),
    ),
    accessTokenTtlSeconds: setup.accessTokenSeconds,
  } as unknown as NormalizedDevProviderOptions
  registerExchangeGrants(provider as unknown as ProviderInstance, issuer, settings, () => [key])
}

function signingKey(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return { ...privateKey.export({ format: 'jwk' }), kid: 'rs-1', alg: 'RS256', use: 'sig' }
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

/** The provider's page of Front-Channel Logout 1.0 §3: the clients' iframes, then `target`. */
function frontChannelPage(urls: readonly string[], target: string): string {
  const frames = urls
    .map((url) => `<iframe src="${escapeHtml(url)}" onload="loaded()" title="sign-out"></iframe>`)
    .join('\n')
  return `<!doctype html>
<html><head><title>Signing out</title>
<script>let left = ${urls.length}; function loaded() { if (--left === 0) location.replace(${JSON.stringify(target).replace(/</g, '\\u003c')}) }</script>
</head><body><h1>Signing out</h1>
${frames}
</body></html>`
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      resolve((server.address() as AddressInfo).port)
    })
  })
}

/** Starts the provider on a free 127.0.0.1 port. */
export async function startProvider(options: StartProviderOptions): Promise<RunningProvider> {
  const realms = options.realms ?? ['acme']
  const resources = options.resources ?? PLATFORM_RESOURCES
  const defaultResource = options.defaultResource ?? 'urn:platform:gateway'
  const resourceScopes = options.resourceScopes ?? PLATFORM_SCOPES
  const accessTokenSeconds = options.accessTokenSeconds ?? 300
  const grants: GrantRecord[] = []
  const providers = new Map<string, Provider>()
  const realmKeys = new Map<string, JsonWebKey>()
  const jars = new Map<string, Map<string, string>>()
  const handlers = new Map<string, ReturnType<Provider['callback']>>()
  let tokenAnswer: TokenEndpointAnswer | undefined
  let introspectionAnswer: TokenEndpointAnswer | 'hang' | undefined
  let introspections = 0
  const opaque = new Set(options.opaqueResources ?? [])

  const server = createServer((req, res) => route(req, res))
  const port = await listen(server, options.port ?? 0)
  const url = `http://127.0.0.1:${port}`

  const realmKey = (realm: string) => {
    const key = signingKey()
    realmKeys.set(realm, key)
    return key
  }

  for (const realm of realms) {
    const issuer = `${url}/realms/${realm}`
    const configuration: Configuration = {
      clients: options.clients.map((client) => ({ ...client })),
      jwks: { keys: [realmKey(realm)] },
      routes: KEYCLOAK_ROUTES,
      ...(options.frontchannelLogout === true
        ? {
            extraClientMetadata: {
              properties: ['frontchannel_logout_uri', 'frontchannel_logout_session_required'],
            },
          }
        : {}),
      ...(options.idTokenSigningAlgValues === undefined
        ? {}
        : { enabledJWA: { idTokenSigningAlgValues: [...options.idTokenSigningAlgValues] } }),
      scopes: ['openid', 'offline_access', 'profile', 'email', ...resourceScopes.split(' ')],
      features: {
        devInteractions: { enabled: false },
        ...(options.backchannelLogout === true ? { backchannelLogout: { enabled: true } } : {}),
        rpInitiatedLogout: {
          enabled: true,
          // The confirmation page a user sees at sign-out, kept plain so a browser test can click it.
          logoutSource: async (ctx: { body: string }, form: string) => {
            ctx.body = `<!doctype html><title>Sign out</title>${form}<p>Sign out of the platform?</p><button form="op.logoutForm" name="logout" value="yes">Sign out</button>`
          },
        },
        clientCredentials: { enabled: true },
        ...(options.introspection === true
          ? {
              // oidc-provider's default policy, stated: a client authenticated at the endpoint
              // may introspect any token (a resource server introspects other clients' tokens).
              introspection: { enabled: true, allowedPolicy: async () => true },
              jwtIntrospection: { enabled: true },
              revocation: { enabled: true },
            }
          : {}),
        ...(options.mtls === true
          ? {
              mTLS: {
                enabled: true,
                certificateBoundAccessTokens: true,
                getCertificate: (ctx: { req: IncomingMessage }) => {
                  const value = ctx.req.headers['client-cert']
                  const field = /^:([A-Za-z0-9+/=]+):$/.exec(String(value ?? ''))?.[1]
                  return field === undefined
                    ? undefined
                    : new X509Certificate(Buffer.from(field, 'base64'))
                },
              },
            }
          : {}),
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string) =>
            oneOf ?? defaultResource,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, indicator: string) => {
            const audience = resources[indicator]
            if (audience === undefined) throw new errors.InvalidTarget()
            return opaque.has(indicator)
              ? {
                  audience,
                  scope: resourceScopes,
                  accessTokenFormat: 'opaque',
                  accessTokenTTL: accessTokenSeconds,
                }
              : {
                  audience,
                  scope: resourceScopes,
                  accessTokenFormat: 'jwt',
                  accessTokenTTL: accessTokenSeconds,
                  jwt: { sign: { alg: 'RS256' } },
                }
          },
        },
      },
      interactions: {
        url: (_ctx, interaction) => `/realms/${realm}/interaction/${interaction.uid}`,
      },
      findAccount: async (_ctx, sub) => ({
        accountId: sub,
        claims: async () => ({
          sub,
          name: `User ${sub}`,
          preferred_username: sub,
          email: `${sub}@example.com`,
          email_verified: true,
        }),
      }),
      claims: {
        openid: ['sub'],
        profile: ['name', 'preferred_username'],
        email: ['email', 'email_verified'],
      },
      // Profile claims in the ID token itself (a code flow otherwise sends them to userinfo only).
      conformIdTokenClaims: false,
      // Every client allowed the refresh_token grant gets one, and it is rotated on every use, so
      // the tests see rotation every time.
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: true,
      pkce: { required: () => false },
      ...(options.extraTokenClaims === undefined
        ? {}
        : { extraTokenClaims: async () => ({ ...options.extraTokenClaims }) }),
      // oidc-provider refuses outgoing requests to special-use addresses (SSRF protection); this
      // provider only ever calls applications on loopback (back-channel logout), so it goes direct.
      fetch: (url: string, init: RequestInit & { dispatcher?: unknown }) => {
        const { dispatcher: _dispatcher, ...direct } = init
        return fetch(url, direct)
      },
      // The development provider's store, not oidc-provider's quick-start adapter, which prints a
      // notice at every start: a green run is quiet.
      adapter: createDevStore().adapter,
      ttl: {
        AccessToken: accessTokenSeconds,
        ClientCredentials: accessTokenSeconds,
        RefreshToken: options.refreshTokenSeconds ?? 1800,
        Session: 3600,
        Grant: 3600,
        Interaction: 600,
        AuthorizationCode: 60,
        IdToken: 300,
      },
    }
    const provider = new Provider(issuer, configuration)
    if (options.tokenExchange !== undefined) {
      await registerTokenExchange(provider, issuer, realmKeys.get(realm) as JsonWebKey, {
        policies: options.tokenExchange,
        resources,
        scopes: resourceScopes.split(' '),
        accessTokenSeconds,
      })
    }
    const record = (ctx: KoaContextWithOIDC, ok: boolean, error?: unknown) => {
      const params = ctx.oidc.params ?? {}
      grants.push({
        realm,
        grantType: String(params['grant_type'] ?? ''),
        clientId: ctx.oidc.client?.clientId,
        scope: params['scope'] as string | undefined,
        resource: params['resource'] as string | string[] | undefined,
        ok,
        error: ok
          ? undefined
          : ((error as { error?: string } | undefined)?.error ?? 'server_error'),
      })
    }
    if (options.frontchannelLogout === true) emulateFrontChannelLogout(provider, issuer)
    provider.on('grant.success', (ctx) => record(ctx, true))
    provider.on('grant.error', (ctx, error) => record(ctx, false, error))
    providers.set(realm, provider)
    handlers.set(realm, provider.callback())
  }

  /** The front-channel logout URIs of the registered clients, by client id. */
  function frontChannelUris(): Map<string, string> {
    const uris = new Map<string, string>()
    for (const client of options.clients) {
      const uri = (client as { frontchannel_logout_uri?: unknown }).frontchannel_logout_uri
      if (typeof client.client_id === 'string' && typeof uri === 'string') {
        uris.set(client.client_id, uri)
      }
    }
    return uris
  }

  function emulateFrontChannelLogout(provider: Provider, issuer: string): void {
    const uris = frontChannelUris()
    const frames = new WeakMap<object, string[]>()
    // The part of oidc-provider's (Koa) context and session this needs; it declares no types.
    interface EndSessionContext {
      oidc: { session?: { authorizations?: object; sidFor(clientId: string): string | undefined } }
      status: number
      type: string
      body: unknown
      response: { get(field: string): string }
      remove(field: string): void
    }
    const app = provider as unknown as {
      use(middleware: (ctx: EndSessionContext, next: () => Promise<void>) => Promise<void>): void
      Client: { prototype: { clientId: string; includeSid(): boolean } }
    }
    // §3: ID tokens carry `sid` for a client with front-channel logout, as they do for one with
    // back-channel logout (the only case oidc-provider knows).
    const { prototype } = app.Client
    const includeSid = prototype.includeSid
    prototype.includeSid = function (this: { clientId: string }) {
      return uris.has(this.clientId) || includeSid.call(this)
    }
    // The confirmation has ended the provider session (removed from storage, still in memory):
    // its clients and their sids are read here, before the answer is written.
    provider.on('end_session.success', (...args: unknown[]) => {
      const ctx = args[0] as EndSessionContext
      const session = ctx.oidc.session
      const urls: string[] = []
      for (const clientId of Object.keys(session?.authorizations ?? {})) {
        const uri = uris.get(clientId)
        const sid = session?.sidFor(clientId)
        if (uri === undefined || sid === undefined) continue
        const url = new URL(uri)
        url.searchParams.set('iss', issuer)
        url.searchParams.set('sid', sid)
        urls.push(url.href)
      }
      frames.set(ctx, urls)
    })
    app.use(async (ctx, next) => {
      await next()
      const urls = frames.get(ctx)
      const target = ctx.response.get('location')
      if (urls === undefined || urls.length === 0 || ctx.status !== 303 || target === '') return
      ctx.remove('location')
      ctx.status = 200
      ctx.type = 'html'
      ctx.body = frontChannelPage(urls, target)
    })
  }

  async function finishInteraction(
    provider: Provider,
    req: IncomingMessage,
    res: ServerResponse,
    signedIn?: string,
  ): Promise<void> {
    const details = await provider.interactionDetails(req, res)
    const user =
      signedIn ?? String((details.params['login_hint'] as string | undefined) ?? 'user-1')
    const grant = new provider.Grant({
      accountId: user,
      clientId: String(details.params['client_id']),
    })
    grant.addOIDCScope(String(details.params['scope']))
    // The user consents for every product, so a refresh token can be exchanged for any of them.
    for (const resource of Object.keys(resources)) grant.addResourceScope(resource, resourceScopes)
    const grantId = await grant.save()
    await provider.interactionFinished(
      req,
      res,
      {
        login: {
          accountId: user,
          ...(options.loginAgeSeconds === undefined
            ? {}
            : { ts: Math.floor(Date.now() / 1000) - options.loginAgeSeconds }),
        },
        consent: { grantId },
      },
      { mergeWithLastSubmission: false },
    )
  }

  /** The provider's login page: a form, then the password `demo` signs the named user in. */
  async function interactiveLogin(
    provider: Provider,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    if (req.method === 'POST') {
      let body = ''
      for await (const chunk of req) body += String(chunk)
      const form = new URLSearchParams(body)
      const user = form.get('username') ?? ''
      if (form.get('password') === 'demo' && /^[a-z0-9.-]{1,32}$/.test(user)) {
        return finishInteraction(provider, req, res, user)
      }
    }
    const details = await provider.interactionDetails(req, res)
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' })
    res.end(`<!doctype html>
<html><head><title>Sign in to the platform</title></head>
<body><h1>Sign in to the platform</h1>
<form method="post" action="${req.url?.split('?')[0] ?? ''}">
<input type="hidden" name="uid" value="${details.uid}">
<label>User name <input name="username" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button>
</form></body></html>`)
  }

  function route(req: IncomingMessage, res: ServerResponse): void {
    const match = /^\/realms\/([^/?#]+)(\/.*)?$/.exec(req.url ?? '')
    const realm = match?.[1]
    const provider = realm === undefined ? undefined : providers.get(realm)
    const handler = realm === undefined ? undefined : handlers.get(realm)
    if (provider === undefined || handler === undefined || match === null) {
      res.writeHead(404).end()
      return
    }
    const rest = match[2] ?? '/'
    if (rest.startsWith('/interaction/') && options.interactiveLogin === true) {
      interactiveLogin(provider, req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
      return
    }
    if (rest.startsWith('/interaction/')) {
      finishInteraction(provider, req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
      return
    }
    if (tokenAnswer !== undefined && rest.split('?')[0] === KEYCLOAK_ROUTES.token) {
      const { status, body = '', contentType } = tokenAnswer
      // Drained first: answering before the body is read could reset the client's connection.
      req.resume()
      req.once('end', () => {
        res.writeHead(status, contentType === undefined ? {} : { 'Content-Type': contentType })
        res.end(body)
      })
      return
    }
    if (rest.split('?')[0] === KEYCLOAK_ROUTES.introspection) {
      introspections++
      const answer = introspectionAnswer
      if (answer === 'hang') {
        req.resume()
        return
      }
      if (answer !== undefined) {
        req.resume()
        req.once('end', () => {
          res.writeHead(
            answer.status,
            answer.contentType === undefined ? {} : { 'Content-Type': answer.contentType },
          )
          res.end(answer.body ?? '')
        })
        return
      }
    }
    if (
      options.resourceScopesRequired !== undefined &&
      rest.split('?')[0] === KEYCLOAK_ROUTES.authorization &&
      refuseScopes(String(realm), rest, options.resourceScopesRequired, res)
    ) {
      return
    }
    // oidc-provider finds its mount path from the difference between originalUrl and url.
    Object.assign(req, { originalUrl: req.url, url: rest })
    void handler(req, res)
  }

  /**
   * The authorization endpoint's resource-against-scope check: `true` when it refused, sending
   * the browser back to the redirect URI with `error=invalid_scope` (RFC 6749 §4.1.2.1).
   */
  function refuseScopes(
    realm: string,
    rest: string,
    required: Readonly<Record<string, string>>,
    res: ServerResponse,
  ): boolean {
    const query = new URL(rest, 'http://provider.invalid').searchParams
    const granted = new Set((query.get('scope') ?? '').split(' '))
    const missing = query
      .getAll('resource')
      .flatMap((resource) => (required[resource] ?? '').split(' ').filter(Boolean))
      .filter((scope) => !granted.has(scope))
    const redirectUri = query.get('redirect_uri')
    if (missing.length === 0 || redirectUri === null) return false
    const back = new URL(redirectUri)
    back.searchParams.set('error', 'invalid_scope')
    back.searchParams.set('error_description', `resource requires scope ${missing.join(' ')}`)
    const state = query.get('state')
    if (state !== null) back.searchParams.set('state', state)
    back.searchParams.set('iss', issuerOf(realm))
    res.writeHead(303, { Location: back.href }).end()
    return true
  }

  const sockets = new Set<import('node:net').Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })

  async function stop(): Promise<void> {
    if (!server.listening) return
    const closed = new Promise((resolve) => server.close(resolve))
    for (const socket of sockets) socket.destroy()
    await closed
  }

  const issuerOf = (realm = realms[0] as string) => `${url}/realms/${realm}`

  async function followAuthorization(
    authorizationUrl: string,
    redirectUri: string,
    user = 'user-1',
  ): Promise<URL> {
    // The kit's own walk through the provider (src/testing/dev-authorize.ts), with this user's jar
    // kept for the end-session page.
    const cookies = new Map<string, string>()
    jars.set(user, cookies)
    const back = await followAuthorizationAs(
      new URL(authorizationUrl).origin,
      authorizationUrl,
      user,
      cookies,
    )
    if (!back.href.startsWith(redirectUri)) {
      throw new Error(`authorize: left the provider for ${back.origin}, not the redirect URI`)
    }
    return back
  }

  return {
    url,
    issuer: issuerOf,
    tokenEndpoint: (realm) => `${issuerOf(realm)}${KEYCLOAK_ROUTES.token}`,
    grants,
    grantCount: (grantType = 'client_credentials') =>
      grants.filter((grant) => grant.ok && grant.grantType === grantType).length,
    resetGrants: () => {
      grants.length = 0
    },
    async authorize(request) {
      const target = new URL(`${issuerOf(request.realm)}${KEYCLOAK_ROUTES.authorization}`)
      const query = new URLSearchParams({
        client_id: request.clientId,
        redirect_uri: request.redirectUri,
        response_type: 'code',
        scope: request.scope,
        prompt: 'consent',
      })
      for (const resource of [request.resource ?? []].flat()) query.append('resource', resource)
      target.search = query.toString()
      const back = await followAuthorization(target.href, request.redirectUri, request.user)
      const code = back.searchParams.get('code')
      if (code === null) throw new Error(`authorize: refused (${back.searchParams.get('error')})`)
      return code
    },
    followAuthorization,
    async endProviderSession(user = 'user-1', realm) {
      const cookies = jars.get(user)
      if (cookies === undefined) throw new Error(`endProviderSession: ${user} never signed in`)
      const cookie = () => [...cookies].map(([name, value]) => `${name}=${value}`).join('; ')
      const endpoint = `${issuerOf(realm)}${KEYCLOAK_ROUTES.end_session}`
      const page = await fetch(endpoint, { headers: { cookie: cookie() } })
      const html = await page.text()
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1]
      const action = /action="([^"]+)"/.exec(html)?.[1]
      if (xsrf === undefined || action === undefined) throw new Error('endProviderSession: no form')
      const confirmed = await fetch(new URL(action, endpoint), {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
      })
      await confirmed.body?.cancel()
      if (confirmed.status !== 303 && confirmed.status !== 302) {
        throw new Error(`endProviderSession: ${confirmed.status}`)
      }
    },
    async sign(claims, header = {}, realm = realms[0] as string) {
      const key = await importJWK(realmKeys.get(realm) as JWK, 'RS256')
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'rs-1', ...header })
        .sign(key)
    },
    interceptTokenEndpoint(answer) {
      tokenAnswer = answer
    },
    get introspections() {
      return introspections
    },
    interceptIntrospection(answer) {
      introspectionAnswer = answer
    },
    stop,
    start: async () => {
      if (!server.listening) await listen(server, port)
    },
    close: stop,
  }
}
