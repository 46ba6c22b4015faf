/**
 * A window on what a gate's revocation list asks of Redis: wraps a real ioredis client (the gate
 * gets the wrapper as `revocation.store.redis`) to count the scripts it runs by kind, read the
 * changes its log reads returned, hold the pages of a full load until the test releases them, and
 * drop pub/sub messages on the subscriber (`duplicate()`), as a lost message would be. Also fills
 * a list quickly, in the stored format, for tests that need many entries.
 *
 * @module
 */
import type { Redis } from 'ioredis'

/** The scripts, told apart by a statement only each has (see src/revocation/redis-scripts.ts). */
const KINDS: readonly [string, string][] = [
  ['page', "redis.call('HSCAN', KEYS[1], ARGV[1]"],
  ['drop', "redis.call('HGET', KEYS[1], ARGV[i])"],
  ['sync', "'XRANGE'"],
  ['lookup', "'HMGET'"],
  ['tombstones', 'local found = {}'],
  ['sweep', "local state = redis.call('GET', KEYS[3])"],
  ['add', "'add'"],
  ['remove', "'del'"],
]

export type ScriptKind =
  | 'page'
  | 'sync'
  | 'lookup'
  | 'tombstones'
  | 'sweep'
  | 'add'
  | 'remove'
  | 'other'

export interface WatchedStore {
  /** Give this to the gate. */
  readonly client: Redis
  /** Scripts run so far, by kind. */
  readonly runs: Record<ScriptKind, number>
  /** Changes the log reads (`sync`) returned so far. */
  readonly changesRead: number
  /** From now on, pages past the first `after` wait until {@link WatchedStore.release}. */
  holdPages(after: number): void
  release(): void
  /** While `true`, messages on the subscriber are dropped (pub/sub is at most once). */
  dropMessages(drop: boolean): void
}

function kindOf(script: unknown): ScriptKind {
  const text = String(script)
  return (KINDS.find(([, marker]) => text.includes(marker))?.[0] ?? 'other') as ScriptKind
}

export function watchStore(real: Redis): WatchedStore {
  const runs = Object.fromEntries(
    [...KINDS.map(([kind]) => kind), 'other'].map((kind) => [kind, 0]),
  ) as Record<ScriptKind, number>
  let changesRead = 0
  let holdAfter: number | undefined
  let pagesServed = 0
  let released: (() => void) | undefined
  let gate = Promise.resolve()
  let dropping = false

  const client = new Proxy(real, {
    get(target, property, receiver) {
      if (property === 'eval') {
        return async (script: string, ...args: unknown[]) => {
          const kind = kindOf(script)
          runs[kind] += 1
          if (kind === 'page') {
            pagesServed += 1
            if (holdAfter !== undefined && pagesServed > holdAfter) await gate
          }
          const reply = await (target.eval as (...all: unknown[]) => Promise<unknown>)(
            script,
            ...args,
          )
          if (kind === 'sync') changesRead += ((reply as unknown[])[2] as unknown[]).length
          return reply
        }
      }
      if (property === 'duplicate') {
        return () => {
          const subscriber = target.duplicate()
          const on = subscriber.on.bind(subscriber)
          subscriber.on = ((event: string, listener: (...args: unknown[]) => void) =>
            on(
              event,
              event === 'message'
                ? (...args: unknown[]) => {
                    if (!dropping) listener(...args)
                  }
                : listener,
            )) as typeof subscriber.on
          return subscriber
        }
      }
      const value = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })

  return {
    client,
    runs,
    get changesRead() {
      return changesRead
    },
    holdPages(after) {
      holdAfter = after
      gate = new Promise((resolve) => {
        released = resolve
      })
    },
    release() {
      holdAfter = undefined
      released?.()
    },
    dropMessages(drop) {
      dropping = drop
    },
  }
}

/**
 * Writes `count` entries to the list under `keyPrefix`, as `gate.revoke()` stores them, 1,000 per
 * command: `jti` entries `${jtiPrefix}${i}` of `issuer`, valid for an hour. Returns their values.
 */
export async function fillList(
  admin: Redis,
  keyPrefix: string,
  issuer: string,
  count: number,
  jtiPrefix = 'bulk-',
): Promise<string[]> {
  const values: string[] = []
  const notBefore = Math.floor(Date.now() / 1000)
  const expiresAt = Date.now() + 3_600_000
  for (let start = 0; start < count; start += 1000) {
    const fields: string[] = []
    for (let i = start; i < Math.min(count, start + 1000); i++) {
      values.push(`${jtiPrefix}${i}`)
      fields.push(JSON.stringify([issuer, 'jti', `${jtiPrefix}${i}`]), `${notBefore}:${expiresAt}`)
    }
    await admin.hset(`{${keyPrefix}}:entries`, ...fields)
  }
  return values
}
