/**
 * The runtime app on Deno: `Deno.serve` on the port and config the launcher passes in the
 * environment (test/helpers/runtimes.ts). Bundled before it runs; see docs/runtimes.md.
 *
 * @module
 */
import { type RuntimeAppConfig, runtimeApp } from './app.js'

const config = JSON.parse(Deno.env.get('TOLLGATE_RUNTIME_CONFIG') ?? '') as RuntimeAppConfig
Deno.serve(
  {
    hostname: '127.0.0.1',
    port: Number(Deno.env.get('PORT')),
    onListen: ({ port }) => console.log(`listening on ${port}`),
  },
  runtimeApp(config),
)
