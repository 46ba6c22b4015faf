/**
 * The MCP authorization flow end to end: an MCP server built with the MCP TypeScript SDK 1.x
 * (`McpServer` + `StreamableHTTPServerTransport`) behind tollgate's Express gate and `mcpGate`,
 * and the SDK's own client (`Client` + `StreamableHTTPClientTransport` with its OAuth provider
 * interface) against the development provider. Then the resource server's MUSTs and SHOULDs of
 * the MCP authorization spec (2025-11-25, "Protected Resource Metadata Discovery Requirements",
 * "Access Token Usage", "Error Handling", "Scope Challenge Handling") and of the 2026-07-28
 * Streamable HTTP transport ("Server Validation"), one test per sentence, on the same server.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type OAuthClientProvider,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import express from 'express'
import { Hono } from 'hono'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { mcpGate, tollgate } from '../../adapters/express/index.js'
import {
  mcpGate as honoMcp,
  tollgate as honoTollgate,
  type McpEnv,
} from '../../adapters/hono/index.js'
import type { McpPolicyOptions } from '../../src/mcp/policy.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { fetchListener } from '../helpers/fetch-server.js'

const REDIRECT_URI = 'http://127.0.0.1:4999/callback'
const CLIENT = { clientId: 'mcp-inspector', clientSecret: 'inspector-secret' }
const POLICY: McpPolicyOptions = {
  default: { scopes: ['mcp:use'] },
  tools: { deploy: { scopes: ['mcp:use', 'mcp:deploy'] } },
}

let provider: DevProvider
let server: Server
let mcpUrl: string
let metadataUrl: string
/** The same MCP server on Hono, with the SDK's Web-standard transport, at its own URL. */
let honoServer: Server
let honoUrl: string
/** The operation `mcpGate` authorized last, as the handler saw it on `req.mcp`. */
let lastOperation: unknown

/** The MCP server: one SDK server and transport per session, as the SDK's examples keep them. */
function mcpApp(auth: ReturnType<typeof tollgate>): express.Express {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const app = express()
  app.use(auth.resourceMetadata)
  app.all('/mcp', express.json(), mcpGate(auth, POLICY), async (req, res) => {
    const id = req.headers['mcp-session-id']
    let transport = typeof id === 'string' ? sessions.get(id) : undefined
    if (transport === undefined) {
      if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
        res
          .status(400)
          .json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } })
        return
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (session) => {
          sessions.set(session, created)
        },
      })
      const mcp = new McpServer({ name: 'tollgate-test', version: '1.0.0' })
      mcp.registerTool('whoami', { description: 'who is calling' }, async (extra) => ({
        content: [
          {
            type: 'text',
            text: JSON.stringify({ scopes: extra.authInfo?.scopes, op: lastOperation }),
          },
        ],
      }))
      mcp.registerTool('deploy', { description: 'deploys' }, async () => ({
        content: [{ type: 'text', text: 'deployed' }],
      }))
      await mcp.connect(created)
      transport = created
    }
    lastOperation = req.mcp
    await transport.handleRequest(req as IncomingMessage, res, req.body)
  })
  return app
}

/** One stateless SDK server per request on Hono: the Web-standard transport, the parsed body handed on. */
function honoMcpApp(auth: ReturnType<typeof honoTollgate>): Hono<McpEnv> {
  const app = new Hono<McpEnv>()
  app.use(auth.resourceMetadata)
  app.all('/mcp', honoMcp(auth, POLICY), async (c) => {
    const admission = c.get('auth')
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    const mcp = new McpServer({ name: 'tollgate-test', version: '1.0.0' })
    mcp.registerTool('whoami', { description: 'who is calling' }, async (extra) => ({
      content: [{ type: 'text', text: JSON.stringify({ scopes: extra.authInfo?.scopes }) }],
    }))
    mcp.registerTool('deploy', { description: 'deploys' }, async () => ({
      content: [{ type: 'text', text: 'deployed' }],
    }))
    await mcp.connect(transport)
    return transport.handleRequest(c.req.raw, {
      parsedBody: c.get('mcp').body,
      ...(admission === undefined
        ? {}
        : {
            authInfo: {
              token: admission.token,
              clientId: admission.clientId ?? '',
              scopes: [...admission.scopes],
            },
          }),
    })
  })
  return app
}

