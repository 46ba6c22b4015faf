/**
 * The Hono application the runtime tests serve on Bun, Deno and workerd, and on Node as the
 * reference: `tollgate/hono` on `/api/*` with a scope guard on one route, one gate per name built
 * from JSON (as test/runtimes/app.ts does for the Fetch adapter). Nothing here may import
 * `node:http` or a test helper: it is bundled and run outside Node.
 *
 * @module
 */
import { Hono } from 'hono'

import { keycloak, tollgate } from '../../adapters/hono/index.js'
import { READY_PATH, type RuntimeGateConfig } from './app.js'

/** Gates by name: `/<name>/api/…` is answered by gate `<name>`. */
export interface HonoRuntimeConfig {
  readonly gates: Readonly<Record<string, RuntimeGateConfig>>
}

/** The path of the guarded route under each gate's prefix. */
export const HONO_ORDERS_PATH = '/api/orders'
/** A route behind the gate with no guard. */
export const HONO_PROFILE_PATH = '/api/profile'

function gateApp(config: RuntimeGateConfig): Hono {
  const auth = tollgate({
    ...config.options,
    issuers: keycloak({ authUrl: config.authUrl, realms: [...config.realms] }),
    audience: config.audience,
  })
  const app = new Hono()
  app.use('/api/*', auth)
  app.get(HONO_ORDERS_PATH, auth.requireScopes('orders:read'), (c) =>
    c.json({ subject: c.get('auth')?.subject, tenant: c.get('auth')?.tenant }),
  )
  app.get(HONO_PROFILE_PATH, (c) => c.json({ subject: c.get('auth')?.subject }))
  return app
}

/**
 * The app: `READY_PATH` (answered without a gate, so a launcher can tell when it is up), then one
 * sub-app per gate under `/<name>`.
 */
export function honoRuntimeApp(config: HonoRuntimeConfig): Hono {
  const app = new Hono()
  app.get(READY_PATH, (c) => c.text('ready'))
  for (const [name, gate] of Object.entries(config.gates)) app.route(`/${name}`, gateApp(gate))
  return app
}
