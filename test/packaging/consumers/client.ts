/**
 * A consumer of `tollgate/client` (no peer dependency installed): a Client Credentials token
 * source against the test issuer's token endpoint, its token sent by `createAuthorizedFetch` to a
 * gate. scripts/check-consumers.ts type-checks it against the packed package and runs it on each
 * Node version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { createGate, keycloak as gateIssuer, renderError } from 'tollgate'
import { createAuthorizedFetch, createTokenSource, keycloak } from 'tollgate/client'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({
  realms: ['acme'],
  audience: 'office',
  clients: [{ clientId: 'billing-sync', clientSecret: 'consumer-secret', scope: 'records:read' }],
})
const gate = createGate({
  issuers: gateIssuer({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'office',
})
const office = createServer(async (req, res) => {
  try {
    const { auth } = await gate.check({ headers: req.headers, method: req.method, url: req.url })
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ client: auth?.clientId, scopes: auth?.scopes }))
  } catch (error) {
    const { status, headers, body } = renderError(error)
    res.writeHead(status, headers).end(body)
  }
})
await new Promise<void>((listening) => office.listen(0, '127.0.0.1', listening))
const url = `http://127.0.0.1:${(office.address() as AddressInfo).port}/records`

const tokens = createTokenSource({
  issuer: keycloak({ authUrl: issuer.url, realm: 'acme' }),
  clientId: 'billing-sync',
  clientSecret: 'consumer-secret',
})
try {
  assert.equal((await fetch(url)).status, 401, 'no token')
  const response = await createAuthorizedFetch(tokens)(url)
  assert.equal(response.status, 200, "the token source's token")
  assert.deepEqual(await response.json(), { client: 'billing-sync', scopes: ['records:read'] })
} finally {
  tokens.close()
  office.close()
  gate.close()
  await issuer.close()
}
