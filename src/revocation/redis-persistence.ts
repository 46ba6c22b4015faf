/**
 * Whether the Redis holding the revocation list keeps anything across a restart. Without AOF or
 * RDB save points a restart of Redis and of every instance forgets every revocation, and
 * tokens revoked before it pass again: said once, at start, before the list counts as held.
 *
 * @module
 */
import type { Emit } from '../events.js'
import { warnOnce } from '../warnings.js'
import type { RedisLink } from './redis-link.js'
import { INFO_PERSISTENCE } from './redis-scripts.js'

/** INFO runs in a script so that on a Cluster it reaches the node that holds the list. */
export async function checkPersistence(
  link: RedisLink,
  context: {
    readonly keyPrefix: string
    readonly emit: Emit
    readonly loader: boolean
    readonly closed: () => boolean
  },
): Promise<void> {
  let persistence: 'none' | 'unknown'
  try {
    const info = await link.run<string>(INFO_PERSISTENCE, [link.keys.entries], [])
    if (/^aof_enabled:1\s*$/m.test(String(info))) return
  } catch {
    return
  }
  try {
    const { client } = link
    if (client.call === undefined) throw new Error('no generic command')
    const call = client.call.bind(client)
    const reply = await link.withDeadline(() => call('CONFIG', 'GET', 'save'))
    const points = Array.isArray(reply) ? reply[1] : undefined
    if (typeof points !== 'string') throw new Error('unexpected CONFIG GET reply')
    if (points.trim() !== '') return
    persistence = 'none'
  } catch {
    // Managed Redis (ElastiCache, Memorystore…) refuses CONFIG: persistence cannot be told.
    persistence = 'unknown'
  }
  if (context.closed()) return
  const { emit, loader, keyPrefix } = context
  emit?.({ type: 'revocation_store_volatile', persistence, loader })
  // With a loader the application's records cover a restart: nothing to warn about.
  if (emit !== undefined || loader) return
  warnOnce({
    code: 'TOLLGATE_REVOCATION_STORE_VOLATILE',
    subject: keyPrefix,
    message:
      persistence === 'none'
        ? `tollgate: the Redis holding the revocation list (${keyPrefix}) persists nothing (no AOF, no RDB save points): if it restarts with every gateway instance, revoked tokens are admitted again. Enable persistence, or give revocation.load to reload revocations from your records.`
        : `tollgate: could not tell whether the Redis holding the revocation list (${keyPrefix}) persists anything (no AOF, CONFIG GET save refused): if it persists nothing and restarts with every gateway instance, revoked tokens are admitted again. Check its persistence, or give revocation.load to reload revocations from your records.`,
  })
}
