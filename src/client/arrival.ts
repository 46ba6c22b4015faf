/**
 * How one token arrives for a set of parameters: from the provider, with bounded retries and
 * exponential backoff with full jitter (`arrival-provider.ts`); or, with a shared cache, from
 * another instance of the fleet, which renews under a Redis lock while the others keep serving
 * theirs (`arrival-shared.ts`). What they share is in `arrival-context.ts`; the state they read
 * and write is the slot's (`slot.ts`).
 *
 * @module
 */
import { type ArrivalContext, closedError } from './arrival-context.js'
import { requestWithRetries } from './arrival-provider.js'
import { reportSharedError, viaSharedCache } from './arrival-shared.js'
import type { TokenSourceError } from './errors.js'
import type { Arrival, Slot } from './slot.js'

export type { ArrivalContext } from './arrival-context.js'
export type { Arrival, Held, Slot } from './slot.js'

/** Obtains tokens for the slots of one source. */
export interface Arrivals {
  /** The next token of `slot`: through the shared cache when there is one. */
  arrive(slot: Slot): Promise<Arrival>
  closedError(): TokenSourceError
  sharedError(error: unknown): void
}

/** Builds how the slots of one source obtain their tokens. */
export function createArrivals(context: ArrivalContext): Arrivals {
  const { shared } = context
  return {
    arrive: (slot) =>
      shared !== undefined && slot.sharedKey !== undefined
        ? viaSharedCache(context, slot, shared, slot.sharedKey)
        : requestWithRetries(context, slot),
    closedError: () => closedError(context),
    sharedError: (error) => reportSharedError(context, error),
  }
}
