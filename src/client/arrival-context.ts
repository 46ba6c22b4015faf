/**
 * What the ways a token arrives share: the source's settings and parts ({@link ArrivalContext}),
 * the schedule a token is held with, the error of a closed source, and waiting for a slot's
 * flight.
 *
 * @module
 */
import type { TokenEndpoint } from './endpoint.js'
import { TokenSourceError } from './errors.js'
import type { GrantType, TokenSourceEvent } from './events.js'
import type { NormalizedTokenSourceOptions } from './options.js'
import type { RefreshTokenHolder } from './refresh-token.js'
import { scheduleToken } from './schedule.js'
import type { SharedCache, SharedToken } from './shared-cache.js'
import type { Held, Slot } from './slot.js'

/** What `createArrivals` needs from its source. */
export interface ArrivalContext {
  readonly settings: NormalizedTokenSourceOptions
  readonly grant: GrantType
  readonly endpoint: TokenEndpoint
  readonly refresh: RefreshTokenHolder | undefined
  readonly emit: ((event: TokenSourceEvent) => void) | undefined
  readonly shared: SharedCache | undefined
  /** This instance's id in the shared cache's lock. */
  readonly owner: string
  /** Aborted by the source's `close()`. */
  readonly stopped: AbortSignal
}

/** `token`, held with its renewal schedule (jittered). */
export function hold(
  context: ArrivalContext,
  token: SharedToken,
  sharedRaw: string | undefined,
): Held {
  const { renewal } = context.settings
  const schedule = scheduleToken(token.obtainedAt, token.expiresInSeconds, renewal, Math.random())
  return { ...token, renewAt: schedule.renewAt, usableUntil: schedule.usableUntil, sharedRaw }
}

/** Whether `slot` holds a token that may still be served at `at`. */
export function usable(slot: Slot, at: number): boolean {
  return slot.current !== undefined && at < slot.current.usableUntil
}

/** `ERR_TOKEN_SOURCE_CLOSED`. */
export function closedError(context: ArrivalContext): TokenSourceError {
  const { clientId } = context.settings
  return new TokenSourceError({
    code: 'ERR_TOKEN_SOURCE_CLOSED',
    message: `token source of client "${clientId}" is closed`,
    retryable: false,
    clientId,
    issuer: context.settings.server.issuer,
  })
}

/**
 * Waits `ms` for `slot`'s flight. Only a background renewal lets the process exit meanwhile: a
 * caller waiting for a token (a batch job whose only work is `get()`) must keep it alive.
 */
export function delay(context: ArrivalContext, ms: number, slot: Slot): Promise<void> {
  const { stopped } = context
  return new Promise((resolve, reject) => {
    if (stopped.aborted) return reject(closedError(context))
    const onAbort = () => {
      clearTimeout(timer)
      slot.sleeping = undefined
      reject(closedError(context))
    }
    const timer = setTimeout(() => {
      stopped.removeEventListener('abort', onAbort)
      slot.sleeping = undefined
      resolve()
    }, ms)
    if (!slot.awaited) timer.unref()
    slot.sleeping = timer
    stopped.addEventListener('abort', onAbort, { once: true })
  })
}
