/**
 * The runtime app as a Workers module worker: its `fetch` handler serves the config of the
 * `TOLLGATE_RUNTIME_CONFIG` text binding (test/helpers/runtimes.ts writes the workerd config). Bundled before it
 * runs; see docs/runtimes.md.
 *
 * @module
 */
import { type RuntimeAppConfig, runtimeApp } from './app.js'

let app: ((request: Request) => Promise<Response>) | undefined

export default {
  fetch(request: Request, env: { readonly TOLLGATE_RUNTIME_CONFIG: string }): Promise<Response> {
    app ??= runtimeApp(JSON.parse(env.TOLLGATE_RUNTIME_CONFIG) as RuntimeAppConfig)
    return app(request)
  },
}
