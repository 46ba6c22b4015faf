/**
 * The MCP authorization flow end to end: an MCP server built with the MCP TypeScript SDK, 1.x
 * (`@modelcontextprotocol/sdk`) and 2.x (`@modelcontextprotocol/server`), on Express, Hono and a Fetch handler,
 * behind tollgate's gate and `mcpGate`, and the same SDK's own client (its OAuth provider
 * interface) signing in at the development provider (test/helpers/mcp-flow.ts). Then the resource
 * server's MUSTs and SHOULDs of the MCP authorization spec (2025-11-25, "Protected Resource
 * Metadata Discovery Requirements", "Access Token Usage", "Error Handling", "Scope Challenge
 * Handling") and of the 2026-07-28 Streamable HTTP transport ("Server Validation"), one test per
 * sentence, on the SDK 1.x server on Express. DPoP-bound tokens: sdk-flow-dpop.test.ts; opaque
 * tokens by introspection: sdk-flow-introspection.test.ts.
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MCP_CLIENT } from '../helpers/mcp-clients.js'
import {
  expectStepUpToDeploy,
  type McpEndpoint,
  type McpFlows,
  SDK_FRAMEWORKS,
  signedIn,
  startMcpFlows,
} from '../helpers/mcp-flow.js'

let flows: McpFlows
/** The endpoint the resource server's rules are tried on: SDK 1.x on Express. */
let endpoint: McpEndpoint

beforeAll(async () => {
  flows = await startMcpFlows({ resources: { 'urn:other:api': { scopes: ['other:read'] } } })
  endpoint = flows.endpoint('SDK 1.x on Express')
})
afterAll(() => flows?.close())

describe('the MCP authorization flow with the SDK client', () => {
  describe.each(SDK_FRAMEWORKS)('%s', (flow, sdk) => {
    it('discovers the metadata from the 401, signs in with PKCE (S256) and the resource, and calls a tool', async () => {
      const { provider } = flows
      const { url, metadataUrl } = flows.endpoint(flow)
      const user = await signedIn(sdk, flows, flow)
      expect(user.sent[0]).toMatchObject({ status: 401 })
      expect(user.sent[0]?.challenge).toContain(`resource_metadata="${metadataUrl}"`)
      const opened = user.authorizationUrls[0] as URL
      expect(opened.origin + opened.pathname).toBe(provider.authorizationEndpoint)
      expect(opened.searchParams.get('code_challenge_method')).toBe('S256')
      expect(opened.searchParams.get('resource')).toBe(url)
      expect(JSON.parse(await user.callTool('whoami'))).toEqual({
        scopes: ['mcp:use'],
        op: { method: 'tools/call', name: 'whoami' },
      })
    })

    it('is refused a tool outside its scopes with 403 and steps up to the scope the challenge names', async () => {
      await expectStepUpToDeploy(sdk, await signedIn(sdk, flows, flow))
    })
  })
})

const ACCEPT = 'application/json, text/event-stream'
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
const toolCall = (id: number, name: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {} },
})

/** A request to the endpoint: `token` as a bearer token, `body` as JSON, `headers` added. */
function send(
  method: 'post' | 'get' | 'delete',
  options: {
    readonly token?: string
    readonly body?: object
    readonly headers?: Record<string, string>
    readonly path?: string
  } = {},
): request.Test {
  let sent = request(endpoint.server)
    [method](options.path ?? '/mcp')
    .set('Accept', ACCEPT)
  if (options.token !== undefined) sent = sent.set('Authorization', `Bearer ${options.token}`)
  if (options.headers !== undefined) sent = sent.set(options.headers)
  return options.body === undefined ? sent : sent.send(options.body)
}

/** A token of the client for `resource` with `scope` (client credentials). */
async function clientCredentials(resource: string, scope: string): Promise<string> {
  const response = await fetch(flows.provider.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: MCP_CLIENT.clientId,
      client_secret: MCP_CLIENT.clientSecret,
      resource,
      scope,
    }),
  })
  const body = (await response.json()) as { access_token: string }
  return body.access_token
}

