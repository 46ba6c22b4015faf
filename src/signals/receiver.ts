/**
 * A Shared Signals receiver (OpenID SSF 1.0, CAEP 1.0, RISC 1.0) wired into a gate's fleet
 * revocation: SETs arrive by push (RFC 8935, {@link SignalReceiver.push}, mounted on any adapter)
 * or poll (RFC 8936, `poll.ts`), are verified (`set.ts`), applied once across the fleet
 * (`store.ts`), and turned into revocations (`apply.ts`).
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto'

import { createEmit } from '../events.js'
import { signalHandlesOf } from '../gate/signal-handles.js'
import { type CallbackRequest, readText } from '../revocation/callback-body.js'
import type { CallbackResponse } from '../revocation/callbacks.js'
import { applyEvent, NotApplied } from './apply.js'
import type { SignalDelivery, SignalEvent, SignalRefusalReason } from './events.js'
import { normalizeSignalOptions, type SignalReceiverOptions } from './options.js'
import { SetRefusal, type VerifiedSET, verifySET } from './set.js'
import {
  MemorySignalStore,
  RedisSignalStore,
  type SignalStore,
  StoreUnavailable,
  storeKey,
} from './store.js'
import { reasonOf, type SignalStreamState, StreamState, statusOf } from './stream-state.js'
import { MalformedSubject, targetsOf } from './subject.js'
import {
  ConfigurationUnavailable,
  Transmitter,
  type TransmitterConfiguration,
} from './transmitter.js'
import { EVENT_ACTIONS, type SetErrorCode, VERIFICATION_EVENT } from './vocabulary.js'

export type { CallbackRequest, CallbackResponse, SignalStreamState }

/** The outcome of one SET, as push answers it and poll acknowledges it. */
export type SetOutcome =
  /** Applied, or acknowledged without effect: 202 / `ack`. */
  | { readonly kind: 'acknowledged' }
  /** Refused: 400 / `setErrs`. */
  | { readonly kind: 'refused'; readonly err: SetErrorCode; readonly description: string }
  /** Not judged or not applied (keys or store unavailable): 503 / neither, so it comes again. */
  | { readonly kind: 'unavailable'; readonly retryAfterSeconds: number }

/** A Shared Signals receiver. */
export interface SignalReceiver {
  /**
   * Answers an RFC 8935 push: 202 once the SET is applied (or acknowledged without effect), 400
   * with `{ err, description }` (§2.3) when it is refused, 503 with `Retry-After` when the
   * transmitter's keys or the store cannot be had (nothing acknowledged that was not applied).
   * The adapters' `sharedSignals(receiver)` mounts it. Never rejects for a bad request.
   */
  push(request: CallbackRequest): Promise<CallbackResponse>
  /** Verifies and applies one SET (what push and poll do with each); never rejects for a bad SET. */
  receive(token: string, delivery: SignalDelivery): Promise<SetOutcome>
  /**
   * What this process last heard of its stream. `gate.ready()` reports it too, as the fleet heard
   * it when the store is Redis (`signals` in its report).
   */
  stream(): SignalStreamState
  /** The transmitter's configuration document (SSF 1.0 §7.2), fetched once. */
  configuration(): Promise<TransmitterConfiguration>
  /** Stops key fetches and takes the stream out of `gate.ready()`. Idempotent. */
  close(): void
}

/** Each receiver's view of its stream, for `createSignalStreams()` (status reads, verifications). */
const streamStates = new WeakMap<SignalReceiver, StreamState>()

/** The stream state of a receiver made by {@link createSignalReceiver}, else `undefined`. */
export function streamStateOf(receiver: SignalReceiver): StreamState | undefined {
  return streamStates.get(receiver)
}

const JSON_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
}
const ACCEPTED: CallbackResponse = Object.freeze({
  status: 202,
  headers: Object.freeze({ 'Cache-Control': 'no-store' }),
  body: '',
})
const SET_MEDIA_TYPE = 'application/secevent+jwt'

/** RFC 8935 §2.3's descriptions: fixed texts, never anything of the request. */
const DESCRIPTIONS: Record<SetErrorCode, string> = {
  invalid_request: 'the request is not a valid security event token',
  invalid_key: 'the security event token is not signed by a key of the transmitter',
  invalid_issuer: 'the security event token is from another issuer',
  invalid_audience: 'the security event token is for another audience',
  authentication_failed: 'the transmitter could not be authenticated',
  access_denied: 'the transmitter may not send to this receiver',
}

function rejected(err: SetErrorCode): CallbackResponse {
  return {
    status: 400,
    headers: JSON_HEADERS,
    body: JSON.stringify({ err, description: DESCRIPTIONS[err] }),
  }
}

