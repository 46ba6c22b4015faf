import { readFileSync } from 'node:fs'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import {
  RUNTIMES,
  type RuntimeServer,
  runtimeBinary,
  runtimeBundles,
  SAMPLE_FILES,
  startSample,
} from '../helpers/runtimes.js'

let issuer: TestIssuer
let bundles: Awaited<ReturnType<typeof runtimeBundles>>

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  bundles = await runtimeBundles()
})
afterAll(async () => {
  bundles?.remove()
  await issuer?.close()
})

describe('docs/runtimes.md', () => {
  it.each(Object.values(SAMPLE_FILES))('shows %s exactly as the tests run it', (file) => {
    const guide = readFileSync('docs/runtimes.md', 'utf8')
    expect(guide).toContain(`\`\`\`ts\n${readFileSync(file, 'utf8')}\`\`\``)
  })
})

describe.each(RUNTIMES)('the docs/runtimes.md sample on %s', (runtime) => {
  let server: RuntimeServer
  beforeAll(async () => {
    server = await startSample(runtime, bundles.directory, issuer.url)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('answers 401 without a token, 403 without the scope, 200 with it', async () => {
    const invoices = `${server.origin}/invoices`
    const anonymous = await fetch(invoices)
    expect(anonymous.status, server.output()).toBe(401)
    // withAuth's scopes reach the decision: the 401 names them (RFC 6750 §3).
    expect(anonymous.headers.get('www-authenticate')).toBe(
      'Bearer realm="api", scope="billing:read"',
    )
    const unscoped = await issuer.mint({ scope: 'openid' })
    const refused = await fetch(invoices, { headers: { Authorization: `Bearer ${unscoped}` } })
    expect(refused.status, server.output()).toBe(403)
    const scoped = await issuer.mint({ sub: 'alice', scope: 'openid billing:read' })
    const admitted = await fetch(invoices, { headers: { Authorization: `Bearer ${scoped}` } })
    expect(admitted.status, server.output()).toBe(200)
    expect(await admitted.json()).toEqual({ subject: 'alice' })
  })
})

describe('a runtime binary missing from node_modules', () => {
  it('fails naming the package to install, instead of skipping', () => {
    for (const [runtime, binary] of [
      ['bun', 'bun'],
      ['deno', 'deno'],
      ['workerd 2024-09-23', 'workerd'],
    ] as const) {
      expect(() => runtimeBinary(runtime, '/nonexistent')).toThrow(
        `run "npm ci" (the "${binary}" devDependency installs the binary`,
      )
    }
  })
})
