/**
 * Connects ioredis to the bench Redis (127.0.0.1:6379, database 15 so a bench never touches the
 * keys of a test run sharing the server), or says why it cannot.
 */
import { Redis } from 'ioredis'
import { settings } from './config.ts'

export async function connectRedis(): Promise<{ client: Redis } | { error: string }> {
  const client = new Redis(settings.redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    retryStrategy: () => null,
  })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.ping()
    return { client }
  } catch (error) {
    client.disconnect()
    return { error: `no Redis at ${settings.redisUrl}: ${(error as Error).message}` }
  }
}
