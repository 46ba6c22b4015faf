/**
 * A consumer of `tollgate/koa` with the peers its guide names (`koa`, `@types/koa`): a gate and a
 * guard, asked without a token, without the role and with it. scripts/check-consumers.ts
 * type-checks it against the packed package and runs it on each Node version of package.json
 * `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'

import Koa from 'koa'
import { keycloak, type TollgateState, tollgate } from 'tollgate/koa'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'office' })
const auth = tollgate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'office',
})
const app = new Koa<TollgateState>()
app.use(auth)
app.use(auth.requireClientRoles('office', 'reader'))
app.use((ctx) => {
  ctx.body = { user: ctx.state.auth?.subject }
})
const server = app.listen(0, '127.0.0.1')
await new Promise((listening) => server.once('listening', listening))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/records`

try {
  assert.equal((await fetch(url)).status, 401, 'no token')
  const roleless = await issuer.mint({ sub: 'alice' })
  const refused = await fetch(url, { headers: { authorization: `Bearer ${roleless}` } })
  assert.equal(refused.status, 403, 'a token without the client role')
  const token = await issuer.mint({
    sub: 'alice',
    resource_access: { office: { roles: ['reader'] } },
  })
  const admitted = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  assert.equal(admitted.status, 200, 'a token with the client role')
  assert.deepEqual(await admitted.json(), { user: 'alice' })
} finally {
  server.close()
  auth.gate.close()
  await issuer.close()
}
