/**
 * How a token source answers `get()` for one slot: from the token it holds, renewing it in the
 * background past its renewal point, or through the slot's one flight, which every caller for
 * those parameters joins. A failed flight pauses the slot with exponential backoff; `close()`
 * releases every caller waiting for a flight, whatever the flight is waiting on.
 *
 * @module
 */
import type { Emit } from '../events.js'
import type { Arrivals } from './arrival.js'
import type { TokenSourceError } from './errors.js'
import type { TokenSourceEvent } from './events.js'
import type { NormalizedTokenSourceOptions } from './options.js'
import type { Held, Slot } from './slot.js'

/** After a shared-cache arrival kept the held token, look for another instance's one this much later. */
const SHARED_RECHECK_MS = 1000

export class Flights {
  private readonly arrivals: Arrivals
  private readonly stopped: AbortSignal
  private readonly emit: Emit<TokenSourceEvent>
  private readonly now: () => number
  private readonly retry: NormalizedTokenSourceOptions['retry']
  /** Rejects when the source closes: every flight races it. */
  private readonly whenStopped: Promise<never>

  constructor(
    arrivals: Arrivals,
    settings: Pick<NormalizedTokenSourceOptions, 'now' | 'retry'>,
    emit: Emit<TokenSourceEvent>,
    stopped: AbortSignal,
  ) {
    this.arrivals = arrivals
    this.now = settings.now
    this.retry = settings.retry
    this.emit = emit
    this.stopped = stopped
    this.whenStopped = new Promise<never>((_, reject) => {
      stopped.addEventListener('abort', () => reject(arrivals.closedError()), { once: true })
    })
    this.whenStopped.catch(() => undefined)
  }

  /** The access token of `slot`: held, renewed in the background, or from its flight. */
  serve(slot: Slot): Promise<string> {
    const held = slot.current
    if (held !== undefined) {
      const at = this.now()
      if (at < held.renewAt) return Promise.resolve(held.accessToken)
      if (at < held.usableUntil) {
        if (slot.pending === undefined && at >= slot.retryAt && !this.stopped.aborted) {
          // Background renewal: its failure is reported as an event; callers keep this token.
          this.fly(slot).catch(() => undefined)
        }
        return Promise.resolve(held.accessToken)
      }
    }
    return this.obtain(slot)
  }

  private obtain(slot: Slot): Promise<string> {
    if (this.stopped.aborted) return Promise.reject(this.arrivals.closedError())
    if (slot.pending !== undefined) {
      awaitFlight(slot)
      return slot.pending.then(accessTokenOf)
    }
    if (slot.lastError !== undefined && this.now() < slot.retryAt) {
      return Promise.reject(slot.lastError)
    }
    awaitFlight(slot)
    return this.fly(slot).then(accessTokenOf)
  }

  /** The one flight of a slot: its result replaces the held token; its failure pauses the slot. */
  private fly(slot: Slot): Promise<Held> {
    const flight = (async () => {
      const arrival = await Promise.race([this.arrivals.arrive(slot), this.whenStopped])
      if (this.stopped.aborted) throw this.arrivals.closedError()
      return arrival
    })()
    slot.pending = flight.then(
      ({ held, from, durationMs }) => {
        slot.pending = undefined
        if (from === undefined && slot.current !== held) {
          // The held token was kept while another instance renews, but invalidate() dropped it
          // meanwhile: never put it back; wait for a new one instead.
          return this.fly(slot)
        }
        const renewal = slot.current !== undefined
        slot.current = held
        slot.failures = 0
        // Another instance holds the renewal lock: look for its token again in a second, not on
        // every get() in between.
        slot.retryAt = from === undefined ? this.now() + SHARED_RECHECK_MS : 0
        slot.lastError = undefined
        slot.awaited = false
        // Reported once the new token is in place: a listener calling get() already receives it.
        if (from !== undefined) {
          this.emit?.({
            type: renewal ? 'token_renewed' : 'token_obtained',
            ...slot.facts,
            from,
            expiresInSeconds: held.expiresInSeconds,
            durationMs,
          })
        }
        return held
      },
      (error: unknown) => {
        const failure = error as TokenSourceError
        slot.failures++
        const { maxDelayMs, baseDelayMs } = this.retry
        const pauseMs = Math.min(maxDelayMs, baseDelayMs * 2 ** slot.failures)
        slot.retryAt = this.now() + pauseMs
        failure.retryAfterSeconds = failure.retryable ? Math.ceil(pauseMs / 1000) : undefined
        slot.lastError = failure
        slot.pending = undefined
        slot.awaited = false
        throw failure
      },
    )
    return slot.pending
  }
}

/** A caller waits for `slot`'s flight: from now on its timers keep the process alive. */
function awaitFlight(slot: Slot): void {
  slot.awaited = true
  slot.sleeping?.ref()
}

function accessTokenOf(held: Held): string {
  return held.accessToken
}
