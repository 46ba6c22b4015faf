/**
 * The provider behind sign-in as operators meet it misconfigured: a discovery document that names
 * another issuer is refused, and the message shows both issuers (public values) to compare.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createSignIn, type SignInEvent } from '../../src/signin/index.js'
import { APP_ORIGIN, PRODUCTS, SIGNIN_CLIENT, SIGNIN_SECRET, testKeys } from '../helpers/signin.js'

/** A provider whose discovery document names another issuer than the one it is served under. */
let server: Server
let origin: string
/** The issuer the document names. */
const NAMED = 'https://login.example.com/realms/acme'

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.setHeader('Content-Type', 'application/json')
    res.end(
      JSON.stringify({
        issuer: NAMED,
        authorization_endpoint: `${NAMED}/protocol/openid-connect/auth`,
        token_endpoint: `${NAMED}/protocol/openid-connect/token`,
        jwks_uri: `${NAMED}/protocol/openid-connect/certs`,
        response_types_supported: ['code'],
      }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.close()
})

describe('sign-in discovery', () => {
  it('refuses a document that names another issuer, saying which one and which was expected', async () => {
    const issuer = `${origin}/realms/acme`
    const events: SignInEvent[] = []
    const keys = testKeys()
    const signIn = createSignIn({
      issuer,
      discovery: true,
      clientId: SIGNIN_CLIENT,
      clientSecret: SIGNIN_SECRET,
      baseUrl: APP_ORIGIN,
      keys: () => keys,
      products: PRODUCTS,
      onEvent: (event) => events.push(event),
    })
    const outcome = await signIn.handle({ method: 'GET', url: '/auth/login', headers: {} })
    expect(outcome.response?.status).toBe(503)
    const refused = events.find((event) => event.type === 'signin_refused')
    expect(refused).toMatchObject({
      code: 'ERR_SIGNIN_UNAVAILABLE',
      reason: 'provider_unavailable',
    })
    // The event's error is the provider's failure underneath the 503, for operators.
    const { message } = (refused as { error: Error }).error
    expect(message).toContain(`the document names '${NAMED}', expected '${issuer}'`)
    expect(message).not.toContain(SIGNIN_SECRET)
  })
})
