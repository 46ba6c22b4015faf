/**
 * Introspection (RFC 7662) end to end, over HTTP on every adapter, against an introspection
 * endpoint whose answers the test writes: what a provider's answer may say about a token's issuer
 * (§2.2: `iss` is optional; when present it must be the issuer the gate asked), and what the
 * gate's request to the provider carries (§2.1: the caller is authenticated; §4: the token goes
 * to that endpoint only, over the channel configured).
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'

const ROUTE = '/api/v1/billing/subscriptions'

let endpoint: IntrospectionEndpointStub
let options: GateOptions

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
  options = {
    issuers: [
      {
        issuer: endpoint.url,
        jwksUri: `${endpoint.url}/jwks`,
        introspection: {
          endpoint: `${endpoint.url}/introspect`,
          clientId: 'orders-api',
          clientSecret: 'orders-secret',
        },
      },
    ],
    audience: 'orders',
  }
})
afterAll(async () => {
  await endpoint.close()
})

const nowSeconds = () => Math.floor(Date.now() / 1000)
const active = (extra: Record<string, unknown>) => ({
  active: true,
  aud: 'orders',
  sub: 'alice',
  client_id: 'shop',
  scope: 'orders:read',
  exp: nowSeconds() + 120,
  iat: nowSeconds(),
  ...extra,
})

async function listen(server: ProtectedServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function close(server: ProtectedServer): Promise<void> {
  await server.gate.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}

/** `iss` values an answer may carry, and whether the token is admitted. */
const ISSUERS: ReadonlyArray<readonly [label: string, iss: () => unknown, admitted: boolean]> = [
  ['the issuer asked', () => endpoint.url, true],
  ['no iss (optional, RFC 7662 §2.2)', () => undefined, true],
  ['another issuer', () => 'https://elsewhere.example', false],
  ['the issuer with a trailing slash', () => `${endpoint.url}/`, false],
  ['the issuer in other case', () => endpoint.url.toUpperCase(), false],
  ['the issuer with a path added', () => `${endpoint.url}/realms/other`, false],
  ['a prefix of the issuer', () => endpoint.url.slice(0, -1), false],
  ['a number', () => 7, false],
  ['an array holding the issuer', () => [endpoint.url], false],
  ['null', () => null, false],
]

describe.each(APPS)('an introspection answer’s iss through %s', (_name, createApp) => {
  it('admits an answer naming the issuer asked or none, and refuses every other with 401, also from the cache', async () => {
    const events: GateEvent[] = []
    const server = createApp({ ...options, onEvent: (event) => events.push(event) })
    try {
      const url = await listen(server)
      for (const [label, iss, admitted] of ISSUERS) {
        const facts = active({})
        const value = iss()
        if (value !== undefined) Object.assign(facts, { iss: value })
        endpoint.answer = () => ({ body: JSON.stringify(facts) })
        const token = randomBytes(24).toString('base64url')
        for (const round of [1, 2]) {
          events.length = 0
          const res = await fetch(`${url}${ROUTE}`, {
            headers: { authorization: `Bearer ${token}` },
          })
          const body = await res.text()
          if (admitted) {
            expect(res.status, `${label} (${round})`).toBe(200)
            // The admission names the issuer configured, never one the answer wrote.
            expect(JSON.parse(body), label).toMatchObject({
              issuer: endpoint.url,
              subject: 'alice',
            })
            continue
          }
          expect(res.status, `${label} (${round})`).toBe(401)
          expect(res.headers.get('www-authenticate'), label).toContain('error="invalid_token"')
          expect(body, label).not.toContain('elsewhere')
          if (round === 1) {
            expect(
              events.find((event) => event.type === 'rejected'),
              label,
            ).toMatchObject({ reason: 'unknown_issuer' })
          }
        }
      }
    } finally {
      await close(server)
    }
  })
})

describe('the introspection request (RFC 7662 §2.1, §4)', () => {
  it('is authenticated as the gate’s client and carries the token only in its form body, with its hint', async () => {
    const calls: { authorization: string | undefined; url: string; form: URLSearchParams }[] = []
    const provider = createServer((req, res) => {
      let body = ''
      req.on('data', (chunk) => {
        body += String(chunk)
      })
      req.on('end', () => {
        calls.push({
          authorization: req.headers.authorization,
          url: req.url ?? '',
          form: new URLSearchParams(body),
        })
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(active({})))
      })
    })
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve))
    const providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
    const [, createApp] = APPS[0] as (typeof APPS)[number]
    const server = createApp({
      issuers: [
        {
          issuer: providerUrl,
          jwksUri: `${providerUrl}/jwks`,
          introspection: {
            endpoint: `${providerUrl}/introspect`,
            clientId: 'orders-api',
            clientSecret: 'orders-secret',
          },
        },
      ],
      audience: 'orders',
    })
    try {
      const url = await listen(server)
      const token = randomBytes(24).toString('base64url')
      const res = await fetch(`${url}${ROUTE}`, { headers: { authorization: `Bearer ${token}` } })
      await res.arrayBuffer()
      expect(res.status).toBe(200)
      expect(calls).toHaveLength(1)
      const [call] = calls
      // RFC 6749 §2.3.1: client id and secret form-encoded, then Basic.
      const [scheme, credentials = ''] = (call?.authorization ?? '').split(' ')
      expect(scheme).toBe('Basic')
      const pair = Buffer.from(credentials, 'base64').toString().split(':').map(decodeURIComponent)
      expect(pair).toEqual(['orders-api', 'orders-secret'])
      expect(call?.url).toBe('/introspect')
      expect(call?.form.get('token')).toBe(token)
      expect(call?.form.get('token_type_hint')).toBe('access_token')
    } finally {
      await close(server)
      provider.closeAllConnections()
      await new Promise((resolve) => provider.close(resolve))
    }
  })
})
