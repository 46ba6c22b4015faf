/**
 * The MCP authorization flow with opaque access tokens, end to end: the development provider
 * issues opaque tokens for the endpoints of test/helpers/mcp-flow.ts (SDK 1.x and 2.x, on
 * Express, Hono and a Fetch handler; `accessTokenFormat: 'opaque'`), and each gate checks them at the provider's
 * RFC 7662 introspection endpoint (`introspection` on the issuer entry, as the MCP server's own
 * client). The SDK's client signs in, calls a tool, is refused one outside its scopes and steps
 * up, exactly as with JWTs: the gate judges the introspection answer as it judges a JWT's claims.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keycloak } from '../../src/token/issuers.js'
import {
  expectStepUpToDeploy,
  type McpFlows,
  SDK_FRAMEWORKS,
  signedIn,
  startMcpFlows,
} from '../helpers/mcp-flow.js'

/** The MCP servers' own client at the provider: the gates introspect with its credentials. */
const SERVER_CLIENT = { clientId: 'mcp-server', clientSecret: 'server-secret' }

let flows: McpFlows
/** Why each endpoint's gate refused, in order (the `rejected` events' reasons), by endpoint URL. */
const refusals = new Map<string, string[]>()

beforeAll(async () => {
  flows = await startMcpFlows({
    resource: { accessTokenFormat: 'opaque' },
    clients: [{ ...SERVER_CLIENT, grantTypes: ['client_credentials'] }],
    issuers: (provider) =>
      keycloak({ authUrl: provider.url, realms: [provider.realm] }).map((entry) => ({
        ...entry,
        introspection: SERVER_CLIENT,
      })),
    gate: (endpoint) => {
      const reasons: string[] = []
      refusals.set(endpoint.url, reasons)
      return {
        onEvent: (event) => {
          if (event.type === 'rejected') reasons.push(event.reason)
        },
      }
    },
  })
})
afterAll(() => flows?.close())

const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }

describe('opaque tokens by introspection (RFC 7662) with the SDK client', () => {
  describe.each(SDK_FRAMEWORKS)('%s', (flow, sdk) => {
    it('signs in for an opaque token, which the gate admits by introspection with its scopes', async () => {
      const user = await signedIn(sdk, flows, flow)
      const token = user.tokens()?.access_token as string
      // Not a JWS (RFC 7515 §7.1): nothing the gate could verify without asking the provider.
      expect(token).not.toContain('.')
      expect(JSON.parse(await user.callTool('whoami'))).toEqual({
        scopes: ['mcp:use'],
        op: { method: 'tools/call', name: 'whoami' },
      })
    })

    it('is refused a tool outside the introspected scopes with 403 and steps up to the scope the challenge names', async () => {
      const user = await signedIn(sdk, flows, flow)
      await expectStepUpToDeploy(sdk, user)
      expect(user.tokens()?.access_token).not.toContain('.')
    })

    it('refuses a token the provider does not know as inactive (401 invalid_token)', async () => {
      const { url, metadataUrl } = flows.endpoint(flow)
      const reasons = refusals.get(url) as string[]
      const before = reasons.length
      const refused = await fetch(url, {
        method: 'POST',
        headers: { ...ACCEPT, authorization: 'Bearer an-opaque-token-it-never-issued' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      expect(refused.status).toBe(401)
      expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"')
      expect(refused.headers.get('www-authenticate')).toContain(
        `resource_metadata="${metadataUrl}"`,
      )
      expect(reasons.slice(before)).toEqual(['inactive'])
    })
  })
})
