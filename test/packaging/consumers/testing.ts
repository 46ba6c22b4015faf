/**
 * A consumer of `tollgate/testing` with no peer installed (`createTestIssuer()` needs nothing;
 * only `createDevProvider()` needs `oidc-provider`, docs/testing.md): an issuer on loopback whose
 * discovery document and keys answer and whose tokens a gate admits. scripts/check-consumers.ts
 * type-checks it against the packed package and runs it on each Node version of package.json
 * `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'

import { createGate, keycloak } from 'tollgate'
import { createTestIssuer, TEST_ALGORITHMS } from 'tollgate/testing'

const issuer = await createTestIssuer({
  realms: ['acme'],
  audience: 'gateway',
  algorithms: TEST_ALGORITHMS,
})
const gate = createGate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
  algorithms: TEST_ALGORITHMS,
})

try {
  const discovery = await fetch(`${issuer.url}/realms/acme/.well-known/openid-configuration`)
  assert.equal(discovery.status, 200, 'the discovery document')
  const { jwks_uri } = (await discovery.json()) as { jwks_uri: string }
  const { keys } = (await (await fetch(jwks_uri)).json()) as { keys: unknown[] }
  assert.equal(keys.length, TEST_ALGORITHMS.length, 'one key per algorithm')
  for (const algorithm of TEST_ALGORITHMS) {
    const token = await issuer.mint({ sub: 'alice' }, { alg: algorithm })
    const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
    assert.equal(auth?.subject, 'alice', `a token signed with ${algorithm}`)
  }
} finally {
  gate.close()
  await issuer.close()
}
