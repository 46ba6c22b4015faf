/**
 * The Hono 4 app every Hono contender shares, on Node through @hono/node-server's request
 * listener: the contender's middleware, then one JSON route.
 */
import { createServer } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import { type Context, Hono, type MiddlewareHandler } from 'hono'

export function honoServer(auth: MiddlewareHandler | undefined, subject: (c: Context) => unknown) {
  const app = new Hono()
  if (auth) app.use(auth)
  app.get('/hello', (c) => c.json({ ok: true, sub: subject(c) }))
  return createServer(getRequestListener(app.fetch))
}
