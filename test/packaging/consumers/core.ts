/**
 * A consumer of `tollgate` (no peer dependency installed): the core gate behind Node's own HTTP
 * server, as docs/gateway.md writes it, and its refusals through the `errors` namespace.
 * scripts/check-consumers.ts type-checks it against the packed package and runs it on each Node
 * version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { createGate, errors, isTollgateError, keycloak, renderError, TollgateError } from 'tollgate'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const gate = createGate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
})
const server = createServer(async (req, res) => {
  try {
    const { auth, headers } = await gate.check({
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      method: req.method,
      url: req.url,
    })
    res.writeHead(200, { ...headers, 'content-type': 'application/json' })
    res.end(JSON.stringify({ user: auth?.subject }))
  } catch (error) {
    const { status, headers, body } = renderError(error)
    res.writeHead(status, headers).end(body)
  }
})
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`

try {
  assert.equal((await fetch(url)).status, 401, 'no token')
  const token = await issuer.mint({ sub: 'alice' })
  const admitted = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  assert.equal(admitted.status, 200, 'a valid token')
  assert.deepEqual(await admitted.json(), { user: 'alice' })
  const refusal: unknown = await gate.check({ headers: {} }).catch((error: unknown) => error)
  assert.ok(refusal instanceof errors.TokenMissingError, 'errors.TokenMissingError')
  assert.ok(refusal instanceof TollgateError && isTollgateError(refusal), 'a TollgateError')
  const code: errors.TollgateErrorCode = refusal.code
  assert.equal(code, 'ERR_TOKEN_MISSING')
} finally {
  server.close()
  gate.close()
  await issuer.close()
}
