/**
 * The provider callbacks at their URL with a query string, as providers may send it (a realm or
 * client named in the configured URL), end to end on tollgate/nestjs, on both of Nest's platforms,
 * and on every other adapter for comparison: the callback answers, not the guard's 401 for a
 * request without a token, and its effect holds (the session's token is refused afterwards).
 * nestjs.test.ts covers the back-channel logout this way under its own module setup; this covers
 * Keycloak's push not-before and the back-channel logout through the shared app factories.
 */
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateOptions } from '../../src/index.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, LOGOUT_PATH, type ProtectedServer, PUSH_PATH } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'

const ROUTE = '/api/v1/billing/subscriptions'

let issuer: TestIssuer
let options: GateOptions
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: { callbacks: { clientIds: 'gateway' } },
  }
})
afterAll(async () => {
  await issuer.close()
})

const now = () => Math.floor(Date.now() / 1000)
const status = (url: string, token: string) =>
  fetch(`${url}${ROUTE}`, { headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
    await res.arrayBuffer()
    return res.status
  })

/** Keycloak's push not-before action, signed with the realm's key. */
async function pushNotBefore(notBefore: number) {
  const kid = issuer.jwks('acme').keys[0]?.['kid'] as string
  return issuer.sign(
    { alg: 'RS256', typ: 'JWT', kid },
    {
      id: randomUUID(),
      expiration: now() + 30,
      resource: 'gateway',
      action: 'PUSH_NOT_BEFORE',
      notBefore,
    },
    { kid },
  )
}

describe.each([...NEST_APPS, ...APPS])(
  '%s: provider callbacks with a query string',
  (_name, createApp) => {
    let server: ProtectedServer
    let url: string
    beforeAll(async () => {
      server = createApp(options)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    afterAll(async () => {
      await server.gate.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })

    it('answers Keycloak’s push not-before at its path with a query, and refuses older tokens after it', async () => {
      const token = await issuer.mint({ sub: 'push-query', iat: now() - 10 })
      expect(await status(url, token)).toBe(200)
      const res = await fetch(`${url}${PUSH_PATH}?realm=acme&next=%2Fadmin`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: await pushNotBefore(now()),
      })
      // The callback's own answer: not the guard's 401 for a request without a token.
      expect(res.status).toBe(200)
      expect(res.headers.get('www-authenticate')).toBeNull()
      await res.arrayBuffer()
      expect(await status(url, token)).toBe(401)
      // Cleared again (with an empty query), so that later tokens issued before now pass.
      const clear = await fetch(`${url}${PUSH_PATH}?`, {
        method: 'POST',
        body: await pushNotBefore(0),
      })
      expect(clear.status).toBe(200)
      expect(await status(url, await issuer.mint({ sub: 'push-query', iat: now() - 10 }))).toBe(200)
    })

    it('answers a back-channel logout at its path with a query, and refuses the session’s token', async () => {
      const token = await issuer.mint({ sid: 'query-session', iat: now() - 10 })
      expect(await status(url, token)).toBe(200)
      const res = await fetch(`${url}${LOGOUT_PATH}?client_id=gateway`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          logout_token: await issuer.mintLogoutToken({ sid: 'query-session' }),
        }).toString(),
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(await res.text()).toBe('')
      expect(await status(url, token)).toBe(401)
    })
  },
)
