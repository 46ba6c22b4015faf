/**
 * The runtime app as a Workers module worker: its `fetch` handler serves the config of the
 * `CONFIG` JSON binding (test/helpers/runtimes.ts writes the workerd config). Bundled before it
 * runs; see docs/runtimes.md.
 *
 * @module
 */
import { type RuntimeAppConfig, runtimeApp } from './app.js'

let app: ((request: Request) => Promise<Response>) | undefined

export default {
  fetch(request: Request, env: { readonly CONFIG: RuntimeAppConfig }): Promise<Response> {
    app ??= runtimeApp(env.CONFIG)
    return app(request)
  },
}
