/** Koa + tollgate's Koa adapter (from dist/), per-tenant limiter on. */
import type { Middleware } from 'koa'
import { loadKoa } from '../../tollgate.ts'
import { config, serve } from './common.ts'
import { koaServer } from './koa-app.ts'
import { tollgateOptions } from './tollgate-options.ts'

await serve(async () => {
  const { tollgate } = await loadKoa()
  const middleware = tollgate(await tollgateOptions(config())) as unknown as Middleware
  return koaServer(
    middleware,
    (ctx) => (ctx.state.auth as { subject?: string } | undefined)?.subject,
  )
})