function unavailable(retryAfterSeconds: number): CallbackResponse {
  return {
    status: 503,
    headers: { ...JSON_HEADERS, 'Retry-After': String(retryAfterSeconds) },
    body: '',
  }
}

/** Compares the Authorization header with each accepted value in constant time. */
function authorized(given: unknown, accepted: ReadonlySet<string>): boolean {
  if (typeof given !== 'string' || accepted.size === 0) return false
  const bytes = Buffer.from(given)
  let found = false
  for (const value of accepted) {
    const expected = Buffer.from(value)
    if (expected.length === bytes.length && timingSafeEqual(expected, bytes)) found = true
  }
  return found
}

function mediaType(value: unknown): string | undefined {
  return typeof value === 'string' ? value.split(';', 1)[0]?.trim().toLowerCase() : undefined
}

/**
 * Creates a Shared Signals receiver over a gate's revocation.
 *
 * @example
 * ```ts
 * const signals = createSignalReceiver({
 *   gate: auth.gate,
 *   transmitter: { issuer: 'https://sso.example.com/realms/acme' },
 *   audience: 'https://gateway.example.com',
 *   authorization: process.env.SSF_PUSH_AUTHORIZATION,
 * })
 * app.post('/ssf/events', auth.sharedSignals(signals))
 * ```
 * @throws TypeError when an option is invalid; the message names it and what to change.
 */
