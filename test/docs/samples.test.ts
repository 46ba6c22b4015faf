/**
 * Every TypeScript sample of the README and the guides in docs/ compiles against the package's
 * public names, so that none can rot: a renamed option or export fails here with the Markdown
 * file and line of the sample.
 */
import { setTimeout as sleep } from 'node:timers/promises'

import { createTestIssuer } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  allSamples,
  type DocSample,
  extractSamples,
  type RunningSample,
  startSample,
  typeCheckSamples,
} from '../helpers/doc-samples.js'
import { freePort, type RedisServer, startRedisServer } from '../helpers/redis.js'

/** The README's sample under that heading. */
function readmeSample(heading: string): DocSample {
  const sample = allSamples().find((s) => s.file === 'README.md' && s.heading === heading)
  if (!sample) throw new Error(`README.md has no sample under "${heading}"`)
  return sample
}

/** Waits until the program answers HTTP on `url` (or fails when it ended first). */
async function answering(program: RunningSample, url: string): Promise<void> {
  for (;;) {
    if (program.child.exitCode !== null) {
      throw new Error(`the sample ended with ${program.child.exitCode}:\n${program.output()}`)
    }
    const answered = await fetch(url).then(
      () => true,
      () => false,
    )
    if (answered) return
    await sleep(100)
  }
}

describe('the documentation samples', () => {
  const samples = allSamples()
  const compiled = samples.filter(({ fragment }) => !fragment)

  it('are found in the README and in the guides', () => {
    const files = new Set(samples.map(({ file }) => file))
    expect(files).toContain('README.md')
    expect([...files].filter((file) => file.startsWith('docs/')).length).toBeGreaterThanOrEqual(8)
  })

  it('are nearly all complete modules: fragments are fewer than one in eight', () => {
    const fragments = samples.filter(({ fragment }) => fragment)
    expect(fragments.length * 8).toBeLessThan(samples.length)
  })

  it('type-check, each as its own module, with the project compiler options', () => {
    expect(typeCheckSamples(compiled)).toEqual([])
  }, 120_000)

  it('report a broken sample by its Markdown file and line', () => {
    const broken = extractSamples(
      'docs/example.md',
      [
        '# Example',
        '',
        '```ts',
        "import { tollgate } from 'tollgate/express'",
        '',
        'tollgate({ audience: 1 })',
        '```',
        '',
      ].join('\n'),
    )
    expect(broken).toHaveLength(1)
    const [first] = typeCheckSamples(broken)
    expect(first).toMatch(/^docs\/example\.md:6:\d+ TS\d+ /)
  }, 120_000)

  it('skip only blocks marked as fragments', () => {
    const found = extractSamples(
      'x.md',
      ['```ts', 'a', '```', '```ts fragment', 'b', '```', '```json', '{}', '```'].join('\n'),
    )
    expect(found.map(({ code, fragment }) => [code, fragment])).toEqual([
      ['a\n', false],
      ['b\n', true],
    ])
  })
})

describe('the samples marked to run', () => {
  const runnable = allSamples().filter(({ run }) => run)

  it('exist', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(2)
  })

  for (const sample of runnable) {
    it(`${sample.file}:${sample.line} (${sample.heading}) runs to the end`, async () => {
      const program = startSample(sample)
      try {
        const code = await program.exited
        expect(code, program.output()).toBe(0)
      } finally {
        await program.stop()
      }
    }, 60_000)
  }
})

describe('the README quick starts, run against the testing kit on loopback', () => {
  let redis: RedisServer

  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  it('the gateway admits a gateway token with billing:read and its tenant, and is ready', async () => {
    const issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
    const port = await freePort()
    const program = startSample(readmeSample('Quick start: a gateway (Express, Keycloak)'), {
      AUTH_URL: issuer.url,
      PORT: String(port),
    })
    try {
      const base = `http://127.0.0.1:${port}`
      await answering(program, `${base}/ready`)
      expect((await fetch(`${base}/ready`)).status).toBe(200)
      const token = await issuer.mint({ sub: 'alice', scope: 'billing:read', tenant: 'acme' })
      const admitted = await fetch(`${base}/api/v1/billing/subscriptions`, {
        headers: { authorization: `Bearer ${token}` },
      })
      expect(admitted.status).toBe(200)
      expect(await admitted.json()).toEqual({ tenant: 'acme', user: 'alice' })
      const anonymous = await fetch(`${base}/api/v1/billing/subscriptions`)
      expect(anonymous.status).toBe(401)
    } finally {
      await program.stop()
      await issuer.close()
    }
  }, 60_000)

  it('the product backend admits an office reader, counts in Redis, and refuses a gateway token', async () => {
    const issuer = await createTestIssuer({ realms: ['acme'], audience: 'office' })
    const port = await freePort()
    const program = startSample(
      readmeSample('Quick start: a product backend (Koa, limits in Redis)'),
      {
        AUTH_URL: issuer.url,
        PORT: String(port),
        REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      },
    )
    const admin = await redis.client()
    try {
      const base = `http://127.0.0.1:${port}`
      await answering(program, base)
      const reader = await issuer.mint({
        sub: 'bob',
        tenant: 'acme',
        resource_access: { office: { roles: ['reader'] } },
      })
      const admitted = await fetch(base, { headers: { authorization: `Bearer ${reader}` } })
      expect(admitted.status).toBe(200)
      expect(await admitted.json()).toEqual({ tenant: 'acme', user: 'bob' })
      expect(admitted.headers.get('ratelimit')).toMatch(/r=99/)
      expect(await admin.keys('office:rl:*')).not.toEqual([])

      const noRole = await issuer.mint({ sub: 'carol', tenant: 'acme' })
      expect((await fetch(base, { headers: { authorization: `Bearer ${noRole}` } })).status).toBe(
        403,
      )
      const gatewayToken = await issuer.mint({ aud: 'gateway', tenant: 'acme' })
      expect(
        (await fetch(base, { headers: { authorization: `Bearer ${gatewayToken}` } })).status,
      ).toBe(401)
    } finally {
      await program.stop()
      await issuer.close()
    }
  }, 60_000)
})
