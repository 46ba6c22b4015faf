/** Hono + tollgate's Hono adapter (from dist/), per-tenant limiter on. */
import type { MiddlewareHandler } from 'hono'
import { loadHono } from '../../tollgate.ts'
import { config, serve } from './common.ts'
import { honoServer } from './hono-app.ts'
import { tollgateOptions } from './tollgate-options.ts'

await serve(async () => {
  const { tollgate } = await loadHono()
  const middleware = tollgate(await tollgateOptions(config())) as unknown as MiddlewareHandler
  return honoServer(
    middleware,
    (c) => (c.get('auth' as never) as { subject?: string } | undefined)?.subject,
  )
})
