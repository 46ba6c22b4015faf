/**
 * The MCP TypeScript SDK's own client (1.x: `@modelcontextprotocol/sdk`; 2.x:
 * `@modelcontextprotocol/client`) signing in at the development provider as a user would: the
 * SDK meets the 401, discovers the metadata and the authorization server, opens the authorization
 * URL (PKCE, `resource`, `scope`), the user signs in there (the provider's `authorize()`, the
 * browser without the page), and the client redeems the code and calls tools.
 *
 * With `dpop`, tokens are DPoP-bound (RFC 9449). SDK 2.x does it itself (its provider's `dpop()`:
 * a proof at the token endpoint, `Authorization: DPoP` and a fresh proof on every request, DPoP
 * challenges read). SDK 1.x cannot: it sends every token as `Bearer` and its token request takes
 * no proof. So on 1.x the SDK still discovers and opens the authorization URL, and oauth4webapi
 * does the DPoP parts: the code is redeemed with a proof (`authorizationCodeGrantRequest` with its
 * `DPoP` handle), and the transport's `fetch` sends each request through
 * `protectedResourceRequest` with the same handle, which presents the token as `DPoP` with a proof.
 */

import {
  auth as auth2,
  Client as Client2,
  DpopSession,
  type OAuthClientProvider as OAuthClientProvider2,
  type OAuthDiscoveryState as OAuthDiscoveryState2,
  StreamableHTTPClientTransport as Transport2,
  UnauthorizedError as UnauthorizedError2,
} from '@modelcontextprotocol/client'
import {
  auth as auth1,
  type OAuthClientProvider as OAuthClientProvider1,
  type OAuthDiscoveryState as OAuthDiscoveryState1,
  UnauthorizedError as UnauthorizedError1,
} from '@modelcontextprotocol/sdk/client/auth.js'
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import * as oauth from 'oauth4webapi'

import type { DevProvider } from '../../src/testing/index.js'
import type { SdkVersion } from './mcp-servers.js'

export const REDIRECT_URI = 'http://127.0.0.1:4999/callback'
/** The client registered at the development provider (`mcpClient()` registers it). */
export const MCP_CLIENT = { clientId: 'mcp-inspector', clientSecret: 'inspector-secret' }

/** The registration of {@link MCP_CLIENT} at the development provider. */
export const mcpClient = () => ({
  ...MCP_CLIENT,
  clientAuth: 'client_secret_post' as const,
  redirectUris: [REDIRECT_URI],
  // No refresh token: a step-up is a new authorization, not a refresh of the narrow grant.
  grantTypes: ['authorization_code' as const, 'client_credentials' as const],
})

/** The SDK's `UnauthorizedError` of each version: what a flow that needs the user rejects with. */
export const UNAUTHORIZED = { '1.x': UnauthorizedError1, '2.x': UnauthorizedError2 } as const

/**
 * One request the client sent to the MCP endpoint, and the answer's status and challenge, in the
 * order the answers came (the SDK's GET stream is answered while other requests run).
 */
export interface SentRequest {
  readonly method: string
  readonly headers: Headers
  readonly body: string | undefined
  /** The tool a `tools/call` body calls. */
  readonly tool: string | undefined
  readonly status: number
  readonly challenge: string | null
}

/** A user of an MCP client, signing in at the development provider. */
export interface McpUser {
  /** The authorization URLs the client opened, in order. */
  readonly authorizationUrls: readonly URL[]
  /** What the client sent to the MCP endpoint, in order. */
  readonly sent: readonly SentRequest[]
  /** The RFC 7638 thumbprint of the client's DPoP key; `undefined` without DPoP. */
  readonly dpopThumbprint: Promise<string> | undefined
  /** The tokens the client holds. */
  tokens(): OAuthTokens | undefined
  /**
   * Connects as a new client does: the 401, discovery, the authorization URL opened; the user
   * signs in, the code is redeemed, and the client connects again with its token.
   */
  signIn(): Promise<void>
  /** The user signs in at the last authorization URL opened; the client redeems the code. */
  authorize(): Promise<void>
  /** Asks for an authorization of `scope` through the SDK's `auth()`: an authorization URL opened. */
  requestScope(scope: string): Promise<void>
  /** Calls a tool without arguments: the text of its answer. */
  callTool(name: string): Promise<string>
  close(): Promise<void>
}

export interface McpUserOptions {
  /** The MCP endpoint. */
  readonly url: string
  readonly provider: DevProvider
  /** DPoP-bound tokens (RFC 9449). Default false. */
  readonly dpop?: boolean
}

/** What discovery found, as either SDK major saves it (one object, read back by the same SDK). */
type DiscoveryState = OAuthDiscoveryState1 & OAuthDiscoveryState2

