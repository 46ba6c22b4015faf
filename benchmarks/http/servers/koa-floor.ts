/** Koa + the floor middleware (`floor.ts`): what any caching bearer middleware must cost on Koa. */
import type { Middleware } from 'koa'
import { config, serve } from './common.ts'
import { floorVerifier } from './floor.ts'
import { koaServer } from './koa-app.ts'

await serve(async () => {
  const check = await floorVerifier(config())
  const floor: Middleware = (ctx, next) => {
    const claims = check(ctx.headers.authorization)
    if (claims === undefined) {
      ctx.status = 401
      ctx.body = { ok: false }
      return
    }
    ctx.state.user = claims
    return next()
  }
  return koaServer(floor, (ctx) => (ctx.state.user as { sub?: string } | undefined)?.sub)
})
