/** Fastify + tollgate's Fastify plugin (from dist/), per-tenant limiter on. */
import type { FastifyPluginCallback, FastifyRequest } from 'fastify'
import { loadFastify } from '../../tollgate.ts'
import { config, serve } from './common.ts'
import { fastifyServer } from './fastify-app.ts'
import { tollgateOptions } from './tollgate-options.ts'

await serve(async () => {
  const { tollgate } = await loadFastify()
  const plugin = tollgate(await tollgateOptions(config())) as unknown as FastifyPluginCallback
  return fastifyServer(
    async (app) => {
      await app.register(plugin)
    },
    (request) =>
      ((request as FastifyRequest & { auth?: { subject?: string } }).auth ?? undefined)?.subject,
  )
})