/** The SDK's OAuth provider interface, kept in memory; the browser is the dev provider's `authorize`. */
class MemoryOAuthProvider implements OAuthClientProvider1, OAuthClientProvider2 {
  #tokens: OAuthTokens | undefined
  #verifier = ''
  #discovery: DiscoveryState | undefined
  readonly #dpop: Promise<DpopSession> | undefined
  readonly authorizationUrls: URL[] = []
  readonly redirectUrl = REDIRECT_URI
  readonly clientMetadata = {
    client_name: 'tollgate test client',
    redirect_uris: [REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    scope: 'mcp:use',
  }
  constructor(dpop: Promise<DpopSession> | undefined) {
    this.#dpop = dpop
  }
  clientInformation() {
    return { client_id: MCP_CLIENT.clientId, client_secret: MCP_CLIENT.clientSecret }
  }
  tokens(): OAuthTokens | undefined {
    return this.#tokens
  }
  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrls.push(url)
  }
  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier
  }
  codeVerifier(): string {
    return this.#verifier
  }
  // RFC 8414 / RFC 9728 discovery as the SDK saved it: 2.x checks the callback's `iss` against
  // it (RFC 9207); the 1.x DPoP flow reads the authorization server's metadata from it.
  saveDiscoveryState(state: DiscoveryState): void {
    this.#discovery = state
  }
  discoveryState(): DiscoveryState | undefined {
    return this.#discovery
  }
  /** 2.x: the DPoP session, when DPoP is on (1.x does not call it). */
  dpop(): Promise<DpopSession> | undefined {
    return this.#dpop
  }
}

/** The tool a JSON-RPC `tools/call` body calls. */
function toolOf(body: string | undefined): string | undefined {
  const message = body === undefined ? undefined : JSON.parse(body)
  return message?.method === 'tools/call' ? message.params?.name : undefined
}

/** Records what the client sent to `endpoint`, and the answers. */
function recording(endpoint: string, sent: SentRequest[]): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init)
    if (String(url) === endpoint) {
      const body = typeof init?.body === 'string' ? init.body : undefined
      sent.push({
        method: init?.method ?? 'GET',
        headers: new Headers(init?.headers),
        body,
        tool: toolOf(body),
        status: response.status,
        challenge: response.headers.get('www-authenticate'),
      })
    }
    return response
  }
}

/**
 * SDK 1.x's transport `fetch` for DPoP-bound tokens: a request the SDK sends with `Bearer <token>`
 * goes through oauth4webapi's `protectedResourceRequest` with the DPoP handle, which sends the
 * token as `DPoP` with a fresh proof for this method and URL. A challenge in the answer is handed
 * back to the SDK as the response it is (oauth4webapi throws it as an error).
 */
function dpopFetch(dpop: oauth.DPoPHandle, inner: FetchLike): FetchLike {
  return async (url, init) => {
    const headers = new Headers(init?.headers)
    const credentials = headers.get('authorization')
    if (credentials === null || !credentials.startsWith('Bearer ')) return inner(url, init)
    headers.delete('authorization')
    try {
      return await oauth.protectedResourceRequest(
        credentials.slice('Bearer '.length),
        init?.method ?? 'GET',
        new URL(url),
        headers,
        (init?.body ?? null) as oauth.ProtectedResourceRequestBody,
        {
          DPoP: dpop,
          ...(init?.signal ? { signal: init.signal } : {}),
          [oauth.customFetch]: (target, options) => inner(target, options as RequestInit),
          [oauth.allowInsecureRequests]: true,
        },
      )
    } catch (error) {
      if (error instanceof oauth.WWWAuthenticateChallengeError) return error.response
      throw error
    }
  }
}

/** A client and its transport of one SDK major, reconnected over a new transport on demand. */
interface Connection {
  connect(): Promise<void>
  finishAuth(callback: URL): Promise<void>
  callTool(name: string): Promise<unknown>
  close(): Promise<void>
}

function connection1(url: URL, authProvider: OAuthClientProvider1, fetch: FetchLike): Connection {
  const client = new Client1({ name: 'tollgate-test-client', version: '1.0.0' })
  let transport: Transport1 | undefined
  return {
    async connect() {
      await transport?.close()
      transport = new Transport1(url, { authProvider, fetch })
      await client.connect(transport)
    },
    finishAuth: (callback) =>
      (transport as Transport1).finishAuth(callback.searchParams.get('code') ?? ''),
    callTool: (name) => client.callTool({ name, arguments: {} }),
    close: () => client.close(),
  }
}

