/**
 * What the receiver knows of its stream (SSF 1.0 §8): the status the transmitter gave
 * (`stream-updated`, §8.1.5) or a status read said (§8.1.2), the verifications asked for and
 * received (§8.1.4), and when the last SET arrived. This process keeps its own view; with the
 * Redis store each fact is also written there, newest wins, so that `gate.ready()` on every
 * instance reports the stream as the fleet heard it (a push reaches one instance, a verification
 * may arrive at another than the one that asked for it).
 *
 * @module
 */
import type { Emit } from '../events.js'
import type { SignalStreamReport } from '../gate/readiness.js'
import type { SignalEvent } from './events.js'
import { type SignalStore, storeKey } from './store.js'

/** A stream's status (SSF 1.0 §8.1.2). */
export type StreamStatus = 'enabled' | 'paused' | 'disabled'

/** How the stream stands, as this process last heard (SSF 1.0 §8.1.2, §8.1.4, §8.1.5). */
export interface SignalStreamState {
  readonly status: StreamStatus | undefined
  /** The transmitter's reason for the status, when it gave one. */
  readonly reason: string | undefined
  /** When the last verification event arrived (ms since the epoch). */
  readonly verifiedAt: number | undefined
  /** The `state` of the last verification event (SSF 1.0 §8.1.4), as the receiver asked it. */
  readonly verificationState: string | undefined
  /** When the last SET arrived, verified and not a duplicate (ms since the epoch). */
  readonly lastEventAt: number | undefined
}

interface StatusRecord {
  readonly at: number
  readonly status: StreamStatus
  readonly reason?: string
}

interface RequestRecord {
  readonly at: number
  readonly state: string
  /** How long `streams.verify()` waited for it. */
  readonly waitMs: number
}

interface VerifiedRecord {
  readonly at: number
  readonly state?: string
}

/** How long the stream's records live in Redis: refreshed by each change, gone a month after the last. */
const RECORD_TTL_MS = 30 * 86_400_000
/** How long the arrival of one verification's `state` is kept in Redis, for `streams.verify()`. */
const STATE_TTL_MS = 86_400_000
/** The time of the last SET is written to Redis at most this often per instance. */
const LAST_EVENT_WRITE_INTERVAL_MS = 1000
/** Verification states remembered by this process, for `streams.verify()` waiting on one. */
const MAX_ARRIVED_STATES = 16
/** Longest reason kept: a transmitter's text, shown to operators. */
const MAX_REASON_LENGTH = 256

const STATUSES = new Set<unknown>(['enabled', 'paused', 'disabled'])

/** A status as the transmitter sent it, or `undefined` for anything else. */
export function statusOf(value: unknown): StreamStatus | undefined {
  return STATUSES.has(value) ? (value as StreamStatus) : undefined
}

/** A reason as the transmitter sent it, bounded; `undefined` for anything but a string. */
export function reasonOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value.slice(0, MAX_REASON_LENGTH) : undefined
}

function parse<T extends { at: number }>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined
  try {
    const record = JSON.parse(text) as T | null
    return typeof record?.at === 'number' ? record : undefined
  } catch {
    return undefined
  }
}

const newer = <T extends { at: number }>(a: T | undefined, b: T | undefined): T | undefined =>
  a === undefined ? b : b === undefined || a.at >= b.at ? a : b

/** One receiver's view of its stream. */
export class StreamState {
  private status: StatusRecord | undefined
  private requested: RequestRecord | undefined
  private verified: VerifiedRecord | undefined
  /** The states of the last verifications this process received (a later one may come first). */
  private readonly arrivedStates: string[] = []
  private lastEvent: { at: number } | undefined
  private lastEventWrittenAt = Number.NEGATIVE_INFINITY
  private readonly keys: {
    readonly status: string
    readonly requested: string
    readonly verified: string
    readonly lastEvent: string
  }

  private readonly transmitter: string
  /** The fleet's store (Redis); `undefined` with the memory store: this process is the whole view. */
  private readonly shared: SignalStore | undefined
  private readonly emit: Emit<SignalEvent>

  constructor(transmitter: string, shared: SignalStore | undefined, emit: Emit<SignalEvent>) {
    this.transmitter = transmitter
    this.shared = shared
    this.emit = emit
    this.keys = {
      status: storeKey('stream-status', transmitter),
      requested: storeKey('stream-verify', transmitter),
      verified: storeKey('stream-verified', transmitter),
      lastEvent: storeKey('stream-event', transmitter),
    }
  }

  /** The key that records the arrival of the verification that carried `state`. */
  private stateKey(state: string): string {
    return storeKey('stream-verified-state', this.transmitter, state)
  }

  /** What this process heard. */
  snapshot(): SignalStreamState {
    return {
      status: this.status?.status,
      reason: this.status?.reason,
      verifiedAt: this.verified?.at,
      verificationState: this.verified?.state,
      lastEventAt: this.lastEvent?.at,
    }
  }

  private report(change: Extract<SignalEvent, { type: 'signal_stream' }>['change']): void {
    const { status, reason, verifiedAt, lastEventAt } = this.snapshot()
    this.emit?.({ type: 'signal_stream', change, status, reason, verifiedAt, lastEventAt })
  }