export function createSignalReceiver(options: SignalReceiverOptions): SignalReceiver {
  const normalized = normalizeSignalOptions(options)
  const emit = createEmit<SignalEvent>(normalized.onEvent)
  const transmitter = new Transmitter(normalized)
  const store: SignalStore =
    normalized.redis === undefined
      ? new MemorySignalStore()
      : new RedisSignalStore(normalized.redis, normalized.keyPrefix, normalized.timeoutMs)
  // The gate's side (revocations reported as the signal's, drops of cached verdicts, readiness):
  // absent only for a gate-like object that `createGate()` did not make.
  const handles = signalHandlesOf(normalized.gate)
  const streamState = new StreamState(
    normalized.issuer,
    normalized.redis === undefined ? undefined : store,
    emit,
  )
  const detach = handles?.attachStream(() => streamState.readiness(Date.now()))

  function refused(
    delivery: SignalDelivery,
    reason: SignalRefusalReason,
    err: SetErrorCode | undefined,
    set?: Pick<VerifiedSET, 'issuer' | 'jti' | 'event'>,
    issuer?: string,
  ): void {
    emit?.({
      type: 'signal_refused',
      delivery,
      reason,
      acknowledged:
        err === undefined && reason !== 'keys_unavailable' && reason !== 'store_unavailable',
      err,
      issuer: set?.issuer ?? issuer,
      jti: set?.jti,
      event: set?.event,
    })
  }

  /** A verification (SSF 1.0 §8.1.4) or stream-updated (§8.1.5) event. */
  async function onStream(set: VerifiedSET, nowMs: number): Promise<void> {
    if (set.event === VERIFICATION_EVENT) {
      const state = set.payload.state
      await streamState.verifiedNow(typeof state === 'string' ? state : undefined, nowMs)
      return
    }
    const status = statusOf(set.payload.status)
    // A status this receiver does not know changes nothing it reports.
    if (status === undefined) return
    await streamState.statusIs(status, reasonOf(set.payload.reason), set.eventTime * 1000, 'event')
  }

  /** Applies a verified SET once; the claim is released when it could not be applied. */
  async function apply(set: VerifiedSET, delivery: SignalDelivery): Promise<SetOutcome> {
    const nowMs = Date.now()
    const action = EVENT_ACTIONS.get(set.event)
    let targets: ReturnType<typeof targetsOf> = []
    if (action !== undefined && action !== 'stream') {
      try {
        targets = targetsOf(set.subject, normalized.subjects)
      } catch (error) {
        if (!(error instanceof MalformedSubject)) throw error
        refused(delivery, 'subject', 'invalid_request', set)
        return {
          kind: 'refused',
          err: 'invalid_request',
          description: DESCRIPTIONS.invalid_request,
        }
      }
    }
    const windowMs =
      (set.iat + normalized.maxAgeSeconds + 2 * normalized.clockToleranceSeconds) * 1000 - nowMs
    const claim = storeKey('jti', set.issuer, set.jti)
    // RFC 8417 §2.2: a jti names one SET of its issuer. Claimed before applying, so that two
    // instances given the same SET do not both apply it; released when it could not be applied.
    if (!(await store.claim(claim, Math.max(1000, windowMs)))) {
      refused(delivery, 'duplicate', undefined, set)
      return { kind: 'acknowledged' }
    }
    try {
      emit?.({
        type: 'signal_received',
        delivery,
        issuer: set.issuer,
        jti: set.jti,
        event: set.event,
      })
      await streamState.sawEvent(nowMs)
      if (action === 'stream') {
        await onStream(set, nowMs)
      } else if (action === undefined) {
        refused(delivery, 'unknown_event', undefined, set)
        return { kind: 'acknowledged' }
      } else if (targets.length === 0) {
        refused(delivery, 'unmapped_subject', undefined, set)
        return { kind: 'acknowledged' }
      }
      const changes =
        action === 'stream'
          ? []
          : await applyEvent(action, targets, set.eventTime, {
              gate: normalized.gate,
              handles,
              signal: { event: set.event, issuer: set.issuer, jti: set.jti },
              store,
              clockToleranceSeconds: normalized.clockToleranceSeconds,
              recordTtlMs: normalized.maxTokenLifetimeSeconds * 1000,
              nowMs,
            })
      emit?.({
        type: 'signal_applied',
        delivery,
        issuer: set.issuer,
        jti: set.jti,
        event: set.event,
        changes,
      })
      return { kind: 'acknowledged' }
    } catch (error) {
      if (error instanceof TypeError) {
        // gate.revoke() refused the target: an `iss_sub` naming an issuer the gate does not have.
        refused(delivery, 'unmapped_subject', undefined, set)
        return { kind: 'acknowledged' }
      }
      await store.release(claim).catch(() => undefined)
      throw error
    }
  }

  async function receive(token: string, delivery: SignalDelivery): Promise<SetOutcome> {
    let set: VerifiedSET
    try {
      const keys = await transmitter.keySet()
      set = await verifySET(
        token,
        {
          issuer: normalized.issuer,
          keys,
          audiences: normalized.audiences,
          maxAgeSeconds: normalized.maxAgeSeconds,
          clockToleranceSeconds: normalized.clockToleranceSeconds,
          maxTokenBytes: normalized.maxBodyBytes,
        },
        Date.now(),
      )
    } catch (error) {
      if (error instanceof ConfigurationUnavailable) {
        refused(delivery, 'keys_unavailable', undefined)
        return { kind: 'unavailable', retryAfterSeconds: 5 }
      }
      if (!(error instanceof SetRefusal)) throw error
      if (error.retryAfterSeconds !== undefined) {
        refused(delivery, 'keys_unavailable', undefined, undefined, error.issuer)
        return { kind: 'unavailable', retryAfterSeconds: error.retryAfterSeconds }
      }
      const err = error.err ?? 'invalid_request'
      refused(delivery, error.reason, err, undefined, error.issuer)
      return { kind: 'refused', err, description: DESCRIPTIONS[err] }
    }
    try {
      return await apply(set, delivery)
    } catch (error) {
      if (!(error instanceof StoreUnavailable) && !(error instanceof NotApplied)) throw error
      refused(delivery, 'store_unavailable', undefined, set)
      return { kind: 'unavailable', retryAfterSeconds: 1 }
    }
  }

  const receiver: SignalReceiver = {
    async push(request) {
      if (request.method !== undefined && request.method !== 'POST') {
        refused('push', 'request', 'invalid_request')
        return { status: 405, headers: { ...JSON_HEADERS, Allow: 'POST' }, body: '' }
      }
      // RFC 8935 §2: the transmitter authenticates with the header the receiver gave it; checked
      // before the body is read, so that nobody else can make the receiver fetch keys.
      if (!authorized(request.headers['authorization'], normalized.authorization)) {
        refused('push', 'authentication', 'authentication_failed')
        return rejected('authentication_failed')
      }
      if (mediaType(request.headers['content-type']) !== SET_MEDIA_TYPE) {
        refused('push', 'request', 'invalid_request')
        return rejected('invalid_request')
      }
      const text = await readText(request)
      if (text === undefined || text.length > normalized.maxBodyBytes) {
        refused('push', 'request', 'invalid_request')
        return rejected('invalid_request')
      }
      const outcome = await receive(text.trim(), 'push')
      if (outcome.kind === 'acknowledged') return ACCEPTED
      if (outcome.kind === 'refused') return rejected(outcome.err)
      return unavailable(outcome.retryAfterSeconds)
    },
    receive,
    stream: () => streamState.snapshot(),
    configuration: () => transmitter.config(),
    close() {
      detach?.()
      transmitter.close()
    },
  }
  streamStates.set(receiver, streamState)
  return receiver
}
