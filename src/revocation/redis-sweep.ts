/**
 * Expired entries and tombstones leave Redis through a sweep every instance shares: after each
 * periodic resynchronization an instance runs a few steps of it from a cursor kept in Redis
 * (`{<prefix>}:sweep`), each one short script over one page. The fleet walks the list once
 * between them, however many instances there are; a reload's pages drop what they find expired.
 *
 * @module
 */
import { type RedisLink, yieldToLoop } from './redis-link.js'
import { SWEEP } from './redis-scripts.js'

/** Steps per periodic resynchronization, and fields per step. */
const SWEEP_STEPS = 8
const SWEEP_PAGE = 500

/** Runs a few sweep steps; a failure ends them (the next resynchronization tries again). */
export async function sweepExpired(link: RedisLink): Promise<void> {
  const { keys } = link
  try {
    for (let step = 0; step < SWEEP_STEPS; step++) {
      await link.run(SWEEP, [keys.entries, keys.removed, keys.sweep], [SWEEP_PAGE, Date.now()])
      await yieldToLoop()
    }
  } catch (error) {
    link.storeError(error)
  }
}
