/**
 * Builds tollgate's options inside a server process from `BENCH_SERVER`: the Keycloak issuer, the
 * verified-token cache size, and the per-tenant limiter (memory, or Redis through ioredis).
 */
import { connectRedis } from '../../redis.ts'
import { type GateOptions, gateOptions, loadCore } from '../../tollgate.ts'
import type { ServerConfig } from '../protocol.ts'

export async function tollgateOptions(server: ServerConfig): Promise<GateOptions> {
  const core = await loadCore()
  let redis: unknown
  if (server.limiter === 'redis') {
    const connected = await connectRedis()
    if ('error' in connected) throw new Error(connected.error)
    redis = connected.client
  }
  return gateOptions(core, {
    authUrl: server.authUrl,
    cacheEntries: server.cacheEntries,
    limiter: server.limiter,
    redis,
  })
}
