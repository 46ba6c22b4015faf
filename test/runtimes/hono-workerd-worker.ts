/**
 * The Hono runtime app as a Workers module worker: the app is built on the first request (workerd
 * refuses timers and I/O in a module's global scope) from the `TOLLGATE_RUNTIME_CONFIG` text
 * binding (test/helpers/runtimes.ts writes the workerd config). Bundled before it runs.
 *
 * @module
 */
import type { Hono } from 'hono'

import { type HonoRuntimeConfig, honoRuntimeApp } from './hono-app.js'

let app: Hono | undefined

export default {
  fetch(request: Request, env: { readonly TOLLGATE_RUNTIME_CONFIG: string }) {
    app ??= honoRuntimeApp(JSON.parse(env.TOLLGATE_RUNTIME_CONFIG) as HonoRuntimeConfig)
    return app.fetch(request, env)
  },
}
