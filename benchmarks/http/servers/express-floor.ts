/** Express + the floor middleware (`floor.ts`): what any caching bearer middleware must cost on Express. */
import type { RequestHandler } from 'express'
import { config, serve } from './common.ts'
import { expressServer } from './express-app.ts'
import { type FloorClaims, floorVerifier } from './floor.ts'

await serve(async () => {
  const check = await floorVerifier(config())
  const floor: RequestHandler = (req, res, next) => {
    const claims = check(req.headers.authorization)
    if (claims === undefined) return void res.status(401).json({ ok: false })
    ;(req as { user?: FloorClaims }).user = claims
    next()
  }
  return expressServer(floor, (req) => (req as { user?: FloorClaims }).user?.sub)
})
