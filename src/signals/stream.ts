/**
 * Stream management (SSF 1.0 §8) from the receiver's side: create, read and update the stream
 * at the transmitter's `configuration_endpoint`, read its status at `status_endpoint`, and ask
 * for a verification event at `verification_endpoint`, then check that it arrives (through the
 * receiver, by push or poll, carrying the `state` sent). What a status read says and whether a
 * verification arrived are kept by the receiver, which `gate.ready()` reports.
 *
 * @module
 */
import { randomUUID } from 'node:crypto'

import { type SignalReceiver, streamStateOf } from './receiver.js'
import { reasonOf, statusOf } from './stream-state.js'
import { EVENTS_ACTED_ON } from './vocabulary.js'

/** SSF 1.0 §8.1.1: how the transmitter delivers. */
export type StreamDelivery =
  | {
      readonly method: 'urn:ietf:rfc:8935'
      readonly endpoint_url: string
      /** The Authorization header the transmitter sends with each push (the receiver's `authorization`). */
      readonly authorization_header?: string
    }
  | { readonly method: 'urn:ietf:rfc:8936'; readonly endpoint_url?: string }

/** A stream's configuration as the transmitter answers it (SSF 1.0 §8.1.1). */
export interface StreamConfiguration {
  readonly stream_id: string
  readonly iss?: string
  readonly aud?: string | readonly string[]
  readonly delivery: StreamDelivery
  readonly events_supported?: readonly string[]
  readonly events_requested?: readonly string[]
  readonly events_delivered?: readonly string[]
  readonly [member: string]: unknown
}

/** Options of {@link createSignalStreams}. */
export interface SignalStreamsOptions {
  /** The receiver whose transmitter manages the stream (its configuration document names the endpoints). */
  readonly receiver: SignalReceiver
  /** The Authorization header value the transmitter's management endpoints require (SSF 1.0 §8.1). */
  readonly authorization: string
  readonly fetch?: typeof globalThis.fetch
  /** Deadline of each call, in ms. Default 5000. */
  readonly timeoutMs?: number
}

/** The stream management calls. Every call rejects with a `StreamManagementError` on a failure. */
export interface SignalStreams {
  /** Creates a stream; `events_requested` defaults to every event the receiver acts on. */
  create(request: {
    readonly delivery: StreamDelivery
    readonly events_requested?: readonly string[]
    readonly description?: string
  }): Promise<StreamConfiguration>
  /** Reads a stream (or the only one). */
  get(streamId?: string): Promise<StreamConfiguration>
  /** Replaces what `changes` names (PATCH, SSF 1.0 §8.1.1.3). */
  update(
    streamId: string,
    changes: Partial<Omit<StreamConfiguration, 'stream_id'>>,
  ): Promise<StreamConfiguration>
  /**
   * The stream's status (SSF 1.0 §8.1.2): `enabled`, `paused` or `disabled`. The receiver keeps
   * it (`gate.ready()` reports it, and is not ready while the stream is `disabled`).
   */
  status(streamId: string): Promise<{ readonly status: string; readonly reason?: string }>
  /**
   * Asks for a verification event (SSF 1.0 §8.1.4) and resolves once the receiver received it
   * with the `state` sent (at this instance or, with the Redis store, at another), or rejects
   * after `waitMs` (default 10000): `gate.ready()` is then not ready until a verification arrives.
   */
  verify(streamId: string, options?: { readonly waitMs?: number }): Promise<void>
}

/** A management call failed: `status` when the transmitter answered one. */
export class StreamManagementError extends Error {
  readonly status: number | undefined
  constructor(message: string, status?: number, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'StreamManagementError'
    this.status = status
  }
}

