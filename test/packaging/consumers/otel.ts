/**
 * A consumer of `tollgate/otel` with the peer docs/operating.md names (`@opentelemetry/api`, no
 * SDK: every instrument is a no-op): the listener on a gate that admits one request and refuses
 * another. scripts/check-consumers.ts type-checks it against the packed package and runs it on
 * each Node version of package.json `engines`.
 *
 * @module
 */
import assert from 'node:assert/strict'

import { createGate, type GateEvent, keycloak } from 'tollgate'
import { createOtelListener } from 'tollgate/otel'
import { createTestIssuer } from 'tollgate/testing'

const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
const seen: string[] = []
const gate = createGate({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
  onEvent: createOtelListener({ next: (event: GateEvent) => seen.push(event.type) }),
})

try {
  const token = await issuer.mint({ sub: 'alice' })
  const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
  assert.equal(auth?.subject, 'alice', 'a valid token')
  await assert.rejects(gate.check({ headers: {} }), { status: 401 }, 'no token')
  assert.ok(seen.includes('accepted') && seen.includes('rejected'), `events: ${seen.join(', ')}`)
} finally {
  gate.close()
  await issuer.close()
}
