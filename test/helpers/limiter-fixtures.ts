/**
 * What the limiter tests hand to `consume()`: a verified token of realm acme and a GET request;
 * the ioredis client options the README recommends; and a manual clock.
 */
import type { RedisOptions } from 'ioredis'

import type { LimiterClock } from '../../src/limits/clock.js'
import type { VerifiedToken } from '../../src/limits/tenant.js'
import type { RequestLike } from '../../src/types.js'

const ISSUER = 'https://sso.example.com/realms/acme'

export const token: VerifiedToken = {
  header: { alg: 'RS256' },
  claims: { iss: ISSUER, exp: 2_000_000_000 },
  issuer: ISSUER,
  realm: 'acme',
}

export const get: RequestLike = { headers: {}, method: 'GET', url: '/items' }

/**
 * The ioredis client options the README recommends for the limiter, exactly:
 * `test/limits/redis.test.ts` reads them back from the README, so that the two cannot drift apart.
 */
export const README_CLIENT_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 2000,
} as const satisfies RedisOptions

interface ManualTimer {
  readonly at: number
  readonly callback: () => void
}

/**
 * A clock for the limiter that moves only when the test says so: a request waits for its store
 * deadline exactly when the test advances past it, however loaded the machine is. Starts at the
 * real time (so that Redis's clock is near), and timers fire in order of their due time.
 */
export class ManualClock implements LimiterClock {
  #now = Date.now()
  #timers: ManualTimer[] = []

  now(): number {
    return this.#now
  }

  setTimer(callback: () => void, ms: number): () => void {
    const timer = { at: this.#now + ms, callback }
    this.#timers.push(timer)
    return () => {
      this.#timers = this.#timers.filter((pending) => pending !== timer)
    }
  }

  /** Timers not yet fired nor cancelled: a request waiting for its store deadline holds one. */
  get pendingTimers(): number {
    return this.#timers.length
  }

  /** Moves time on by `ms`, firing every timer due meanwhile at its own time. */
  advance(ms: number): void {
    const until = this.#now + ms
    for (;;) {
      const next = this.#timers.reduce<ManualTimer | undefined>(
        (earliest, timer) =>
          timer.at <= until && (earliest === undefined || timer.at < earliest.at)
            ? timer
            : earliest,
        undefined,
      )
      if (next === undefined) break
      this.#timers = this.#timers.filter((timer) => timer !== next)
      this.#now = next.at
      next.callback()
    }
    this.#now = until
  }
}
