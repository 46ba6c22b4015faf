/**
 * The Fastify 5 app every Fastify contender shares: the contender's plugin (registered at the
 * root, so its hooks cover the route), then one JSON route. Fastify builds the node:http server
 * through `serverFactory`, so `serve()` listens on it like on the others.
 */
import { createServer, type Server } from 'node:http'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'

export async function fastifyServer(
  setup: ((app: FastifyInstance) => Promise<void> | void) | undefined,
  subject: (request: FastifyRequest) => unknown,
): Promise<Server> {
  let server: Server | undefined
  const app = Fastify({
    logger: false,
    serverFactory: (handler) => {
      server = createServer(handler)
      return server
    },
  })
  if (setup) await setup(app)
  app.get('/hello', async (request) => ({ ok: true, sub: subject(request) }))
  await app.ready()
  return server!
}
