/** Express + the floor middleware (`floor.ts`): what any caching bearer middleware must cost on Express. */
import type { RequestHandler } from 'express'
import { config, serve } from './common.ts'
import { expressServer } from './express-app.ts'
import { BARE_FLOOR, FLOOR_REFUSAL, type FloorClaims, floorVerifier } from './floor.ts'

await serve(async () => {
  const check = await floorVerifier(config())
  const floor: RequestHandler = (req, res, next) => {
    const admitted = check(req.headers.authorization)
    if (admitted === undefined) {
      if (BARE_FLOOR) return void res.status(401).json({ ok: false })
      res.statusCode = 401
      for (const name in FLOOR_REFUSAL.headers) {
        res.setHeader(name, FLOOR_REFUSAL.headers[name] as string)
      }
      return void res.end(FLOOR_REFUSAL.body)
    }
    if (admitted.headers !== undefined) {
      for (const name in admitted.headers) res.setHeader(name, admitted.headers[name] as string)
    }
    ;(req as { user?: FloorClaims }).user = admitted.claims
    next()
  }
  return expressServer(floor, (req) => (req as { user?: FloorClaims }).user?.sub)
})
