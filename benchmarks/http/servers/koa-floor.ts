/** Koa + the floor middleware (`floor.ts`): what any caching bearer middleware must cost on Koa. */
import type { Middleware } from 'koa'
import { config, serve } from './common.ts'
import { BARE_FLOOR, FLOOR_REFUSAL, floorVerifier } from './floor.ts'
import { koaServer } from './koa-app.ts'

await serve(async () => {
  const check = await floorVerifier(config())
  const floor: Middleware = (ctx, next) => {
    const admitted = check(ctx.headers.authorization)
    if (admitted === undefined) {
      ctx.status = 401
      if (BARE_FLOOR) {
        ctx.body = { ok: false }
      } else {
        ctx.set(FLOOR_REFUSAL.headers)
        ctx.body = FLOOR_REFUSAL.body
      }
      return
    }
    if (admitted.headers !== undefined) ctx.set(admitted.headers)
    ctx.state.user = admitted.claims
    return next()
  }
  return koaServer(floor, (ctx) => (ctx.state.user as { sub?: string } | undefined)?.sub)
})
