/**
 * The runtime app on Bun: `Bun.serve` on the port and config the launcher passes in the
 * environment (test/helpers/runtimes.ts). Bundled before it runs; see docs/runtimes.md.
 *
 * @module
 */
import { type RuntimeAppConfig, runtimeApp } from './app.js'

// Only what this file uses of Bun's globals (bun-types is not a dependency).
declare const Bun: {
  readonly env: Record<string, string | undefined>
  serve(options: {
    hostname: string
    port: number
    fetch: (request: Request) => Promise<Response>
  }): { readonly port: number }
}

const config = JSON.parse(Bun.env['TOLLGATE_RUNTIME_CONFIG'] ?? '') as RuntimeAppConfig
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(Bun.env['PORT']),
  fetch: runtimeApp(config),
})
console.log(`listening on ${server.port}`)
