/** docs/mcp.md: an MCP server (SDK 1.x) behind `mcpGate` on Express, Fastify and NestJS. */
import { expect } from 'vitest'

import { answer, type SampleProgram, type ScenarioTable } from '../scenario.js'
import type { SampleWorld } from '../world.js'

const RESOURCE = 'https://mcp.example.com/mcp'
const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
const call = (name: string, id = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })

const PROMISES =
  'tools/call search with mcp:use reports:read 200 (the tool answers); with mcp:use alone 403 scope="mcp:use reports:read"; no token 401 with resource_metadata (POST and the GET stream); Mcp-Name naming another tool 400 -32020; render 5 times 200, the sixth 429, RateLimit-Policy "tool.render"; the metadata document public'

/** What the guide promises of the sample's endpoint, whatever the framework. */
async function promisesKept(api: SampleProgram, { kit }: SampleWorld): Promise<void> {
  const token = (scope: string, tenant = 'acme') =>
    kit.mint({ aud: RESOURCE, scope, tenant }, { realm: 'sso' })
  const post = async (body: string, bearerToken?: string, extra: Record<string, string> = {}) =>
    api.fetch('/mcp', {
      method: 'POST',
      body,
      headers: {
        ...ACCEPT,
        ...extra,
        ...(bearerToken === undefined ? {} : { authorization: `Bearer ${bearerToken}` }),
      },
    })

  const admitted = await post(call('search'), await token('mcp:use reports:read'))
  expect(admitted.status, api.output()).toBe(200)
  expect(JSON.stringify(await admitted.json())).toContain('3 reports match')

  const narrow = await post(call('search'), await token('mcp:use'))
  expect(narrow.status).toBe(403)
  expect(narrow.headers.get('www-authenticate')).toContain('error="insufficient_scope"')
  expect(narrow.headers.get('www-authenticate')).toContain('scope="mcp:use reports:read"')

  for (const anonymous of [
    await post(call('search')),
    await api.fetch('/mcp', { headers: ACCEPT }),
  ]) {
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('www-authenticate')).toContain('resource_metadata="')
  }

  const mismatch = await post(
    call('render', 7),
    await token('mcp:use reports:read reports:render'),
    {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'search',
    },
  )
  expect(await answer(mismatch)).toEqual({
    status: 400,
    body: {
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32020, message: expect.stringMatching(/^Header mismatch/) },
    },
  })

  const renderer = await token('mcp:use reports:render', 'initech')
  for (let sent = 0; sent < 5; sent++) {
    const rendered = await post(call('render'), renderer)
    expect(rendered.status).toBe(200)
    expect(rendered.headers.get('ratelimit-policy')).toBe('"tool.render";q=5;w=60')
  }
  const spent = await post(call('render'), renderer)
  expect(spent.status).toBe(429)
  expect(spent.headers.get('ratelimit-policy')).toBe('"tool.render";q=5;w=60')

  const metadata = await api.fetch('/.well-known/oauth-protected-resource/mcp')
  expect(metadata.status).toBe(200)
  expect(((await metadata.json()) as { resource: string }).resource).toBe(RESOURCE)
}

export const MCP: ScenarioTable = {
  'docs/mcp.md': {
    'An MCP server behind the gate': {
      promises: PROMISES,
      async run({ start, world }) {
        await promisesKept(await start(), world)
      },
    },
    'On Fastify': {
      promises: `Fastify, the plugin registered and mcpGate as the route's preHandler, the reply hijacked for the transport: ${PROMISES}`,
      async run({ start, world }) {
        await promisesKept(await start(), world)
      },
    },
    'On NestJS': {
      promises: `NestJS (Express platform), the module's mcp policy and @McpGate() on the controller: ${PROMISES}`,
      async run({ start, world }) {
        await promisesKept(await start({ host: 'nest.ts' }), world)
      },
    },
  },
}