async function listening(target: Server): Promise<string> {
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(target.address() as AddressInfo).port}/mcp`
}

beforeAll(async () => {
  server = createServer()
  mcpUrl = await listening(server)
  honoServer = createServer()
  honoUrl = await listening(honoServer)
  provider = await createDevProvider({
    users: [{ sub: 'alice', name: 'Alice' }],
    autoLogin: 'alice',
    resources: {
      [mcpUrl]: { scopes: ['mcp:use', 'mcp:deploy'] },
      [honoUrl]: { scopes: ['mcp:use', 'mcp:deploy'] },
      'urn:other:api': { scopes: ['other:read'] },
    },
    clients: [
      {
        ...CLIENT,
        clientAuth: 'client_secret_post',
        redirectUris: [REDIRECT_URI],
        // No refresh token: a step-up is a new authorization, not a refresh of the narrow grant.
        grantTypes: ['authorization_code', 'client_credentials'],
      },
    ],
  })
  const auth = tollgate({
    issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
    audience: mcpUrl,
    resourceMetadata: { resource: mcpUrl },
  })
  metadataUrl = auth.gate.resourceMetadataUrl as string
  server.on('request', mcpApp(auth))
  const onHono = honoMcpApp(
    honoTollgate({
      issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
      audience: honoUrl,
      resourceMetadata: { resource: honoUrl },
    }),
  )
  honoServer.on(
    'request',
    fetchListener((request) => onHono.fetch(request)),
  )
})
afterAll(async () => {
  for (const target of [server, honoServer]) {
    target.closeAllConnections()
    target.close()
  }
  await provider.close()
})

/** The SDK's OAuth provider interface, kept in memory; the browser is the dev provider's `authorize`. */
class MemoryProvider implements OAuthClientProvider {
  #tokens: OAuthTokens | undefined
  #verifier = ''
  authorizationUrls: URL[] = []
  readonly redirectUrl = REDIRECT_URI
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: 'tollgate test client',
    redirect_uris: [REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    scope: 'mcp:use',
  }
  clientInformation(): OAuthClientInformationMixed {
    return { client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret }
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
}

/** The user signs in at the authorization URL the client opened: the code it is sent back with. */
async function signIn(oauth: MemoryProvider): Promise<string> {
  const back = await provider.authorize((oauth.authorizationUrls.at(-1) as URL).href)
  return back.searchParams.get('code') as string
}

async function connected(oauth: MemoryProvider, url = mcpUrl): Promise<Client> {
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth })
  const client = new Client({ name: 'tollgate-test-client', version: '1.0.0' })
  await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError)
  await first.finishAuth(await signIn(oauth))
  await first.close()
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth })
  await client.connect(transport)
  return client
}

const textOf = (result: unknown): string =>
  ((result as { content: { text: string }[] }).content[0] as { text: string }).text

async function clientCredentials(resource: string, scope: string): Promise<string> {
  const response = await fetch(provider.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
      resource,
      scope,
    }),
  })
  const body = (await response.json()) as { access_token: string }
  return body.access_token
}

describe('the MCP authorization flow with the SDK client', () => {
  it('discovers the metadata from the 401, signs in with PKCE (S256) and the resource, and calls a tool', async () => {
    const oauth = new MemoryProvider()
    const client = await connected(oauth)
    try {
      const opened = oauth.authorizationUrls[0] as URL
      expect(opened.origin + opened.pathname).toBe(provider.authorizationEndpoint)
      expect(opened.searchParams.get('code_challenge_method')).toBe('S256')
      expect(opened.searchParams.get('resource')).toBe(mcpUrl)
      const result = await client.callTool({ name: 'whoami', arguments: {} })
      const seen = JSON.parse(textOf(result))
      expect(seen.scopes).toEqual(['mcp:use'])
      expect(seen.op).toMatchObject({ method: 'tools/call', name: 'whoami' })
    } finally {
      await client.close()
    }
  })

  it('is refused a tool outside its scopes with 403 and steps up to the scope the challenge names', async () => {
    const oauth = new MemoryProvider()
    const client = await connected(oauth)
    try {
      await expect(client.callTool({ name: 'deploy', arguments: {} })).rejects.toBeInstanceOf(
        UnauthorizedError,
      )
      const stepUp = oauth.authorizationUrls.at(-1) as URL
      expect(oauth.authorizationUrls).toHaveLength(2)
      expect(stepUp.searchParams.get('scope')).toBe('mcp:use mcp:deploy')
      const transport = client.transport as StreamableHTTPClientTransport
      await transport.finishAuth(await signIn(oauth))
      expect(oauth.tokens()?.scope?.split(' ').sort()).toEqual(['mcp:deploy', 'mcp:use'])
      expect(textOf(await client.callTool({ name: 'deploy', arguments: {} }))).toBe('deployed')
    } finally {
      await client.close()
    }
  })
})

describe('the same flow on Hono, with the SDK Web-standard transport', () => {
  it('signs in, calls a tool, is refused one outside its scopes and steps up to the scope named', async () => {
    const oauth = new MemoryProvider()
    const client = await connected(oauth, honoUrl)
    try {
      expect((oauth.authorizationUrls[0] as URL).searchParams.get('resource')).toBe(honoUrl)
      const seen = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })))
      expect(seen.scopes).toEqual(['mcp:use'])
      await expect(client.callTool({ name: 'deploy', arguments: {} })).rejects.toBeInstanceOf(
        UnauthorizedError,
      )
      expect((oauth.authorizationUrls.at(-1) as URL).searchParams.get('scope')).toBe(
        'mcp:use mcp:deploy',
      )
      await (client.transport as StreamableHTTPClientTransport).finishAuth(await signIn(oauth))
      expect(textOf(await client.callTool({ name: 'deploy', arguments: {} }))).toBe('deployed')
    } finally {
      await client.close()
    }
  })
})

describe('MCP authorization (2025-11-25): the resource server', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    },
  }
  const ACCEPT = 'application/json, text/event-stream'

  it('MUST implement Protected Resource Metadata with at least one authorization server', async () => {
    const res = await request(server).get(new URL(metadataUrl).pathname)
    expect(res.status).toBe(200)
    expect(res.body.resource).toBe(mcpUrl)
    expect(res.body.authorization_servers).toEqual([provider.issuer])
  })

  it('MUST include resource_metadata in the WWW-Authenticate of a 401', async () => {
    const res = await request(server).post('/mcp').set('Accept', ACCEPT).send(initialize)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain(`resource_metadata="${metadataUrl}"`)
  })

  it('MUST see authorization in every HTTP request of a session: POST, the GET stream and DELETE', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const opened = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', ACCEPT)
      .send(initialize)
    expect(opened.status).toBe(200)
    const session = opened.headers['mcp-session-id'] as string
    expect(session).toMatch(/.+/)
    const listed = { jsonrpc: '2.0', id: 2, method: 'tools/list' }
    for (const [method, body] of [
      ['post', listed],
      ['get', undefined],
      ['delete', undefined],
    ] as const) {
      const bare = request(server)
        [method]('/mcp')
        .set('Mcp-Session-Id', session)
        .set('Accept', ACCEPT)
      const res = await (body === undefined ? bare : bare.send(body))
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toContain('resource_metadata=')
    }
    const closed = await request(server)
      .delete('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Mcp-Session-Id', session)
    expect(closed.status).toBe(200)
  })

  it('MUST NOT take an access token from the URI query string', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const res = await request(server)
      .post(`/mcp?access_token=${encodeURIComponent(token)}`)
      .set('Accept', ACCEPT)
      .send(initialize)
    expect(res.status).toBe(401)
    expect(res.text).not.toContain(token)
  })

  it('MUST answer 401 to an invalid token', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const forged = `${token.slice(0, -4)}AAAA`
    const res = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${forged}`)
      .set('Accept', ACCEPT)
      .send(initialize)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('MUST only accept tokens issued for it as the audience (RFC 8707): another resource gets 401', async () => {
    const other = await clientCredentials('urn:other:api', 'other:read')
    const res = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${other}`)
      .set('Accept', ACCEPT)
      .send(initialize)
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('SHOULD answer runtime insufficient scope with 403 and a Bearer challenge with error, scope, resource_metadata and error_description', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const res = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', ACCEPT)
      .send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'deploy', arguments: {} },
      })
    expect(res.status).toBe(403)
    const challenge = res.headers['www-authenticate'] as string
    expect(challenge).toMatch(/^Bearer /)
    expect(challenge).toContain('error="insufficient_scope"')
    expect(challenge).toContain('scope="mcp:use mcp:deploy"')
    expect(challenge).toContain(`resource_metadata="${metadataUrl}"`)
    expect(challenge).toContain('error_description="')
  })

  it('SHOULD name the scopes needed to satisfy the current request, the granted ones it still needs included', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:deploy')
    const listed = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', ACCEPT)
      .send({ jsonrpc: '2.0', id: 4, method: 'tools/list' })
    expect(listed.status).toBe(403)
    expect(listed.headers['www-authenticate']).toContain('scope="mcp:use"')
  })
})

describe('MCP 2026-07-28 Streamable HTTP: Server Validation at the gate', () => {
  it('MUST reject headers that do not match the body with 400 and a JSON-RPC -32020 error', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const res = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set({
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'whoami',
      })
      .send({
        jsonrpc: '2.0',
        id: 8,
        method: 'tools/call',
        params: { name: 'deploy', arguments: {} },
      })
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 8,
      error: { code: -32020, message: expect.stringMatching(/^Header mismatch/) },
    })
  })

  it('MUST reject a request of 2026-07-28 or later missing a required header', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const res = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set({ 'MCP-Protocol-Version': '2026-07-28' })
      .send({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'whoami', arguments: {} },
      })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe(-32020)
  })

  it('MUST decode a Base64 sentinel Mcp-Name before comparing it with the body', async () => {
    const token = await clientCredentials(mcpUrl, 'mcp:use')
    const res = await request(server)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set({
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': `=?base64?${Buffer.from('whoami').toString('base64')}?=`,
      })
      .send({
        jsonrpc: '2.0',
        id: 10,
        method: 'tools/call',
        params: { name: 'deploy', arguments: {} },
      })
    // Decoded, the header names whoami while the body calls deploy: a mismatch, not a 403.
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe(-32020)
  })
})
