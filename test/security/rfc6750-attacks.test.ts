/**
 * RFC 6750 §5.3's recommendations that a resource server keeps by refusing a channel, written from
 * the RFC's text, over HTTP on every adapter: "Don't store bearer tokens in cookies" (a cookie is
 * sent by the browser to any request, the CSRF of §5.3), so a token in a cookie is no credential,
 * whatever the cookie's name; the `Authorization` field alone decides.
 */
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'

const ROUTE = '/api/v1/billing/subscriptions'

let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  }
})
afterAll(async () => {
  await issuer.close()
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

describe.each(APPS)('a bearer token in a cookie, through %s', (_name, createApp) => {
  it('is no credential: 401 with a bare challenge, and the header token alone decides', async () => {
    const server = createApp(options)
    try {
      const url = await listen(server)
      const valid = await issuer.mint({ sub: 'alice' })
      const other = await issuer.mint({ sub: 'mallory' })
      for (const cookie of [
        `access_token=${valid}`,
        `Authorization=Bearer ${valid}`,
        `token=${valid}; session=x`,
      ]) {
        const res = await fetch(`${url}${ROUTE}`, { headers: { cookie } })
        await res.arrayBuffer()
        expect(res.status, cookie).toBe(401)
        // No credentials (RFC 6750 §3.1): a challenge without an error code.
        expect(res.headers.get('www-authenticate'), cookie).toMatch(/^Bearer realm="[^"]*"$/)
      }
      // A cookie beside the header changes nothing: the header's subject is admitted.
      const res = await fetch(`${url}${ROUTE}`, {
        headers: { authorization: `Bearer ${other}`, cookie: `access_token=${valid}` },
      })
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ subject: 'mallory' })
    } finally {
      await close(server)
    }
  })
})
