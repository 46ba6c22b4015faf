/**
 * Attack class: the bearer token in logs. The admission (`req.auth`, `ctx.state.auth`,
 * `c.get('auth')`, `@Auth()`) holds the raw access token for code that calls another API on the
 * user's behalf; logging the admission, as applications do (`console.log(req.auth)`,
 * `logger.info({ auth })`), must not print it. It is readable as `auth.token` and not enumerable,
 * on every path that builds an admission: a verified token, a cached verdict, a tenant, a DPoP
 * proof.
 */
import { inspect } from 'node:util'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createGate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createDpopKey, createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import type { Admission } from '../../src/types.js'

let issuer: TestIssuer
let base: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  base = { issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }), audience: 'gateway' }
})
afterAll(async () => {
  await issuer.close()
})

/** Every way an application commonly turns the admission into text. */
function printed(auth: Admission): string[] {
  return [
    inspect(auth, { depth: Number.POSITIVE_INFINITY }),
    inspect(auth, { showHidden: false, getters: true }),
    JSON.stringify(auth),
    JSON.stringify({ auth }),
    JSON.stringify({ ...auth }),
    Object.keys(auth).join(','),
    String(Object.entries(auth)),
    `${inspect({ user: auth })}`,
  ]
}

function expectHidden(auth: Admission | undefined, token: string): void {
  expect(auth).toBeDefined()
  const admission = auth as Admission
  expect(admission.token).toBe(token)
  const [, , signature] = token.split('.')
  for (const text of printed(admission)) {
    expect(text).not.toContain(token)
    expect(text).not.toContain(signature)
  }
  // Still a complete admission otherwise.
  expect(JSON.parse(JSON.stringify(admission))).toMatchObject({
    issuer: issuer.issuer('acme'),
    subject: 'user-1',
  })
  expect(Object.isFrozen(admission)).toBe(true)
}

describe('the admission of a request', () => {
  it('keeps auth.token readable and out of util.inspect and JSON.stringify', async () => {
    const gate = createGate(base)
    const token = await issuer.mint()
    expectHidden((await gate.check({ headers: { authorization: `Bearer ${token}` } })).auth, token)
    // A cached verdict gives the same admission.
    expectHidden((await gate.check({ headers: { authorization: `Bearer ${token}` } })).auth, token)
    await gate.close()
  })

  it('keeps it hidden in the admission built with a tenant and a plan', async () => {
    const gate = createGate({
      ...base,
      tenant: { claim: 'tenant' },
      rateLimit: { windows: [{ points: 100, durationSeconds: 60 }] },
    })
    const token = await issuer.mint({ tenant: 'acme-corp' })
    const { auth } = await gate.check({ headers: { authorization: `Bearer ${token}` } })
    expectHidden(auth, token)
    expect(auth).toMatchObject({ tenant: 'acme-corp', plan: 'default' })
    // A second request of the same token and tenant.
    expectHidden((await gate.check({ headers: { authorization: `Bearer ${token}` } })).auth, token)
    await gate.close()
  })

  it('keeps it hidden in the admission of a DPoP-bound token', async () => {
    const key = await createDpopKey()
    const gate = createGate({
      ...base,
      dpop: { mode: 'allowed', publicBaseUrl: 'https://api.example.test' },
    })
    const token = await issuer.mint({}, { dpop: key })
    const headers = await key.headers(token, {
      method: 'GET',
      url: 'https://api.example.test/orders',
    })
    const { auth } = await gate.check({
      method: 'GET',
      url: '/orders',
      headers: { authorization: headers.Authorization, dpop: headers.DPoP },
    })
    expectHidden(auth, token)
    await gate.close()
  })
})
