/**
 * Whether this instance holds the revocation list (its first Redis synchronization and the start
 * `load`, as configured), whether it can decide requests meanwhile (direct lookups while the
 * first load runs), and the bounded waits of requests and `gate.ready()` for either.
 *
 * @module
 */

interface Waiter {
  readonly done: () => boolean
  readonly wake: () => void
}

export class Holding {
  /** What this instance still lacks to hold the list: the first synchronization, the first load. */
  private awaitingSync: boolean
  private awaitingLoad: boolean
  /** Whether requests can be decided by looking their identities up in Redis. */
  private live = false
  private readonly waiters = new Set<Waiter>()

  private readonly storeTimeoutMs: number

  constructor(storeTimeoutMs: number, needs: { readonly sync: boolean; readonly load: boolean }) {
    this.storeTimeoutMs = storeTimeoutMs
    this.awaitingSync = needs.sync
    this.awaitingLoad = needs.load
  }

  get held(): boolean {
    return !this.awaitingSync && !this.awaitingLoad
  }

  /** Whether the start load is still missing (the memory store retries it when asked). */
  get loading(): boolean {
    return this.awaitingLoad
  }

  /** Whether a request can be decided now: the list is held, or lookups answer for it. */
  get decidable(): boolean {
    return this.held || (this.live && !this.awaitingLoad)
  }

  synced(): void {
    this.awaitingSync = false
    this.check()
  }

  loaded(): void {
    this.awaitingLoad = false
    this.check()
  }

  setLive(live: boolean): void {
    this.live = live
    this.check()
  }

  /** Resolves once `done()` is true, or `storeTimeoutMs` from now. */
  until(done: () => boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        done,
        wake: () => {
          clearTimeout(timer)
          this.waiters.delete(waiter)
          resolve()
        },
      }
      const timer = setTimeout(waiter.wake, this.storeTimeoutMs)
      timer.unref()
      this.waiters.add(waiter)
    })
  }

  /** `pending`, or `storeTimeoutMs` from now, whichever comes first. */
  bounded(pending: Promise<void>): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.storeTimeoutMs)
      timer.unref()
      pending.then(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  private check(): void {
    for (const waiter of this.waiters) if (waiter.done()) waiter.wake()
  }
}
