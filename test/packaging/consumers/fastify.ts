/**
 * A consumer of `tollgate/fastify` with the peers its guide names (`fastify`, `fastify-plugin`),
 * run with Fastify 5 and Fastify 4: the plugin in a context and a guard on a route, asked without
 * a token, without the scope and with it. scripts/check-consumers.ts type-checks it against the
 * packed package and runs it on each Node version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'

import Fastify from 'fastify'
import { keycloak, tollgate } from 'tollgate/fastify'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const auth = tollgate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
})
const app = Fastify()
app.register(async (api) => {
  await api.register(auth)
  api.get('/orders', { preHandler: auth.requireScopes('orders:read') }, async (request) => ({
    user: request.auth?.subject,
  }))
})
const origin = await app.listen({ port: 0, host: '127.0.0.1' })
const url = `${origin}/orders`

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
  await app.close()
  auth.gate.close()
  await issuer.close()
}