/** Creates the stream management client of a receiver. */
export function createSignalStreams(options: SignalStreamsOptions): SignalStreams {
  const { receiver, authorization } = options
  if (typeof receiver?.configuration !== 'function') {
    throw new TypeError('createSignalStreams(options): "receiver" must be createSignalReceiver(…)')
  }
  if (typeof authorization !== 'string' || authorization === '') {
    throw new TypeError(
      'createSignalStreams(options): "authorization" must be the Authorization header value the transmitter requires',
    )
  }
  const fetchFn =
    options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args))
  const timeoutMs = options.timeoutMs ?? 5000
  const streamState = streamStateOf(receiver)

  async function endpoint(
    name: 'configuration_endpoint' | 'status_endpoint' | 'verification_endpoint',
  ) {
    const config = await receiver.configuration().catch((error: unknown) => {
      throw new StreamManagementError('transmitter configuration unavailable', undefined, error)
    })
    const url = config[name]
    if (typeof url !== 'string') throw new StreamManagementError(`the transmitter has no ${name}`)
    return url
  }

  async function call(method: string, url: string, body?: unknown): Promise<unknown> {
    let response: Response
    try {
      response = await fetchFn(url, {
        method,
        redirect: 'error',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          authorization,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (error) {
      throw new StreamManagementError('stream management call failed', undefined, error)
    }
    if (response.status === 204) return undefined
    if (response.status < 200 || response.status >= 300) {
      await response.body?.cancel()
      throw new StreamManagementError(
        `the transmitter answered ${response.status}`,
        response.status,
      )
    }
    try {
      return await response.json()
    } catch (error) {
      throw new StreamManagementError(
        'the transmitter answered invalid JSON',
        response.status,
        error,
      )
    }
  }

  const withId = (url: string, streamId: string | undefined) =>
    streamId === undefined
      ? url
      : `${url}${url.includes('?') ? '&' : '?'}stream_id=${encodeURIComponent(streamId)}`

  return {
    async create(request) {
      return (await call('POST', await endpoint('configuration_endpoint'), {
        delivery: request.delivery,
        events_requested: request.events_requested ?? EVENTS_ACTED_ON,
        ...(request.description === undefined ? {} : { description: request.description }),
      })) as StreamConfiguration
    },
    async get(streamId) {
      const answer = await call('GET', withId(await endpoint('configuration_endpoint'), streamId))
      // §8.1.1.2: without stream_id, the transmitter may answer the list of streams.
      return (Array.isArray(answer) ? answer[0] : answer) as StreamConfiguration
    },
    async update(streamId, changes) {
      return (await call('PATCH', await endpoint('configuration_endpoint'), {
        ...changes,
        stream_id: streamId,
      })) as StreamConfiguration
    },
    async status(streamId) {
      const answer = (await call('GET', withId(await endpoint('status_endpoint'), streamId))) as {
        status: string
        reason?: string
      }
      const status = statusOf(answer?.status)
      if (status !== undefined) {
        await streamState
          // In whole seconds, as events' times are: an event of the same second, arriving
          // after the read, is the later news.
          ?.statusIs(status, reasonOf(answer.reason), Math.floor(Date.now() / 1000) * 1000, 'read')
          .catch((error: unknown) => {
            throw new StreamManagementError('the status could not be recorded', undefined, error)
          })
      }
      return answer
    },
    async verify(streamId, verifyOptions = {}) {
      const state = randomUUID()
      const waitMs = verifyOptions.waitMs ?? 10_000
      // Recorded before asking: the event may arrive before the transmitter answers.
      await streamState?.requestedNow(state, waitMs, Date.now()).catch((error: unknown) => {
        throw new StreamManagementError('the request could not be recorded', undefined, error)
      })
      await call('POST', await endpoint('verification_endpoint'), { stream_id: streamId, state })
      const deadline = Date.now() + waitMs
      // This instance's view every 20 ms; the store's (another instance may have received it)
      // every 100 ms.
      for (let round = 1; ; round += 1) {
        if (streamState === undefined && receiver.stream().verificationState === state) return
        if (await streamState?.arrived(state, round % 5 === 0)) return
        if (Date.now() > deadline) {
          streamState?.missing()
          throw new StreamManagementError('the verification event did not arrive')
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
  }
}
