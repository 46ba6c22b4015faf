/**
 * A gate's readiness: `gate.ready()` (keys warmed, revocation list held, the Shared Signals
 * streams of the receivers built over the gate) and `gate.refresh()` (keys fetched now), both
 * reported as a {@link ReadyReport}.
 *
 * @module
 */
import type { IntrospectionStatus } from '../introspection/introspector.js'
import type { Revocation } from '../revocation/revocation.js'
import type { IssuerKeys, IssuerKeysStatus } from '../token/jwks.js'

/**
 * A Shared Signals stream as `gate.ready()` reports it (SSF 1.0 §8.1.2, §8.1.4, §8.1.5): what the
 * receiver built over the gate (`createSignalReceiver({ gate })`) last heard, across the fleet when
 * its store is Redis. Times are milliseconds since the epoch.
 */
export interface SignalStreamReport {
  /** The transmitter (its issuer). */
  readonly transmitter: string
  /**
   * `false` when the stream is `disabled` (the transmitter sends nothing and holds nothing: the
   * provider's revocations no longer reach the gate) or a verification asked for did not arrive
   * (`verification: 'missing'`). A `paused` stream, whose events the transmitter holds, is
   * reported and stays ready.
   */
  readonly ready: boolean
  /** As the last `stream-updated` event or status read said; `undefined` before either. */
  readonly status: 'enabled' | 'paused' | 'disabled' | undefined
  /** The transmitter's reason for the status, when it gave one. */
  readonly reason: string | undefined
  /** When the status was set (the event's time) or read. */
  readonly statusAt: number | undefined
  /**
   * The last verification asked for (`streams.verify()`): `pending` within its wait, `missing`
   * past it with no verification event since, `verified` once one arrived; `undefined` when none
   * was asked for and none arrived.
   */
  readonly verification: 'verified' | 'pending' | 'missing' | undefined
  /** When the last verification was asked for. */
  readonly verificationRequestedAt: number | undefined
  /** When the last verification event arrived. */
  readonly verifiedAt: number | undefined
  /** When the last SET arrived (any event, verified and not a duplicate). */
  readonly lastEventAt: number | undefined
  /**
   * Where this was read: `redis` (the fleet's), `memory` (this process's), or `unavailable`
   * (Redis did not answer: this process's own knowledge).
   */
  readonly store: 'memory' | 'redis' | 'unavailable'
}

/** Reads one stream's report; never rejects. */
export type StreamReporter = () => Promise<SignalStreamReport>

/**
 * What `gate.ready()` and `gate.refresh()` report: `ready` when every issuer has usable keys and,
 * with `revocation` on, `gate.ready()` found the revocation list held.
 */
export interface ReadyReport {
  readonly ready: boolean
  readonly issuers: readonly IssuerKeysStatus[]
  /**
   * With `revocation` on, from `gate.ready()`: `'held'` once this instance holds the revocation
   * list (first Redis synchronization, `load` done), `'not_held'` if it still did not after
   * waiting up to `revocation.storeTimeoutMs`.
   */
  readonly revocation?: 'held' | 'not_held'
  /**
   * From `gate.ready()`, for issuers whose tokens are introspected: each one's endpoint (given or
   * discovered) and whether it answered (`ready` needs every one `ready`).
   */
  readonly introspection?: readonly IntrospectionStatus[]
  /**
   * From `gate.ready()`, with Shared Signals receivers built over the gate: each one's stream
   * (`ready` needs every one `ready`).
   */
  readonly signals?: readonly SignalStreamReport[]
}

/** A gate's `ready()` and `refresh()` (see {@link Gate}). */
export interface Readiness {
  ready(): Promise<ReadyReport>
  refresh(issuer?: string): Promise<ReadyReport>
  /**
   * Adds a Shared Signals stream to what `ready()` reports (a receiver built over the gate, after
   * it); returns the function that takes it out again (the receiver's `close()`).
   */
  attachStream(reporter: StreamReporter): () => void
}

/** Builds a gate's readiness over its issuers' key sets and its revocation step (when on). */
export function createReadiness(
  issuers: ReadonlyMap<string, { readonly keys: IssuerKeys }>,
  revoked: Revocation | undefined,
  introspection?: () => Promise<readonly IntrospectionStatus[]>,
): Readiness {
  const allKeys = [...issuers.values()].map((entry) => entry.keys)
  const streams = new Set<StreamReporter>()

  /**
   * Warms (`ready()`: only what is not fresh) or refreshes each key set once, however many of
   * the selected issuers share it, then reports every issuer.
   */
  async function report(selected: readonly IssuerKeys[], now: boolean): Promise<ReadyReport> {
    const settling = new Map<IssuerKeys['keySet'], Promise<unknown>>()
    for (const keys of selected) {
      if (!settling.has(keys.keySet)) {
        settling.set(keys.keySet, now ? keys.refreshNow() : keys.warm())
      }
    }
    await Promise.all(settling.values())
    const statuses = selected.map((keys) => keys.status())
    return {
      ready: statuses.every((status) => status.state !== 'unavailable'),
      issuers: statuses,
    }
  }

  async function ready(): Promise<ReadyReport> {
    const [keys, , endpoints, signals] = await Promise.all([
      report(allKeys, false),
      revoked?.whenHeld(),
      introspection?.(),
      streams.size === 0 ? undefined : Promise.all([...streams].map((reporter) => reporter())),
    ])
    const introspected =
      endpoints === undefined
        ? undefined
        : { introspection: endpoints, ready: endpoints.every((e) => e.state === 'ready') }
    if (revoked === undefined && introspected === undefined && signals === undefined) return keys
    const held = revoked === undefined || revoked.held
    return {
      ready:
        keys.ready &&
        held &&
        (introspected?.ready ?? true) &&
        (signals?.every((stream) => stream.ready) ?? true),
      issuers: keys.issuers,
      ...(revoked === undefined ? {} : { revocation: held ? 'held' : 'not_held' }),
      ...(introspected === undefined ? {} : { introspection: introspected.introspection }),
      ...(signals === undefined ? {} : { signals }),
    }
  }

  function refresh(issuer?: string): Promise<ReadyReport> {
    if (issuer === undefined) return report(allKeys, true)
    const entry = typeof issuer === 'string' ? issuers.get(issuer) : undefined
    if (entry === undefined) {
      throw new TypeError(
        'gate.refresh(issuer): "issuer" must be one of the configured issuers (the exact iss)',
      )
    }
    return report([entry.keys], true)
  }

  function attachStream(reporter: StreamReporter): () => void {
    streams.add(reporter)
    return () => {
      streams.delete(reporter)
    }
  }

  return { ready, refresh, attachStream }
}
