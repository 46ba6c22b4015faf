/**
 * The runtime app on Bun: `Bun.serve` on the port and config the launcher passes in the
 * environment (test/helpers/runtimes.ts). Bundled before it runs; see docs/runtimes.md.
 *
 * @module
 */
import { type RuntimeAppConfig, runtimeApp } from './app.js'

const config = JSON.parse(Bun.env['TOLLGATE_RUNTIME_CONFIG'] ?? '') as RuntimeAppConfig
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(Bun.env['PORT']),
  fetch: runtimeApp(config),
})
console.log(`listening on ${server.port}`)
