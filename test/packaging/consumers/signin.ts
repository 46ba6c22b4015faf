/**
 * A consumer of `tollgate/signin` (no peer dependency installed): sign-in against the test issuer,
 * asked for a page without a session (a redirect to sign in) and for an API without one (401),
 * without reaching the provider. scripts/check-consumers.ts type-checks it against the packed
 * package and runs it on each Node version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'

import { createSignIn, keycloak } from 'tollgate/signin'
import { createTestIssuer } from 'tollgate/testing'

// What a secrets manager would hand over: `<key id>=<32 random bytes, base64>`.
const KEYS = `2026-11=${randomBytes(32).toString('base64')}`
const issuer = await createTestIssuer({ realms: ['acme'] })
const signIn = createSignIn({
  issuer: keycloak({ authUrl: issuer.url, realm: 'acme' }),
  clientId: 'office-web',
  clientSecret: 'consumer-secret',
  baseUrl: 'http://127.0.0.1:3000',
  keys: () => KEYS,
  session: { secureCookie: false },
})

try {
  assert.equal(signIn.redirectUri, 'http://127.0.0.1:3000/auth/callback')
  const page = { method: 'GET', url: '/records', headers: { accept: 'text/html' } }
  const outcome = await signIn.handle(page)
  assert.equal(outcome.response, undefined, 'not a sign-in route')
  const redirect = signIn.requireUser(outcome.context, page)
  assert.equal(redirect?.status, 302, 'a page without a session')
  const api = { method: 'GET', url: '/api/records', headers: { accept: 'application/json' } }
  const refusal = signIn.requireUser((await signIn.handle(api)).context, api)
  assert.equal(refusal?.status, 401, 'an API request without a session')
} finally {
  await issuer.close()
}
