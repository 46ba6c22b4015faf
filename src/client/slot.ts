/**
 * The state of one set of request parameters of a token source: the token it holds, the one
 * flight obtaining the next, and how its failures pause it. Read and written by the source's
 * flights (`flights.ts`) and by how tokens arrive (`arrival.ts`).
 *
 * @module
 */
import type { TokenSourceError } from './errors.js'
import type { TokenRequestFacts } from './events.js'
import type { NormalizedParameters } from './parameters.js'
import type { SharedToken } from './shared-cache.js'

/** A token a source holds, with its schedule. */
export interface Held extends SharedToken {
  readonly renewAt: number
  readonly usableUntil: number
  /** The shared cache's raw value, to delete exactly this entry when the token is refused. */
  readonly sharedRaw: string | undefined
}

/** The cache entry and single-flight state of one set of request parameters. */
export interface Slot {
  readonly key: string
  readonly parameters: NormalizedParameters
  readonly facts: TokenRequestFacts
  readonly sharedKey: string | undefined
  current: Held | undefined
  pending: Promise<Held> | undefined
  failures: number
  retryAt: number
  lastError: TokenSourceError | undefined
  lastDroppedAt: number
  /** The shared cache's raw value of the token last refused here, never to be adopted again. */
  refusedRaw: string | undefined
  /** A caller waits for the flight: its retry and poll timers keep the process alive. */
  awaited: boolean
  /** The timer the flight waits on, to keep the process alive once a caller joins. */
  sleeping: NodeJS.Timeout | undefined
}

/** A token that arrived, and from where (`undefined`: the held one, kept while another renews). */
export interface Arrival {
  readonly held: Held
  readonly from: 'provider' | 'shared_cache' | undefined
  readonly durationMs: number
}