  /**
   * A SET arrived (verified, not a duplicate). Written to Redis at most once a second per
   * instance, and never fails the SET: only operators read it.
   */
  async sawEvent(nowMs: number): Promise<void> {
    this.lastEvent = { at: nowMs }
    if (this.shared === undefined || nowMs - this.lastEventWrittenAt < LAST_EVENT_WRITE_INTERVAL_MS)
      return
    this.lastEventWrittenAt = nowMs
    await this.shared.setNewer(this.keys.lastEvent, this.lastEvent, RECORD_TTL_MS).catch(() => {})
  }

  /**
   * The stream's status, from a `stream-updated` event (`at`: the event's time) or a status read
   * (`at`: now, in whole seconds as events' times are). An older status than the one held
   * (events reordered) changes nothing; of two as old, the later heard wins.
   *
   * @throws StoreUnavailable when Redis did not take it (a SET is then not acknowledged).
   */
  async statusIs(
    status: StreamStatus,
    reason: string | undefined,
    at: number,
    via: 'event' | 'read',
  ): Promise<void> {
    const record: StatusRecord = reason === undefined ? { at, status } : { at, status, reason }
    const before = this.status
    if (before === undefined || before.at <= at) this.status = record
    await this.shared?.setNewer(this.keys.status, record, RECORD_TTL_MS)
    const changed = before?.status !== this.status?.status || before?.reason !== this.status?.reason
    if (via === 'event' || changed) this.report('status')
  }

  /**
   * A verification event arrived (`state` as the transmitter echoed it; none when it sent one on
   * its own).
   *
   * @throws StoreUnavailable when Redis did not take it.
   */
  async verifiedNow(state: string | undefined, nowMs: number): Promise<void> {
    this.verified = state === undefined ? { at: nowMs } : { at: nowMs, state }
    if (state !== undefined) {
      this.arrivedStates.push(state)
      if (this.arrivedStates.length > MAX_ARRIVED_STATES) this.arrivedStates.shift()
    }
    if (this.shared !== undefined) {
      await this.shared.setNewer(this.keys.verified, this.verified, RECORD_TTL_MS)
      if (state !== undefined) await this.shared.set(this.stateKey(state), '1', STATE_TTL_MS)
    }
    this.report('verified')
  }

  /**
   * `streams.verify()` asks for a verification with `state`, and waits `waitMs` for it.
   *
   * @throws StoreUnavailable when Redis did not take it.
   */
  async requestedNow(state: string, waitMs: number, nowMs: number): Promise<void> {
    this.requested = { at: nowMs, state, waitMs }
    await this.shared?.setNewer(this.keys.requested, this.requested, RECORD_TTL_MS)
    this.report('verification_requested')
  }

  /**
   * Whether the verification that carries `state` arrived here or, when `fleet` (asking Redis),
   * at another instance.
   */
  async arrived(state: string, fleet: boolean): Promise<boolean> {
    if (this.arrivedStates.includes(state)) return true
    if (!fleet || this.shared === undefined) return false
    return (await this.shared.get(this.stateKey(state)).catch(() => undefined)) !== undefined
  }

  /** `streams.verify()` waited in vain. */
  missing(): void {
    this.report('verification_missing')
  }

  /** What `gate.ready()` reports: the fleet's view with Redis (this process's when it fails). */
  async readiness(nowMs: number): Promise<SignalStreamReport> {
    let status = this.status
    let requested = this.requested
    let verified = this.verified
    let lastEvent = this.lastEvent
    let store: SignalStreamReport['store'] = 'memory'
    if (this.shared !== undefined) {
      try {
        const { keys, shared } = this
        const [s, r, v, e] = await Promise.all([
          shared.get(keys.status),
          shared.get(keys.requested),
          shared.get(keys.verified),
          shared.get(keys.lastEvent),
        ])
        const held = parse<StatusRecord>(s)
        status = newer(statusOf(held?.status) === undefined ? undefined : held, status)
        requested = newer(parse<RequestRecord>(r), requested)
        verified = newer(parse<VerifiedRecord>(v), verified)
        lastEvent = newer(parse<{ at: number }>(e), lastEvent)
        store = 'redis'
      } catch {
        // Never rejects: `gate.ready()` does not.
        store = 'unavailable'
      }
    }
    // The last request is answered by its own state, or by any verification after it (the
    // stream delivers); by time alone across instances, whose clocks may differ a little.
    const answered =
      verified !== undefined &&
      (requested === undefined || verified.state === requested.state || verified.at >= requested.at)
    let verification: SignalStreamReport['verification']
    if (answered) verification = 'verified'
    else if (requested !== undefined) {
      verification = nowMs - requested.at > requested.waitMs ? 'missing' : 'pending'
    }
    return {
      transmitter: this.transmitter,
      // Disabled: the transmitter neither sends nor holds events (SSF 1.0 §8.1.2), so revocations
      // made at the provider never reach the gate. Paused: it holds them and sends them once
      // enabled again: late, not lost (see docs/signals.md, "The stream in gate.ready()").
      ready: status?.status !== 'disabled' && verification !== 'missing',
      status: status?.status,
      reason: status?.reason,
      statusAt: status?.at,
      verification,
      verificationRequestedAt: requested?.at,
      verifiedAt: verified?.at,
      lastEventAt: lastEvent?.at,
      store,
    }
  }
}
