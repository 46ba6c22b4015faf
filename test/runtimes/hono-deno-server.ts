/**
 * The Hono runtime app on Deno: `Deno.serve` with the app's `fetch`, on the port and config the
 * launcher passes in the environment (test/helpers/runtimes.ts). Bundled before it runs.
 *
 * @module
 */
import { type HonoRuntimeConfig, honoRuntimeApp } from './hono-app.js'

const config = JSON.parse(Deno.env.get('TOLLGATE_RUNTIME_CONFIG') ?? '') as HonoRuntimeConfig
const app = honoRuntimeApp(config)
Deno.serve(
  {
    hostname: '127.0.0.1',
    port: Number(Deno.env.get('PORT')),
    onListen: ({ port }) => console.log(`listening on ${port}`),
  },
  app.fetch,
)