function connection2(url: URL, authProvider: OAuthClientProvider2, fetch: FetchLike): Connection {
  const client = new Client2({ name: 'tollgate-test-client', version: '1.0.0' })
  let transport: Transport2 | undefined
  return {
    async connect() {
      await transport?.close()
      transport = new Transport2(url, { authProvider, fetch })
      await client.connect(transport)
    },
    // 2.x takes the callback's parameters: it checks `iss` (RFC 9207) before reading the code.
    finishAuth: (callback) => (transport as Transport2).finishAuth(callback.searchParams),
    callTool: (name) => client.callTool({ name, arguments: {} }),
    close: () => client.close(),
  }
}

const textOf = (result: unknown): string =>
  ((result as { content: { text: string }[] }).content[0] as { text: string }).text

/**
 * SDK 1.x with DPoP: the code redeemed by oauth4webapi with a proof, at the token endpoint of the
 * authorization server the SDK discovered, for the `resource` the SDK asked for.
 */
async function redeemWithDpop(
  oauthProvider: MemoryOAuthProvider,
  dpop: oauth.DPoPHandle,
  callback: URL,
): Promise<void> {
  const as = oauthProvider.discoveryState()
    ?.authorizationServerMetadata as oauth.AuthorizationServer
  const client: oauth.Client = { client_id: MCP_CLIENT.clientId }
  const resource = oauthProvider.authorizationUrls.at(-1)?.searchParams.get('resource')
  const parameters = oauth.validateAuthResponse(as, client, callback, oauth.expectNoState)
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.ClientSecretPost(MCP_CLIENT.clientSecret),
    parameters,
    REDIRECT_URI,
    oauthProvider.codeVerifier(),
    {
      DPoP: dpop,
      ...(resource ? { additionalParameters: { resource } } : {}),
      [oauth.allowInsecureRequests]: true,
    },
  )
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
  oauthProvider.saveTokens({
    access_token: tokens.access_token,
    token_type: tokens.token_type,
    ...(tokens.scope === undefined ? {} : { scope: tokens.scope }),
    ...(tokens.expires_in === undefined ? {} : { expires_in: tokens.expires_in }),
  })
}

/** A user of the `sdk` client of the MCP endpoint at `url`, signing in at `provider`. */
export function mcpUser(sdk: SdkVersion, options: McpUserOptions): McpUser {
  const { url, provider } = options
  const sent: SentRequest[] = []
  const record = recording(url, sent)
  const session2 = options.dpop === true && sdk === '2.x' ? DpopSession.create() : undefined
  const oauthProvider = new MemoryOAuthProvider(session2)
  // 1.x: oauth4webapi's DPoP handle over a key pair of its own making.
  const keys1 = options.dpop === true && sdk === '1.x' ? oauth.generateKeyPair('ES256') : undefined
  const handle1 = keys1?.then((keys) => oauth.DPoP({}, keys))
  let connection: Connection | undefined
  const connected = async (): Promise<Connection> => {
    if (connection !== undefined) return connection
    if (sdk === '2.x') {
      connection = connection2(new URL(url), oauthProvider, record)
    } else {
      const dpop = await handle1
      const fetch = dpop === undefined ? record : dpopFetch(dpop, record)
      connection = connection1(new URL(url), oauthProvider, fetch)
    }
    return connection
  }
  const user: McpUser = {
    authorizationUrls: oauthProvider.authorizationUrls,
    sent,
    dpopThumbprint:
      session2?.then((session) => session.thumbprint) ??
      handle1?.then((handle) => handle.calculateThumbprint()),
    tokens: () => oauthProvider.tokens(),
    async signIn() {
      const first = await connected()
      await first.connect().then(
        () => {
          throw new Error('the first connection was admitted without a token')
        },
        (error: unknown) => {
          if (!(error instanceof UNAUTHORIZED[sdk])) throw error
        },
      )
      await user.authorize()
      await first.connect()
    },
    async authorize() {
      const opened = oauthProvider.authorizationUrls.at(-1)
      if (opened === undefined) throw new Error('the client opened no authorization URL')
      const callback = await provider.authorize(opened.href)
      const dpop = await handle1
      if (dpop === undefined) await (await connected()).finishAuth(callback)
      else await redeemWithDpop(oauthProvider, dpop, callback)
    },
    async requestScope(scope) {
      // Discovery only (no token is sent), then the authorization URL.
      const asked = { serverUrl: url, scope, fetchFn: record }
      const result =
        sdk === '1.x' ? await auth1(oauthProvider, asked) : await auth2(oauthProvider, asked)
      if (result !== 'REDIRECT') throw new Error(`auth() answered ${result}, not REDIRECT`)
    },
    callTool: async (name) => textOf(await (await connected()).callTool(name)),
    close: async () => {
      await connection?.close()
    },
  }
  return user
}
