/**
 * The limiter's Redis store. One Lua script per request consumes every window of the tenant's
 * plan in one round trip, and counts nothing when Redis runs it after the request's deadline; a
 * deadline that fires only when Redis has not answered, not when this process was too busy to
 * read the answer; and a count of the limiter instances sharing the store, for the fallback.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import type { LimiterClock } from './clock.js'
import type { RedisClientLike } from './options.js'
import { LimiterStoreError, type StoreCount, type StoreWindow } from './store.js'

/** The Redis side of a tenant limiter. */
export interface RedisStore {
  /**
   * Adds `points` to each window's key, shortest window first, up to and including the first one
   * that goes over its points (a request it refuses costs nothing in the longer ones). Rejects
   * with a {@link LimiterStoreError}, or with the error reply Redis sent (OOM, for example).
   */
  consume(
    keys: readonly string[],
    windows: readonly StoreWindow[],
    points: number,
  ): Promise<StoreCount[]>
  /** Limiter instances (this one included) that used the store lately; 1 until known. */
  instances(): number
}

// KEYS: the windows' keys, shortest first. ARGV: points, deadline (Redis clock, ms, exclusive), then seconds
// and points of each window. Answers {1, now, consumed, pttl, ...} or {0, now} when late.
// TIME in a script that writes needs effect replication: the default from Redis 5, asked for on
// older servers.
const CONSUME_SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if now >= tonumber(ARGV[2]) then return {0, now} end
local reply = {1, now}
for i, key in ipairs(KEYS) do
  local seconds = ARGV[1 + 2 * i]
  redis.call('SET', key, 0, 'EX', seconds, 'NX')
  local consumed = redis.call('INCRBY', key, ARGV[1])
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    redis.call('EXPIRE', key, seconds)
    ttl = 1000 * seconds
  end
  reply[#reply + 1] = consumed
  reply[#reply + 1] = ttl
  if consumed > tonumber(ARGV[2 + 2 * i]) then break end
end
return reply`

// KEYS[1]: the sorted set of instances. ARGV: this instance's id, how long an entry counts (ms).
const INSTANCES_SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])`

const CONSUME_COMMAND = 'tollgateConsume'
const INSTANCES_COMMAND = 'tollgateInstances'
/** How often an instance says it is alive, and how long it counts after it last did. */
const INSTANCE_HEARTBEAT_MS = 1000
const INSTANCE_TTL_MS = 10_000

type Command = (...args: (string | number)[]) => Promise<unknown>

/**
 * Failers of the commands in flight on each client. One `close` listener per client, however
 * many limiters share it; the sets only ever hold commands still waiting for an answer.
 */
const inFlightByClient = new WeakMap<RedisClientLike, Set<() => void>>()

function inFlightOn(client: RedisClientLike): Set<() => void> {
  let inFlight = inFlightByClient.get(client)
  if (inFlight === undefined) {
    const failers = new Set<() => void>()
    inFlight = failers
    inFlightByClient.set(client, failers)
    // A command in flight on a closed socket gets no answer on it: fail it now rather than at
    // the deadline. ioredis may resend it after reconnecting; the script then counts it only if
    // its deadline has not passed.
    client.on('close', () => {
      for (const fail of [...failers]) fail()
    })
  }
  return inFlight
}

/**
 * Returns the store over `client`, with keys under `keyPrefix` and a deadline of `timeoutMs` on
 * `clock`.
 */
export function createRedisStore(
  client: RedisClientLike,
  options: { readonly keyPrefix: string; readonly timeoutMs: number; readonly clock: LimiterClock },
): RedisStore {
  const { timeoutMs, clock } = options
  client.defineCommand(CONSUME_COMMAND, { lua: CONSUME_SCRIPT })
  client.defineCommand(INSTANCES_COMMAND, { lua: INSTANCES_SCRIPT, numberOfKeys: 1 })
  const commands = client as unknown as Record<string, Command>
  const inFlight = inFlightOn(client)
  const instanceId = randomUUID()
  const instancesKey = `${options.keyPrefix}:instances`
  let instances = 1
  let heartbeatAt = Number.NEGATIVE_INFINITY
  /**
   * Redis's clock minus ours, from below. An answer bounds it between (Redis's TIME when the
   * script ran) − (our clock when we read the answer) and the same − (our clock when we sent
   * it); the largest lower bound is the tightest. The deadline sent to Redis is ours plus this,
   * so Redis never counts a command it runs after this process gave up on it, whatever the skew
   * (one it runs just before, whose answer is still on its way when the deadline fires, counts
   * and falls back: charged twice, never admitted twice). An estimate from above would leave a
   * window of one latency after our deadline in which a stalled command still counts. A sample
   * whose upper bound is below the estimate means Redis's clock stepped back: start from it.
   * Unknown: 0 (synced clocks).
   */
  let clockOffsetMs: number | undefined

  function learnClockOffset(redisNow: number, sentAt: number, receivedAt: number): void {
    // Both clocks are read in whole milliseconds: a floored sample can overstate the lower
    // bound by up to 1 ms, and a command Redis runs in the millisecond our timer fires must
    // count as late (the script compares with >=).
    const low = redisNow - receivedAt - 1
    const high = redisNow - sentAt
    if (clockOffsetMs === undefined || high < clockOffsetMs || low > clockOffsetMs) {
      clockOffsetMs = low
    }
  }

  function heartbeat(now: number): void {
    if (now - heartbeatAt < INSTANCE_HEARTBEAT_MS) return
    heartbeatAt = now
    ;(commands[INSTANCES_COMMAND] as Command)(instancesKey, instanceId, INSTANCE_TTL_MS).then(
      (count) => {
        instances = Math.max(1, Number(count))
      },
      () => {},
    )
  }

  function consume(
    keys: readonly string[],
    windows: readonly StoreWindow[],
    points: number,
  ): Promise<StoreCount[]> {
    // Never hand a command to the client's offline queue (whatever `enableOfflineQueue` says):
    // it would be sent after the request was decided without it.
    if (client.status !== 'ready') {
      return Promise.reject(
        new LimiterStoreError('ERR_STORE_NOT_READY', 'rate-limit store is not connected'),
      )
    }
    const limits: number[] = []
    for (const window of windows) limits.push(window.durationSeconds, window.points)
    const startedAt = clock.now()
    heartbeat(startedAt)

    return new Promise<StoreCount[]>((resolve, reject) => {
      let settled = false
      function finish(error: LimiterStoreError | Error | undefined, counts?: StoreCount[]) {
        if (settled) return
        settled = true
        cancelTimer()
        inFlight.delete(closed)
        if (error === undefined) resolve(counts as StoreCount[])
        else reject(error)
      }
      function closed() {
        finish(new LimiterStoreError('ERR_STORE_CLOSED', 'rate-limit store connection closed'))
      }
      // The deadline stays the request's own when a corrected command is sent again.
      function send(sentAt: number, corrected: boolean) {
        const deadline = startedAt + timeoutMs + (clockOffsetMs ?? 0)
        ;(commands[CONSUME_COMMAND] as Command)(
          keys.length,
          ...keys,
          points,
          deadline,
          ...limits,
        ).then(
          (reply) => {
            const answer = reply as number[]
            const receivedAt = clock.now()
            learnClockOffset(Number(answer[1]), sentAt, receivedAt)
            if (settled) return
            if (answer[0] === 1) return finish(undefined, countsOf(answer, windows))
            if (!corrected && receivedAt < startedAt + timeoutMs) {
              // Redis says late, yet its answer came before our deadline: our estimate of its
              // clock was too low (a clock step forward, now learnt). Ask once more.
              return send(receivedAt, true)
            }
            finish(new LimiterStoreError('ERR_STORE_LATE', 'rate-limit store ran the command late'))
          },
          (error: Error) => finish(error),
        )
      }

      inFlight.add(closed)
      // Timers run before the poll phase that reads sockets: after the event loop was busy, the
      // answer may be waiting unread. Yield once (setImmediate runs after that poll phase) and
      // fail only if it is still missing: a busy gateway is not a slow store.
      const cancelTimer = clock.setTimer(() => {
        setImmediate(() =>
          finish(
            new LimiterStoreError(
              'ERR_STORE_TIMEOUT',
              `rate-limit store did not answer within ${timeoutMs} ms`,
            ),
          ),
        )
      }, timeoutMs)
      send(startedAt, false)
    })
  }

  return { consume, instances: () => instances }
}

/**
 * The script's counts. A key given a longer TTL by someone else (the script never does) resets at
 * the window's end as far as the limiter is concerned: a reset is never further than a window.
 */
function countsOf(reply: readonly number[], windows: readonly StoreWindow[]): StoreCount[] {
  const counts: StoreCount[] = []
  for (let index = 2; index + 1 < reply.length; index += 2) {
    const window = windows[(index - 2) / 2] as StoreWindow
    counts.push({
      consumed: Number(reply[index]),
      msBeforeReset: Math.min(Number(reply[index + 1]), window.durationSeconds * 1000),
    })
  }
  return counts
}
