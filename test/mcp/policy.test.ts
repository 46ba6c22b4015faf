/**
 * The core of the MCP policy: what it reads of a JSON-RPC body, how it checks the `Mcp-Method` /
 * `Mcp-Name` headers against it (MCP 2026-07-28, Streamable HTTP, "Request Metadata" and "Server
 * Validation"), and which rule governs each operation. Written from the spec's sentences.
 */
import { describe, expect, it } from 'vitest'

import { McpRequestError, RateLimitedError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { renderMcpError } from '../../src/mcp/answer.js'
import { parsedBodyOf } from '../../src/mcp/body.js'
import { decodeMcpName } from '../../src/mcp/operation.js'
import { createMcpPolicy } from '../../src/mcp/policy.js'
import type { Admission } from '../../src/types.js'

const MODERN = '2026-07-28'
const call = (name: string, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {} },
})
const policy = createMcpPolicy({
  default: { scopes: ['mcp:use'] },
  tools: { search: { scopes: ['mcp:search'] }, deploy: { scopes: ['mcp:deploy', 'ops'] } },
  resources: [
    { uri: 'file:///public/*', scopes: ['files:public'] },
    { uri: /file:\/\/\/reports\/\d+\.pdf/, scopes: ['reports:read'] },
  ],
  prompts: { summarize: { scopes: ['prompts:summarize'] } },
})

function refusal(run: () => unknown): McpRequestError {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(McpRequestError)
    return error as McpRequestError
  }
  throw new Error('expected a refusal')
}

describe('rules by operation', () => {
  it('governs a tools/call by the tool named in the body', () => {
    const decision = policy.decide('POST', call('deploy'), {})
    expect(decision.rules.map((rule) => rule.scopes)).toEqual([['mcp:deploy', 'ops']])
    expect(policy.authorized(decision)).toMatchObject({ method: 'tools/call', name: 'deploy' })
  })

  it('governs a tool without a rule, tools/list and initialize by the default', () => {
    for (const body of [
      call('unlisted'),
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'initialize', params: {} },
    ]) {
      expect(policy.decide('POST', body, {}).rules[0]?.scopes).toEqual(['mcp:use'])
    }
  })

  it('governs resources by the first URI pattern that matches the whole URI, prompts by name', () => {
    const read = (uri: string) =>
      policy.decide(
        'POST',
        { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } },
        {},
      ).rules[0]?.scopes
    expect(read('file:///public/a/b.txt')).toEqual(['files:public'])
    expect(read('file:///reports/12.pdf')).toEqual(['reports:read'])
    expect(read('file:///reports/12.pdf.exe')).toEqual(['mcp:use'])
    expect(read('file:///private/public/x')).toEqual(['mcp:use'])
    const prompt = { jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'summarize' } }
    expect(policy.decide('POST', prompt, {}).rules[0]?.scopes).toEqual(['prompts:summarize'])
  })

  it('governs the GET stream and DELETE, which carry no body, by the default', () => {
    expect(policy.decide('GET', undefined, {}).rules[0]?.scopes).toEqual(['mcp:use'])
    expect(policy.decide('DELETE', undefined, {}).rules[0]?.scopes).toEqual(['mcp:use'])
  })

  it('checks every member of a batch: each distinct rule once', () => {
    const decision = policy.decide(
      'POST',
      [call('search', 1), call('deploy', 2), call('search', 3)],
      {},
    )
    expect(decision.rules.map((rule) => rule.scopes)).toEqual([
      ['mcp:search'],
      ['mcp:deploy', 'ops'],
    ])
    expect(policy.authorized(decision)).toMatchObject({ method: undefined, name: undefined })
    expect(policy.authorized(decision).operations).toHaveLength(3)
  })

  it('refuses a call whose target cannot be read, and an empty batch (-32600)', () => {
    for (const body of [
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: {} },
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 42 } },
      { jsonrpc: '2.0', id: 7, method: 'resources/read' },
      { jsonrpc: '2.0', id: 7, method: 5 },
      [],
      'tools/call',
      null,
    ]) {
      const error = refusal(() => policy.decide('POST', body, {}))
      expect(error.jsonRpcCode).toBe(-32600)
      expect(error.reason).toBe('mcp_body_invalid')
    }
  })

  it('validates its options once, naming the option', () => {
    expect(() => createMcpPolicy({ tools: { x: { scopes: ['a b'] } } })).toThrow(
      /^mcp policy: tools\.x\.scopes must be scope names, each without spaces/,
    )
    expect(() => createMcpPolicy({ resources: [{ uri: '', scopes: [] }] })).toThrow(
      /resources\[0\]\.uri/,
    )
    expect(() =>
      createMcpPolicy({ tools: { 'a/b': { rateLimit: [{ points: 1, durationSeconds: 1 }] } } }),
    ).toThrow(/tools\.a\/b\.policy/)
    expect(() => createMcpPolicy({ maxBodyBytes: 10 })).toThrow(/maxBodyBytes/)
    expect(() => createMcpPolicy({ rateLimit: {} })).toThrow(/no tool has rateLimit/)
  })
})