describe('MCP authorization (2025-11-25): the resource server', () => {
  it('MUST implement Protected Resource Metadata with at least one authorization server', async () => {
    const res = await send('get', { path: new URL(endpoint.metadataUrl).pathname })
    expect(res.status).toBe(200)
    expect(res.body.resource).toBe(endpoint.url)
    expect(res.body.authorization_servers).toEqual([flows.provider.issuer])
  })

  it('MUST include resource_metadata in the WWW-Authenticate of a 401', async () => {
    const res = await send('post', { body: initialize })
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain(`resource_metadata="${endpoint.metadataUrl}"`)
  })

  it('MUST see authorization in every HTTP request of a session: POST, the GET stream and DELETE', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const opened = await send('post', { token, body: initialize })
    expect(opened.status).toBe(200)
    const session = opened.headers['mcp-session-id'] as string
    expect(session).toMatch(/.+/)
    const headers = { 'Mcp-Session-Id': session }
    for (const [method, body] of [
      ['post', { jsonrpc: '2.0', id: 2, method: 'tools/list' }],
      ['get', undefined],
      ['delete', undefined],
    ] as const) {
      const res = await send(method, { headers, ...(body === undefined ? {} : { body }) })
      expect(res.status).toBe(401)
      expect(res.headers['www-authenticate']).toContain('resource_metadata=')
    }
    expect((await send('delete', { token, headers })).status).toBe(200)
  })

  it('MUST NOT take an access token from the URI query string', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const res = await send('post', {
      path: `/mcp?access_token=${encodeURIComponent(token)}`,
      body: initialize,
    })
    expect(res.status).toBe(401)
    expect(res.text).not.toContain(token)
  })

  it('MUST answer 401 to an invalid token', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const res = await send('post', { token: `${token.slice(0, -4)}AAAA`, body: initialize })
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('MUST only accept tokens issued for it as the audience (RFC 8707): another resource gets 401', async () => {
    const other = await clientCredentials('urn:other:api', 'other:read')
    const res = await send('post', { token: other, body: initialize })
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"')
  })

  it('SHOULD answer runtime insufficient scope with 403 and a Bearer challenge with error, scope, resource_metadata and error_description', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const res = await send('post', { token, body: toolCall(3, 'deploy') })
    expect(res.status).toBe(403)
    const challenge = res.headers['www-authenticate'] as string
    expect(challenge).toMatch(/^Bearer /)
    expect(challenge).toContain('error="insufficient_scope"')
    expect(challenge).toContain('scope="mcp:use mcp:deploy"')
    expect(challenge).toContain(`resource_metadata="${endpoint.metadataUrl}"`)
    expect(challenge).toContain('error_description="')
  })

  it('SHOULD name the scopes needed to satisfy the current request, the granted ones it still needs included', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:deploy')
    const listed = await send('post', {
      token,
      body: { jsonrpc: '2.0', id: 4, method: 'tools/list' },
    })
    expect(listed.status).toBe(403)
    expect(listed.headers['www-authenticate']).toContain('scope="mcp:use"')
  })
})

describe('MCP 2026-07-28 Streamable HTTP: Server Validation at the gate', () => {
  const modern = (headers: Record<string, string>) => ({
    'MCP-Protocol-Version': '2026-07-28',
    ...headers,
  })

  it('MUST reject headers that do not match the body with 400 and a JSON-RPC -32020 error', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const res = await send('post', {
      token,
      headers: modern({ 'Mcp-Method': 'tools/call', 'Mcp-Name': 'whoami' }),
      body: toolCall(8, 'deploy'),
    })
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 8,
      error: { code: -32020, message: expect.stringMatching(/^Header mismatch/) },
    })
  })

  it('MUST reject a request of 2026-07-28 or later missing a required header', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const res = await send('post', { token, headers: modern({}), body: toolCall(9, 'whoami') })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe(-32020)
  })

  it('MUST decode a Base64 sentinel Mcp-Name before comparing it with the body', async () => {
    const token = await clientCredentials(endpoint.url, 'mcp:use')
    const res = await send('post', {
      token,
      headers: modern({
        'Mcp-Method': 'tools/call',
        'Mcp-Name': `=?base64?${Buffer.from('whoami').toString('base64')}?=`,
      }),
      body: toolCall(10, 'deploy'),
    })
    // Decoded, the header names whoami while the body calls deploy: a mismatch, not a 403.
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe(-32020)
  })
})
