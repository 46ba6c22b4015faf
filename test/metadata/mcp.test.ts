/**
 * The MCP authorization rules (Model Context Protocol, HTTP transport; revisions 2025-06-18,
 * 2025-11-25 and 2026-07-28) an MCP server built as docs/product-backends.md shows must keep, one
 * test per rule, against the development provider (oidc-provider: resource indicators, scopes by
 * request). The server is the guide's: the gate's audience is the MCP endpoint's URL, the
 * metadata is public, the endpoint needs `mcp:tools`, and one tool needs `mcp:admin`, checked in
 * the handler with `auth.gate.authorize()`.
 */
import type { Server } from 'node:http'

import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tollgate } from '../../adapters/express/index.js'
import { renderError } from '../../src/errors.js'
import { requireScopes } from '../../src/gate/guards.js'
import { createDevProvider, type DevProvider } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { freePort } from '../helpers/redis.js'
import { tokenRequest } from '../testing/dev-provider-fixtures.js'

const CLIENT = { clientId: 'mcp-client', clientSecret: 'dev-only-mcp-secret' }
const OTHER = 'http://127.0.0.1:1/other-mcp'

let provider: DevProvider
let server: Server
let origin: string
let resource: string
let metadataUrl: string

beforeAll(async () => {
  const port = await freePort()
  origin = `http://127.0.0.1:${port}`
  resource = `${origin}/mcp`
  metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`
  provider = await createDevProvider({
    users: [{ sub: 'alice' }],
    resources: {
      [resource]: { scopes: ['mcp:tools', 'mcp:admin'] },
      [OTHER]: { scopes: ['mcp:tools'] },
    },
    clients: [{ ...CLIENT, audiences: [resource, OTHER] }],
  })
  const auth = tollgate({
    issuers: keycloak({ authUrl: provider.url, realms: [provider.realm] }),
    audience: resource,
    resourceMetadata: { resource, scopesSupported: ['mcp:tools'] },
    onEvent: () => {},
  })
  const adminTools = requireScopes('mcp:admin')
  const app = express()
  app.use(auth.resourceMetadata)
  app.post('/mcp', auth, auth.requireScopes('mcp:tools'), express.json(), (req, res) => {
    if (req.body.method === 'tools/call' && req.body.params?.name === 'delete_records') {
      try {
        auth.gate.authorize(adminTools, req.auth)
      } catch (error) {
        const { status, headers, body } = renderError(error)
        res.status(status).set(headers).send(body)
        return
      }
    }
    res.json({ jsonrpc: '2.0', id: req.body.id, result: {} })
  })
  app.post('/mcp/payments', auth, auth.requireAcr('urn:example:mfa'), (_req, res) => {
    res.json({})
  })
  server = app.listen(port, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
})
afterAll(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  await provider?.close()
})

async function tokenFor(scope: string, target = resource): Promise<string> {
  const answer = await tokenRequest(provider, CLIENT, {
    grant_type: 'client_credentials',
    scope,
    resource: target,
  })
  expect(answer.status).toBe(200)
  return answer.body['access_token'] as string
}

const call = (token: string | undefined, body: unknown, path = '/mcp') =>
  fetch(`${origin}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  })
const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
const DELETE = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_records' } }

describe('MCP authorization rules', () => {
  it('metadata (RFC 9728, MUST): at the well-known URL with the endpoint path, naming the resource and its authorization server', async () => {
    const answer = await fetch(metadataUrl)
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({
      resource,
      authorization_servers: [provider.issuer],
      scopes_supported: ['mcp:tools'],
      bearer_methods_supported: ['header'],
    })
  })

  it('every 401 carries resource_metadata (MUST): no token, a bad token, a token for another resource', async () => {
    for (const token of [undefined, 'not-a-token', await tokenFor('mcp:tools', OTHER)]) {
      const answer = await call(token, LIST)
      expect(answer.status).toBe(401)
      expect(answer.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl}"`)
    }
  })

  it('audience binding (RFC 8707, MUST): a token for another MCP server is refused, one for this one admitted', async () => {
    const other = await call(await tokenFor('mcp:tools', OTHER), LIST)
    expect(other.status).toBe(401)
    expect(other.headers.get('www-authenticate')).toContain('error="invalid_token"')
    const own = await call(await tokenFor('mcp:tools'), LIST)
    expect(own.status).toBe(200)
  })

  it('insufficient_scope (403) names only the scopes the operation needs, and resource_metadata', async () => {
    // The token has mcp:tools; the tool needs mcp:admin: the challenge names mcp:admin alone,
    // not the union with what the token holds (2026-07-28, SEP-2350).
    const answer = await call(await tokenFor('mcp:tools'), DELETE)
    expect(answer.status).toBe(403)
    expect(answer.headers.get('www-authenticate')).toBe(
      `Bearer realm="api", error="insufficient_scope", error_description="insufficient scope", scope="mcp:admin", resource_metadata="${metadataUrl}"`,
    )
    const adminOnly = await call(await tokenFor('mcp:admin'), LIST)
    expect(adminOnly.status).toBe(403)
    expect(adminOnly.headers.get('www-authenticate')).toContain('scope="mcp:tools"')
  })

  it('the client accumulates scopes on step-up: a token for the union passes both operations', async () => {
    const first = await call(await tokenFor('mcp:tools'), DELETE)
    const challenged = /scope="([^"]+)"/.exec(first.headers.get('www-authenticate') ?? '')?.[1]
    const union = [...new Set(['mcp:tools', ...(challenged ?? '').split(' ')])].join(' ')
    const token = await tokenFor(union)
    expect((await call(token, LIST)).status).toBe(200)
    expect((await call(token, DELETE)).status).toBe(200)
  })

  it('a step-up challenge (RFC 9470) carries resource_metadata too', async () => {
    const answer = await call(await tokenFor('mcp:tools'), {}, '/mcp/payments')
    expect(answer.status).toBe(401)
    expect(answer.headers.get('www-authenticate')).toBe(
      `Bearer realm="api", error="insufficient_user_authentication", error_description="a stronger authentication is required", acr_values="urn:example:mfa", scope="mcp:tools", resource_metadata="${metadataUrl}"`,
    )
  })
})
