/**
 * Poll-based SET delivery (RFC 8936): one poller per fleet asks the transmitter's poll endpoint
 * for SETs, gives each to the receiver, and acknowledges in its next request what was applied
 * (`ack`) and reports what was refused (`setErrs`, §2.4.3). A SET that could not be judged or
 * applied (keys or store unavailable) is neither: the transmitter delivers it again. With Redis,
 * a lock makes one instance of the fleet poll (a fleet of 50 does not poll 50 times); every
 * instance applies through the shared revocation.
 *
 * Pace: a long poll (§2.4, `returnImmediately: false`) is followed at once by the next, empty or
 * not (§2.1: the recipient asks again, its acknowledgements in that request), so a SET the
 * transmitter holds goes out the moment it is queued; a long poll that came back empty sooner
 * than `minBackoffMs` after it left (a transmitter that does not hold requests) waits out the
 * rest, so such a transmitter is asked once per `minBackoffMs`, never in a loop. Short polls wait
 * `intervalMs` after an empty answer. Errors back off exponentially.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import { createEmit } from '../events.js'
import { httpsUrlProblem } from '../token/issuers.js'
import {
  boolean,
  fail,
  integer,
  optionalFunction,
  record,
  redisKeyPrefix,
  validateFor,
} from '../validate.js'
import type { SignalEvent } from './events.js'
import type { SignalRedisClient } from './options.js'
import type { SignalReceiver } from './receiver.js'
import type { SetErrorCode } from './vocabulary.js'

/** Options of {@link createSignalPoller}. */
export interface SignalPollerOptions {
  /** The receiver that verifies and applies each SET. */
  readonly receiver: SignalReceiver
  /** The transmitter's poll endpoint (the stream's `delivery.endpoint_url`, SSF 1.0 §8.1.1). */
  readonly endpoint: string
  /** The `Authorization` header value the poll endpoint requires (the receiver's credential). */
  readonly authorization?: string
  /** With Redis, one instance of the fleet polls at a time (a lock). Default: this process polls. */
  readonly store?: 'memory' | { readonly redis: SignalRedisClient }
  /** Prefix of the lock's Redis key. Default `tollgate:ssf`. */
  readonly keyPrefix?: string
  /** SETs asked for per request (`maxEvents`). Default 100; from 1 to 1000. */
  readonly maxEvents?: number
  /**
   * `false` (default): long polling, the transmitter holds the request until SETs are available
   * (§2.4: `returnImmediately: false`), and the poller asks again as soon as an answer came,
   * with SETs or without; `true`: it answers at once and the poller waits `intervalMs` before
   * asking again when nothing came.
   */
  readonly returnImmediately?: boolean
  /** Wait between polls that returned nothing (`returnImmediately: true`). Default 5000 ms. */
  readonly intervalMs?: number
  /** Deadline of one poll request (a long poll included). Default 35000 ms. */
  readonly timeoutMs?: number
  /**
   * First wait after an error; doubled after each until `maxBackoffMs`. Also the least time
   * between the starts of two long polls when the first came back empty: a transmitter that
   * holds a long poll at least this long is asked again at once, one that answers with nothing
   * sooner is asked no more than once per `minBackoffMs`. Default 1000 ms.
   */
  readonly minBackoffMs?: number
  /** Longest wait after errors. Default 60000 ms. */
  readonly maxBackoffMs?: number
  /** Largest poll answer read, in bytes. Default 4 MiB. */
  readonly maxBodyBytes?: number
  /** Plain http to the endpoint beyond loopback. Default `false`. */
  readonly allowInsecureHttp?: boolean
  readonly fetch?: typeof globalThis.fetch
  readonly onEvent?: (event: SignalEvent) => void
}

/** A running poller. */
export interface SignalPoller {
  /** Starts polling in the background (idempotent). */
  start(): void
  /**
   * One round: takes the lock (with Redis), sends the pending `ack`/`setErrs`, applies what
   * comes. Resolves to the number of SETs received, or `undefined` when another instance holds
   * the lock. Rejects when the request failed (`start()` backs off instead).
   */
  pollOnce(): Promise<number | undefined>
  /** Acknowledgements and errors not sent yet (sent with the next request). */
  readonly pending: {
    readonly ack: readonly string[]
    readonly setErrs: Readonly<Record<string, unknown>>
  }
  /** Stops polling, aborts the request under way, releases the lock. Idempotent. */
  stop(): Promise<void>
}

/** A poll that failed: its reason for `signal_poll_error`. */
class PollFailure extends Error {
  readonly reason: 'network' | 'timeout' | 'status' | 'invalid_response' | 'store_unavailable'
  readonly status: number | undefined

  constructor(reason: PollFailure['reason'], status?: number, cause?: unknown) {
    super(`poll failed: ${reason}`, cause === undefined ? undefined : { cause })
    this.reason = reason
    this.status = status
  }
}

const ACQUIRE = `local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if held then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1`
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
/** A jti as RFC 8936 keys them; anything else in a poll answer is not a SET of this stream. */
const MAX_JTI_LENGTH = 1024

