/** Hono + the floor middleware (`floor.ts`): what any caching bearer middleware must cost on Hono. */
import type { MiddlewareHandler } from 'hono'
import { config, serve } from './common.ts'
import { BARE_FLOOR, FLOOR_REFUSAL, type FloorClaims, floorVerifier } from './floor.ts'
import { honoServer } from './hono-app.ts'

await serve(async () => {
  const check = await floorVerifier(config())
  const floor: MiddlewareHandler = async (c, next) => {
    const admitted = check(c.req.header('authorization'))
    if (admitted === undefined) {
      if (BARE_FLOOR) return c.json({ ok: false }, 401)
      return c.body(FLOOR_REFUSAL.body, 401, FLOOR_REFUSAL.headers)
    }
    if (admitted.headers !== undefined) {
      for (const name in admitted.headers) c.header(name, admitted.headers[name] as string)
    }
    c.set('user' as never, admitted.claims as never)
    await next()
  }
  return honoServer(floor, (c) => (c.get('user' as never) as FloorClaims | undefined)?.sub)
})
