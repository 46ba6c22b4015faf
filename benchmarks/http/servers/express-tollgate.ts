/** Express + tollgate's Express adapter (from dist/), per-tenant limiter on. */
import type { RequestHandler } from 'express'
import { loadExpress } from '../../tollgate.ts'
import { config, serve } from './common.ts'
import { expressServer } from './express-app.ts'
import { tollgateOptions } from './tollgate-options.ts'

await serve(async () => {
  const { tollgate } = await loadExpress()
  const middleware = tollgate(await tollgateOptions(config())) as unknown as RequestHandler
  return expressServer(middleware, (req) => (req as { auth?: { subject?: string } }).auth?.subject)
})
