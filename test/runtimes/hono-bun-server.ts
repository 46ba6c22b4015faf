/**
 * The Hono runtime app on Bun: `Bun.serve` with the app's `fetch`, on the port and config the
 * launcher passes in the environment (test/helpers/runtimes.ts). Bundled before it runs.
 *
 * @module
 */
import { type HonoRuntimeConfig, honoRuntimeApp } from './hono-app.js'

const config = JSON.parse(Bun.env['TOLLGATE_RUNTIME_CONFIG'] ?? '') as HonoRuntimeConfig
const app = honoRuntimeApp(config)
const server = Bun.serve({ hostname: '127.0.0.1', port: Number(Bun.env['PORT']), fetch: app.fetch })
console.log(`listening on ${server.port}`)