async function readCapped(response: Response, max: number): Promise<string | undefined> {
  const reader = response.body?.getReader()
  if (reader === undefined) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > max) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function normalize(options: SignalPollerOptions) {
  return validateFor('createSignalPoller(options):', () => {
    const given = record(options, 'options', [
      'receiver',
      'endpoint',
      'authorization',
      'store',
      'keyPrefix',
      'maxEvents',
      'returnImmediately',
      'intervalMs',
      'timeoutMs',
      'minBackoffMs',
      'maxBackoffMs',
      'maxBodyBytes',
      'allowInsecureHttp',
      'fetch',
      'onEvent',
    ])
    const receiver = given['receiver'] as SignalReceiver | undefined
    if (typeof receiver?.receive !== 'function') {
      fail('receiver', 'must be createSignalReceiver(…)', receiver)
    }
    const allowInsecureHttp = boolean(given['allowInsecureHttp'], 'allowInsecureHttp', false)
    const endpoint = given['endpoint']
    const problem =
      typeof endpoint === 'string'
        ? httpsUrlProblem(
            endpoint,
            allowInsecureHttp,
            'must be https (or set allowInsecureHttp: true on a trusted network)',
          )
        : 'must be an absolute https URL'
    if (problem !== undefined) fail('endpoint', problem, endpoint, { show: 'url' })
    const authorization = given['authorization']
    if (
      authorization !== undefined &&
      (typeof authorization !== 'string' || authorization === '')
    ) {
      fail('authorization', 'must be the Authorization header value (a string)')
    }
    const store = given['store']
    let redis: SignalRedisClient | undefined
    if (store !== undefined && store !== 'memory') {
      const client = (store as { redis?: { eval?: unknown } }).redis
      if (typeof client?.eval !== 'function')
        fail('store', "must be 'memory' or { redis: client }", store)
      redis = client as SignalRedisClient
    }
    const minBackoffMs = integer(given['minBackoffMs'], 'minBackoffMs', {
      min: 10,
      max: 600_000,
      fallback: 1000,
    })
    return {
      receiver: receiver as SignalReceiver,
      endpoint: endpoint as string,
      authorization: authorization as string | undefined,
      redis,
      keyPrefix: redisKeyPrefix(given['keyPrefix'], 'keyPrefix', 'tollgate:ssf'),
      maxEvents: integer(given['maxEvents'], 'maxEvents', { min: 1, max: 1000, fallback: 100 }),
      returnImmediately: boolean(given['returnImmediately'], 'returnImmediately', false),
      intervalMs: integer(given['intervalMs'], 'intervalMs', {
        min: 10,
        max: 3_600_000,
        fallback: 5000,
      }),
      timeoutMs: integer(given['timeoutMs'], 'timeoutMs', {
        min: 100,
        max: 600_000,
        fallback: 35_000,
      }),
      minBackoffMs,
      maxBackoffMs: integer(given['maxBackoffMs'], 'maxBackoffMs', {
        min: minBackoffMs,
        max: 3_600_000,
        fallback: Math.max(minBackoffMs, 60_000),
      }),
      maxBodyBytes: integer(given['maxBodyBytes'], 'maxBodyBytes', {
        min: 1024,
        max: 64 * 1024 * 1024,
        fallback: 4 * 1024 * 1024,
      }),
      fetch:
        optionalFunction<typeof globalThis.fetch>(given['fetch'], 'fetch', '(input, init)') ??
        ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args)),
      onEvent: optionalFunction<(event: SignalEvent) => void>(
        given['onEvent'],
        'onEvent',
        '(event)',
      ),
    }
  })
}

/**
 * Creates a poller (not started).
 *
 * @throws TypeError when an option is invalid; the message names it and what to change.
 */
