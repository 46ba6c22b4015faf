/**
 * docs/runtimes.md: each sample, as printed in the guide, bundled as CI bundles it (esbuild,
 * `tollgate/fetch` from the sources, `node:` built-ins left to the runtime) and served by its
 * runtime (test/helpers/runtimes.ts), `KEYCLOAK_URL` the test issuer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { build } from 'esbuild'
import { expect } from 'vitest'

import { type RuntimeName, startSample as startOnRuntime } from '../../helpers/runtimes.js'
import { answer, bearer, type Scenario, type ScenarioTable } from '../scenario.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
/** Where test/helpers/runtimes.ts finds each runtime's sample bundle. */
const ENTRY = { bun: 'samples/bun', deno: 'samples/deno', workerd: 'samples/worker' } as const

const onRuntime = (runtime: RuntimeName & keyof typeof ENTRY, how: string): Scenario => ({
  promises: `on ${runtime} (${how}): /invoices without a token 401, without the scope 403, with billing:read 200 naming the subject`,
  async run({ sample, world: { kit } }) {
    const directory = mkdtempSync(join(tmpdir(), 'tollgate-doc-runtime-'))
    try {
      const source = join(directory, 'sample.ts')
      writeFileSync(source, sample.code)
      await build({
        entryPoints: [{ in: source, out: ENTRY[runtime] }],
        outdir: directory,
        bundle: true,
        format: 'esm',
        platform: 'neutral',
        mainFields: ['module', 'main'],
        conditions: ['workerd', 'worker', 'import'],
        external: ['node:*'],
        alias: { 'tollgate/fetch': join(ROOT, 'adapters', 'fetch', 'index.ts') },
        logLevel: 'warning',
      })
      const server = await startOnRuntime(runtime, directory, kit.url)
      try {
        const invoices = `${server.origin}/invoices`
        const anonymous = await fetch(invoices)
        expect(anonymous.status, server.output()).toBe(401)
        // withAuth's scopes reach the decision: the 401 names them.
        expect(anonymous.headers.get('www-authenticate')).toBe(
          'Bearer realm="api", scope="billing:read"',
        )
        const unscoped = await kit.mint({ scope: 'openid' })
        expect((await fetch(invoices, bearer(unscoped))).status).toBe(403)
        const scoped = await kit.mint({ sub: 'alice', scope: 'openid billing:read' })
        expect(await answer(await fetch(invoices, bearer(scoped)))).toEqual({
          status: 200,
          body: { subject: 'alice' },
        })
      } finally {
        await server.stop()
      }
    } finally {
      rmSync(directory, { recursive: true, force: true })
    }
  },
})

export const RUNTIMES: ScenarioTable = {
  'docs/runtimes.md': {
    Bun: onRuntime('bun', 'Bun.serve'),
    Deno: onRuntime('deno', 'Deno.serve, --allow-net=127.0.0.1'),
    'Cloudflare Workers (workerd)': onRuntime('workerd', 'a module worker, nodejs_compat'),
  },
}