describe('Mcp-Method and Mcp-Name against the body (Server Validation)', () => {
  const headers = (extra: Record<string, string>) => ({ 'mcp-protocol-version': MODERN, ...extra })

  it('admits a modern request whose headers match the body', () => {
    const decision = policy.decide(
      'POST',
      call('search'),
      headers({ 'mcp-method': 'tools/call', 'mcp-name': 'search' }),
    )
    expect(decision.rules[0]?.scopes).toEqual(['mcp:search'])
  })

  it('refuses an Mcp-Name that names another tool than the body (-32020), echoing neither', () => {
    const error = refusal(() =>
      policy.decide(
        'POST',
        call('deploy', 9),
        headers({ 'mcp-method': 'tools/call', 'mcp-name': 'search' }),
      ),
    )
    expect(error).toMatchObject({ jsonRpcCode: -32020, status: 400, reason: 'mcp_header_mismatch' })
    const answer = renderMcpError(error)
    expect(answer.status).toBe(400)
    expect(JSON.parse(answer.body)).toEqual({
      jsonrpc: '2.0',
      id: 9,
      error: { code: -32020, message: expect.stringMatching(/^Header mismatch/) },
    })
    expect(answer.body).not.toMatch(/search|deploy/)
  })

  it('refuses an Mcp-Method that differs from the body method (values are case-sensitive)', () => {
    for (const method of ['tools/list', 'Tools/Call']) {
      const error = refusal(() =>
        policy.decide(
          'POST',
          call('search'),
          headers({ 'mcp-method': method, 'mcp-name': 'search' }),
        ),
      )
      expect(error.jsonRpcCode).toBe(-32020)
    }
  })

  it('refuses a modern request without Mcp-Method, or without Mcp-Name on tools/call, resources/read, prompts/get', () => {
    expect(refusal(() => policy.decide('POST', call('search'), headers({}))).reason).toBe(
      'mcp_header_missing',
    )
    expect(
      refusal(() => policy.decide('POST', call('search'), headers({ 'mcp-method': 'tools/call' })))
        .reason,
    ).toBe('mcp_header_missing')
    const read = { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///a' } }
    expect(
      refusal(() => policy.decide('POST', read, headers({ 'mcp-method': 'resources/read' })))
        .jsonRpcCode,
    ).toBe(-32020)
  })

  it('requires the headers from 2026-07-28 on, and not before (an older request is read from its body)', () => {
    expect(() =>
      policy.decide('POST', call('search'), { 'mcp-protocol-version': '2025-11-25' }),
    ).not.toThrow()
    expect(() => policy.decide('POST', call('search'), {})).not.toThrow()
    expect(() =>
      policy.decide('POST', call('search'), { 'mcp-protocol-version': '2027-01-01' }),
    ).toThrow(McpRequestError)
  })

  it('checks the headers whenever they are present, also on an older protocol version', () => {
    const error = refusal(() =>
      policy.decide('POST', call('deploy'), {
        'mcp-protocol-version': '2025-11-25',
        'mcp-method': 'tools/call',
        'mcp-name': 'search',
      }),
    )
    expect(error.jsonRpcCode).toBe(-32020)
  })

  it('decodes a Base64 sentinel Mcp-Name before comparing it with the body', () => {
    const name = 'récapitulatif 世界'
    const encoded = `=?base64?${Buffer.from(name).toString('base64')}?=`
    expect(() =>
      policy.decide(
        'POST',
        call(name),
        headers({ 'mcp-method': 'tools/call', 'mcp-name': encoded }),
      ),
    ).not.toThrow()
    // The sentinel form of another name is a mismatch, not a match on the raw text.
    const other = `=?base64?${Buffer.from('search').toString('base64')}?=`
    expect(
      refusal(() =>
        policy.decide(
          'POST',
          call('deploy'),
          headers({ 'mcp-method': 'tools/call', 'mcp-name': other }),
        ),
      ).reason,
    ).toBe('mcp_header_mismatch')
  })

  it('refuses a sentinel that is not strict Base64 of UTF-8 (-32020, malformed)', () => {
    for (const value of [
      '=?base64?***?=',
      '=?base64?YQ?=',
      `=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`,
    ]) {
      const error = refusal(() =>
        policy.decide(
          'POST',
          call('a'),
          headers({ 'mcp-method': 'tools/call', 'mcp-name': value }),
        ),
      )
      expect(error).toMatchObject({ jsonRpcCode: -32020, reason: 'mcp_header_malformed' })
    }
    expect(decodeMcpName('=?BASE64?YQ==?=')).toBe('=?BASE64?YQ==?=')
    expect(decodeMcpName('=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=')).toBe('=?base64?literal?=')
  })

  it('refuses a repeated Mcp-Name or Mcp-Method (no single value to compare)', () => {
    const error = refusal(() =>
      policy.decide('POST', call('search'), {
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': ['search', 'deploy'],
      }),
    )
    expect(error.jsonRpcCode).toBe(-32020)
    // Node joins a repeated unknown field with ", ": that is no tool's name either.
    expect(
      refusal(() =>
        policy.decide(
          'POST',
          call('search'),
          headers({ 'mcp-method': 'tools/call', 'mcp-name': 'search, deploy' }),
        ),
      ).reason,
    ).toBe('mcp_header_mismatch')
  })

  it('checks every member of a batch against the headers', () => {
    const error = refusal(() =>
      policy.decide(
        'POST',
        [call('search', 1), call('deploy', 2)],
        headers({ 'mcp-method': 'tools/call', 'mcp-name': 'search' }),
      ),
    )
    expect(error.jsonRpcCode).toBe(-32020)
  })
})

describe('windows per (tenant, tool) in the policy', () => {
  const limited = createMcpPolicy({
    tools: { render: { rateLimit: [{ points: 1, durationSeconds: 60 }] }, search: {} },
  })
  const admission = (claims: { tenant?: string; subject?: string }) =>
    ({ tenant: claims.tenant, subject: claims.subject, clientId: 'app' }) as unknown as Admission
  const count = (auth: Admission, name = 'render') =>
    limited.limit(limited.decide('POST', call(name), {}), auth, { headers: {} })

  it('counts per tenant, and per subject without tenant resolution', () => {
    expect(count(admission({ tenant: 'acme' }))).toMatchObject({
      'RateLimit-Policy': '"tool.render";q=1;w=60',
    })
    expect(() => count(admission({ tenant: 'acme' }))).toThrow(RateLimitedError)
    expect(count(admission({ subject: 'alice' }))).toBeDefined()
    expect(count(admission({ subject: 'bob' }))).toBeDefined()
    expect(() => count(admission({ subject: 'alice' }))).toThrow(RateLimitedError)
  })

  it('reports each refusal as the tenant limiter does, naming the tool, whatever the window is named', () => {
    const events: GateEvent[] = []
    const reported = createMcpPolicy(
      {
        tools: {
          render: { rateLimit: [{ points: 1, durationSeconds: 60 }] },
          export: {
            policy: 'exports',
            rateLimit: [
              { points: 1, durationSeconds: 1, name: 'burst' },
              { points: 5, durationSeconds: 60 },
            ],
          },
        },
      },
      {
        onEvent: (event) => {
          events.push(event)
          // A broken listener refuses nothing and fails nothing.
          throw new Error('listener failure')
        },
      },
    )
    const auth = admission({ tenant: 'acme' })
    const send = (name: string) =>
      reported.limit(reported.decide('POST', call(name), {}), auth, { headers: {} })
    for (const name of ['render', 'export']) {
      expect(send(name)).toBeDefined()
      expect(() => send(name)).toThrow(RateLimitedError)
    }
    expect(events).toEqual([
      { type: 'rate_limited', tenant: 'acme', policy: 'tool.render', tool: 'render' },
      { type: 'rate_limited', tenant: 'acme', policy: 'burst', tool: 'export' },
    ])
  })

  it('counts nothing for a tool without windows, or an operation that is no tool call', () => {
    expect(count(admission({ tenant: 'acme' }), 'search')).toBeUndefined()
    const listed = limited.decide('POST', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {})
    expect(limited.limit(listed, admission({ tenant: 'acme' }), { headers: {} })).toBeUndefined()
  })
})

describe("the body as a framework's parsers left it", () => {
  const text = JSON.stringify(call('search'))

  it('parses text or bytes a parser of another type left, and keeps what a JSON parser gave', () => {
    expect(parsedBodyOf(text, 'text/plain; charset=utf-8')).toEqual(call('search'))
    expect(parsedBodyOf(Buffer.from(text), 'application/octet-stream')).toEqual(call('search'))
    const parsed = call('search')
    expect(parsedBodyOf(parsed, 'application/json')).toBe(parsed)
    // A JSON string is a body (no JSON-RPC message), not text to parse again.
    expect(parsedBodyOf('{"a":1}', 'application/json')).toBe('{"a":1}')
    expect(parsedBodyOf('{"a":1}', 'application/vnd.example+json')).toBe('{"a":1}')
  })

  it('says when no parser read the body, and refuses text that is not JSON with -32700', () => {
    expect(parsedBodyOf(undefined, 'application/json')).toBeUndefined()
    expect(parsedBodyOf(null, undefined)).toBeUndefined()
    const error = refusal(() => parsedBodyOf('{"jsonrpc"', 'text/plain'))
    expect(error.jsonRpcCode).toBe(-32700)
  })
})
