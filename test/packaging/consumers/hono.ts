/**
 * A consumer of `tollgate/hono` with the peer its guide names (`hono`): the middleware and a
 * guard, asked through `app.request()` without a token, without the scope and with it.
 * scripts/check-consumers.ts type-checks it against the packed package and runs it on each Node
 * version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'

import { Hono } from 'hono'
import { keycloak, tollgate } from 'tollgate/hono'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const auth = tollgate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
})
const app = new Hono()
app.use('/api/*', auth)
app.get('/api/orders', auth.requireScopes('orders:read'), (c) =>
  c.json({ user: c.get('auth')?.subject }),
)
const url = 'http://127.0.0.1/api/orders'

try {
  assert.equal((await app.request(url)).status, 401, 'no token')
  const unscoped = await issuer.mint({ sub: 'alice' })
  const refused = await app.request(url, { headers: { authorization: `Bearer ${unscoped}` } })
  assert.equal(refused.status, 403, 'a token without the scope')
  const token = await issuer.mint({ sub: 'alice', scope: 'orders:read' })
  const admitted = await app.request(url, { headers: { authorization: `Bearer ${token}` } })
  assert.equal(admitted.status, 200, 'a token with the scope')
  assert.deepEqual(await admitted.json(), { user: 'alice' })
} finally {
  auth.gate.close()
  await issuer.close()
}
