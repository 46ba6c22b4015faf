/**
 * A consumer of `tollgate/express` with the peers its guide names (`express`, `@types/express`):
 * a gate and a guard on a route, asked without a token, without the scope and with it.
 * scripts/check-consumers.ts type-checks it against the packed package and runs it on each Node
 * version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'

import express from 'express'
import { keycloak, tollgate } from 'tollgate/express'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const auth = tollgate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
})
const app = express()
app.use(auth)
app.get('/orders', auth.requireScopes('orders:read'), (req, res) => {
  res.json({ user: req.auth?.subject })
})
const server = app.listen(0, '127.0.0.1')
await new Promise((listening) => server.once('listening', listening))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`

try {
  assert.equal((await fetch(url)).status, 401, 'no token')
  const unscoped = await issuer.mint({ sub: 'alice' })
  const refused = await fetch(url, { headers: { authorization: `Bearer ${unscoped}` } })
  assert.equal(refused.status, 403, 'a token without the scope')
  const token = await issuer.mint({ sub: 'alice', scope: 'orders:read' })
  const admitted = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  assert.equal(admitted.status, 200, 'a token with the scope')
  assert.deepEqual(await admitted.json(), { user: 'alice' })
} finally {
  server.close()
  auth.gate.close()
  await issuer.close()
}
