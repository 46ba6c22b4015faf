/**
 * A consumer of `tollgate/fetch` (no peer dependency installed): a route handler wrapped by
 * `withAuth`, called with WHATWG `Request`s without a token, without the scope and with it.
 * scripts/check-consumers.ts type-checks it against the packed package and runs it on each Node
 * version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'

import { keycloak, tollgate } from 'tollgate/fetch'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const auth = tollgate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
})
const GET = auth.withAuth((_request, user) => Response.json({ user: user?.subject }), {
  scopes: ['orders:read'],
})
const url = 'https://api.example.com/orders'
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

try {
  assert.equal((await GET(new Request(url))).status, 401, 'no token')
  const unscoped = await issuer.mint({ sub: 'alice' })
  assert.equal((await GET(new Request(url, bearer(unscoped)))).status, 403, 'no scope')
  const token = await issuer.mint({ sub: 'alice', scope: 'orders:read' })
  const admitted = await GET(new Request(url, bearer(token)))
  assert.equal(admitted.status, 200, 'a token with the scope')
  assert.deepEqual(await admitted.json(), { user: 'alice' })
} finally {
  auth.gate.close()
  await issuer.close()
}
