/** Fastify + the floor middleware (`floor.ts`) in an `onRequest` hook: what any caching bearer middleware must cost on Fastify. */
import type { FastifyRequest } from 'fastify'
import { config, serve } from './common.ts'
import { fastifyServer } from './fastify-app.ts'
import { BARE_FLOOR, FLOOR_REFUSAL, type FloorClaims, floorVerifier } from './floor.ts'

await serve(async () => {
  const check = await floorVerifier(config())
  return fastifyServer(
    (app) => {
      app.addHook('onRequest', (request, reply, done) => {
        const admitted = check(request.headers.authorization)
        if (admitted === undefined) {
          if (BARE_FLOOR) return void reply.code(401).send({ ok: false })
          return void reply.code(401).headers(FLOOR_REFUSAL.headers).send(FLOOR_REFUSAL.body)
        }
        if (admitted.headers !== undefined) reply.headers(admitted.headers)
        ;(request as FastifyRequest & { user?: FloorClaims }).user = admitted.claims
        done()
      })
    },
    (request) => (request as FastifyRequest & { user?: FloorClaims }).user?.sub,
  )
})
