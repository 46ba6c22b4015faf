/**
 * The Koa 3 app every Koa contender shares: the contender's auth middleware, then one JSON route.
 * Koa renders thrown errors with their status itself; `silent` keeps refused floods off stderr.
 */
import { createServer } from 'node:http'
import Koa, { type Context, type Middleware } from 'koa'

export function koaServer(auth: Middleware | undefined, subject: (ctx: Context) => unknown) {
  const app = new Koa()
  app.silent = true
  if (auth) app.use(auth)
  app.use((ctx) => {
    if (ctx.path === '/hello') ctx.body = { ok: true, sub: subject(ctx) }
  })
  return createServer(app.callback())
}