export function createSignalPoller(options: SignalPollerOptions): SignalPoller {
  const settings = normalize(options)
  const emit = createEmit<SignalEvent>(settings.onEvent)
  const owner = randomUUID()
  const lockKey = `${settings.keyPrefix}:poll-lock`
  const lockTtlMs = settings.timeoutMs + 10_000
  let ack: string[] = []
  const setErrs: Record<string, { err: SetErrorCode; description: string }> = {}
  let running = false
  let stopped = false
  let loop: Promise<void> | undefined
  let inFlight: AbortController | undefined
  let wake: (() => void) | undefined

  async function locked(): Promise<boolean> {
    if (settings.redis === undefined) return true
    try {
      const answer = await settings.redis.eval(ACQUIRE, 1, lockKey, owner, lockTtlMs)
      return answer === 1
    } catch (error) {
      throw new PollFailure('store_unavailable', undefined, error)
    }
  }

  async function request(): Promise<Record<string, unknown>> {
    const sentAck = ack
    const sentErrs = setErrs
    const body = {
      maxEvents: settings.maxEvents,
      returnImmediately: settings.returnImmediately,
      ...(sentAck.length > 0 ? { ack: sentAck } : {}),
      ...(Object.keys(sentErrs).length > 0 ? { setErrs: sentErrs } : {}),
    }
    const controller = new AbortController()
    inFlight = controller
    const timer = setTimeout(() => controller.abort(new PollFailure('timeout')), settings.timeoutMs)
    let response: Response
    try {
      response = await settings.fetch(settings.endpoint, {
        method: 'POST',
        redirect: 'error',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(settings.authorization === undefined
            ? {}
            : { authorization: settings.authorization }),
        },
        body: JSON.stringify(body),
      })
    } catch (error) {
      clearTimeout(timer)
      throw controller.signal.aborted && !stopped
        ? new PollFailure('timeout', undefined, error)
        : new PollFailure('network', undefined, error)
    }
    try {
      if (response.status !== 200) {
        await response.body?.cancel()
        throw new PollFailure('status', response.status)
      }
      // §2.4: the acknowledgements were received once the transmitter answered 200.
      ack = ack.filter((jti) => !sentAck.includes(jti))
      for (const jti of Object.keys(sentErrs)) delete setErrs[jti]
      const text = await readCapped(response, settings.maxBodyBytes)
      if (text === undefined) throw new PollFailure('invalid_response')
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch (error) {
        throw new PollFailure('invalid_response', undefined, error)
      }
      if (typeof parsed !== 'object' || parsed === null) throw new PollFailure('invalid_response')
      return parsed as Record<string, unknown>
    } catch (error) {
      if (error instanceof PollFailure) throw error
      throw new PollFailure(controller.signal.aborted ? 'timeout' : 'network', undefined, error)
    } finally {
      clearTimeout(timer)
      inFlight = undefined
    }
  }

  /** Applies a poll answer's SETs, at most `maxEvents` of them (the rest come again). */
  async function apply(
    answer: Record<string, unknown>,
  ): Promise<{ count: number; more: boolean; stalled: boolean }> {
    const sets = answer['sets']
    if (typeof sets !== 'object' || sets === null || Array.isArray(sets))
      throw new PollFailure('invalid_response')
    const entries = Object.entries(sets as Record<string, unknown>).slice(0, settings.maxEvents)
    let stalled = false
    for (const [jti, token] of entries) {
      if (jti.length > MAX_JTI_LENGTH || typeof token !== 'string') {
        setErrs[jti.slice(0, MAX_JTI_LENGTH)] = {
          err: 'invalid_request',
          description: 'not a security event token',
        }
        continue
      }
      const outcome = await settings.receiver.receive(token, 'poll')
      if (outcome.kind === 'acknowledged') ack.push(jti)
      else if (outcome.kind === 'refused')
        setErrs[jti] = { err: outcome.err, description: outcome.description }
      else stalled = true
    }
    const more = answer['moreAvailable'] === true || Object.keys(sets).length > entries.length
    return { count: entries.length, more, stalled }
  }

  async function round(): Promise<{ count: number | undefined; more: boolean; stalled: boolean }> {
    if (!(await locked())) return { count: undefined, more: false, stalled: false }
    const answer = await request()
    return apply(answer)
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms)
      timer.unref?.()
      wake = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  /**
   * The wait before the next request after an answer with nothing, `elapsedMs` after the request
   * left. A long poll that was held is followed at once: the transmitter answers the next the
   * moment a SET is queued, and a pause would only keep that SET waiting. One that came back
   * sooner than `minBackoffMs` waits out the rest of it (a transmitter that does not hold).
   */
  function pauseAfterEmpty(elapsedMs: number): number {
    if (settings.returnImmediately) return settings.intervalMs
    return Math.max(0, settings.minBackoffMs - elapsedMs)
  }

  async function run(): Promise<void> {
    let backoff = settings.minBackoffMs
    while (!stopped) {
      const startedAt = performance.now()
      try {
        const { count, more, stalled } = await round()
        if (stopped) break
        if (stalled) throw new PollFailure('store_unavailable')
        backoff = settings.minBackoffMs
        if (count === undefined) await sleep(settings.intervalMs)
        // With SETs (acknowledged in the next request) or more to come: at once.
        else if (count === 0 && !more) {
          const pause = pauseAfterEmpty(performance.now() - startedAt)
          if (pause > 0) await sleep(pause)
        }
      } catch (error) {
        if (stopped) break
        const failure =
          error instanceof PollFailure ? error : new PollFailure('network', undefined, error)
        emit?.({
          type: 'signal_poll_error',
          reason: failure.reason,
          status: failure.status,
          retryInMs: backoff,
        })
        await sleep(backoff)
        backoff = Math.min(backoff * 2, settings.maxBackoffMs)
      }
    }
  }

  return {
    start() {
      if (running || stopped) return
      running = true
      loop = run()
    },
    async pollOnce() {
      const { count, stalled } = await round()
      if (stalled) throw new PollFailure('store_unavailable')
      return count
    },
    get pending() {
      return { ack: [...ack], setErrs: { ...setErrs } }
    },
    async stop() {
      if (stopped) return
      stopped = true
      inFlight?.abort()
      wake?.()
      await loop
      if (settings.redis !== undefined) {
        await settings.redis.eval(RELEASE, 1, lockKey, owner).catch(() => undefined)
      }
    },
  }
}
