/**
 * The introspection samples: docs/introspection.md against the development provider's opaque
 * `ledger` tokens and its real introspection endpoint (`AUTH_URL`), docs/keycloak.md's
 * lightweight access tokens against a Keycloak-shaped introspection endpoint the scenario serves
 * at `https://sso.example.com` (as Keycloak answers for a lightweight token: the JWT carries
 * almost nothing, the answer carries the audience, scope and tenant).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { expect } from 'vitest'

import { answer, bearer, type ScenarioTable } from '../scenario.js'
import { SECRETS } from '../world.js'

const SSO_ISSUER = 'https://sso.example.com/realms/acme'

async function clientCredentials(
  tokenEndpoint: string,
  resource: string,
  scope: string,
): Promise<string> {
  const response = await fetch(tokenEndpoint, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`billing-sync:${SECRETS.BILLING_SYNC_SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }).toString(),
  })
  return ((await response.json()) as { access_token: string }).access_token
}

const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A lightweight access token as Keycloak issues it: a JWT with almost no claims. */
function lightweightToken(jti: string): string {
  const now = Math.floor(Date.now() / 1000)
  const claims = { exp: now + 300, iat: now, jti, iss: SSO_ISSUER, typ: 'Bearer', azp: 'web' }
  return `${segment({ alg: 'RS256', typ: 'JWT', kid: 'k' })}.${segment(claims)}.${'s'.repeat(43)}`
}

/** RFC 6749 §2.3.1: Basic credentials of the form-encoded client id and secret. */
function authenticated(header: string | undefined): boolean {
  if (header?.startsWith('Basic ') !== true) return false
  const [id = '', secret = ''] = Buffer.from(header.slice(6), 'base64').toString().split(':')
  const decode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '))
  return decode(id) === 'gateway' && decode(secret) === SECRETS.GATEWAY_CLIENT_SECRET
}

/** Keycloak's introspection endpoint for realm acme, answering for the tokens in `known`. */
async function startKeycloakIntrospection(
  known: Map<string, Record<string, unknown>>,
): Promise<{ url: string; server: Server; calls: () => number }> {
  let calls = 0
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => {
      body += String(chunk)
    })
    req.on('end', () => {
      if (req.url !== '/realms/acme/protocol/openid-connect/token/introspect') {
        res.writeHead(404).end()
        return
      }
      calls++
      if (!authenticated(req.headers.authorization)) {
        res.writeHead(401, { 'content-type': 'application/json' })
        res.end('{"error":"invalid_client"}')
        return
      }
      const facts = known.get(new URLSearchParams(body).get('token') ?? '')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(facts === undefined ? { active: false } : { active: true, ...facts }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    calls: () => calls,
  }
}

export const INTROSPECTION: ScenarioTable = {
  'docs/introspection.md': {
    'The setup': {
      promises:
        'an opaque ledger token of the development provider with ledger:read 200 (client, scopes); a string the provider does not know 401; an office JWT of the provider (another audience) 401',
      async run({ start, world }) {
        const provider = await world.devProvider()
        const api = await start({ env: { AUTH_URL: provider.url } })
        const token = await clientCredentials(
          provider.tokenEndpoint,
          'https://ledger.example.com',
          'ledger:read',
        )
        expect(token.split('.')).toHaveLength(1)
        expect(await answer(await api.fetch('/entries', bearer(token)))).toEqual({
          status: 200,
          body: { client: 'billing-sync', scopes: ['ledger:read'] },
        })
        const unknown = await answer(await api.fetch('/entries', bearer('never-issued-anywhere')))
        expect(unknown.status).toBe(401)
        expect(unknown.body).toEqual({ error: 'invalid_token', error_description: 'invalid token' })
        const office = await clientCredentials(
          provider.tokenEndpoint,
          'https://office.example.com',
          'office:records:read',
        )
        expect(office.split('.')).toHaveLength(3)
        expect((await api.fetch('/entries', bearer(office))).status).toBe(401)
      },
    },
  },
  'docs/keycloak.md': {
    'Lightweight access tokens': {
      promises:
        'a lightweight token Keycloak calls active with aud gateway, tenant and billing:read 200 (tenant from the answer, one call for two requests); one Keycloak does not know 401; one without the scope 403',
      async run({ start, world }) {
        const known = new Map<string, Record<string, unknown>>()
        const keycloak = await startKeycloakIntrospection(known)
        try {
          const api = await start({
            env: {
              TOLLGATE_SAMPLE_HOSTS: JSON.stringify({
                ...world.hosts,
                'https://sso.example.com': keycloak.url,
              }),
            },
          })
          const token = lightweightToken('lw-1')
          const facts = (scope: string) => ({
            iss: SSO_ISSUER,
            aud: 'gateway',
            azp: 'web',
            typ: 'Bearer',
            scope,
            tenant: 'acme',
            exp: Math.floor(Date.now() / 1000) + 300,
          })
          known.set(token, facts('billing:read'))
          expect(await answer(await api.fetch('/billing', bearer(token)))).toEqual({
            status: 200,
            body: { tenant: 'acme' },
          })
          expect((await api.fetch('/billing', bearer(token))).status).toBe(200)
          expect(keycloak.calls()).toBe(1)
          expect((await api.fetch('/billing', bearer(lightweightToken('lw-2')))).status).toBe(401)
          const narrow = lightweightToken('lw-3')
          known.set(narrow, facts('profile'))
          expect((await api.fetch('/billing', bearer(narrow))).status).toBe(403)
        } finally {
          keycloak.server.closeAllConnections()
          await new Promise((resolve) => keycloak.server.close(resolve))
        }
      },
    },
  },
}
