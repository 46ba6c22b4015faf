/**
 * Requests while an instance loads the list for the first time (when every request waited for it,
 * at 300,000 entries the load outlasted `storeTimeoutMs` and every request got 503). Once the
 * subscriber is subscribed and the load has begun, a request's token is decided from Redis
 * directly: one short script reads what Redis holds for its identities (at most five: `jti`, `sid`,
 * `sub`, client id, the issuer's not-before) and the list takes it, as a page of the load would.
 * Changes made after that read reach the list as messages, so an identity read once needs no second
 * read while the load runs.
 *
 * @module
 */

import { applyStored, type ReloadState } from './redis-reload.js'
import { LOOKUP } from './redis-scripts.js'

/** Identities remembered as read during one load: beyond, each request reads its own again. */
const MAX_REMEMBERED = 100_000

export interface Lookups {
  /** The first load has begun: lookups may decide requests. */
  start(): void
  /** The list is held, or the subscriber was lost (changes may be missed): lookups stop. */
  stop(): void
  /** `true` once the list holds what Redis has for `fields` (at once when read before); `false` when it cannot. */
  lookup(fields: readonly string[]): Promise<boolean> | boolean
  /** Whether a lookup is in flight (its answer may be older than a change seen since). */
  busy(): boolean
}

export function startLookups(
  state: ReloadState & { forgetTouched(): void },
  onLive: (live: boolean) => void,
): Lookups {
  let live = false
  let known = new Set<string>()
  let inFlight = 0

  async function read(fields: readonly string[], remember: Set<string>): Promise<boolean> {
    const { link } = state
    try {
      const [seqText, values] = await link.run<[string, (string | null)[]]>(
        LOOKUP,
        [link.keys.entries, link.keys.seq],
        fields,
      )
      const asOf = Number(seqText) || 0
      const now = Date.now()
      for (const [index, field] of fields.entries()) {
        const value = values[index]
        // The stricter copy: a lookup never weakens what this instance holds.
        if (typeof value === 'string') applyStored(state, field, value, asOf, true, now)
        if (remember.size < MAX_REMEMBERED) remember.add(field)
      }
      return true
    } catch (error) {
      link.storeError(error)
      return false
    } finally {
      inFlight -= 1
      if (inFlight === 0) state.forgetTouched()
    }
  }

  return {
    start() {
      if (live) return
      live = true
      onLive(true)
    },
    stop() {
      if (!live) return
      live = false
      known = new Set()
      onLive(false)
    },
    lookup(fields) {
      if (!live) return false
      const missing = fields.filter((field) => !known.has(field))
      if (missing.length === 0) return true
      inFlight += 1
      return read(missing, known)
    },
    busy: () => inFlight > 0,
  }
}
