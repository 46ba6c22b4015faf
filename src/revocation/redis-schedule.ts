/**
 * When the shared list is brought in step with Redis: on every (re)connection of the subscriber,
 * on a gap in the sequence, after a failure (`retry`) and every `resyncIntervalMs`. One runs at a
 * time; a request during a run runs one more after it.
 *
 * @module
 */

/** After a failed resynchronization or write, the next attempt waits this long (or the resync interval, if shorter). */
export const RETRY_MS = 250

export class ResyncSchedule {
  private running: Promise<void> | undefined
  private again = false
  private retryTimer: NodeJS.Timeout | undefined
  private readonly periodic: NodeJS.Timeout
  private closed = false
  private readonly run: (periodic: boolean) => Promise<void>
  /** Told when a run ends with none queued behind it. */
  private readonly onIdle: () => void

  constructor(intervalMs: number, run: (periodic: boolean) => Promise<void>, onIdle: () => void) {
    this.run = run
    this.onIdle = onIdle
    this.periodic = setInterval(() => void this.now(true), intervalMs)
    this.periodic.unref()
  }

  /** Whether a run is under way. */
  get busy(): boolean {
    return this.running !== undefined
  }

  /** Runs now (or right after the run under way). */
  now(periodic = false): Promise<void> {
    if (this.closed) return Promise.resolve()
    if (this.running !== undefined) {
      this.again = true
      return this.running
    }
    this.running = this.run(periodic).finally(() => {
      this.running = undefined
      if (this.again) {
        this.again = false
        void this.now()
      } else this.onIdle()
    })
    return this.running
  }

  /** Runs in `delayMs`, unless a run is already planned. */
  later(delayMs: number): void {
    if (this.closed || this.retryTimer !== undefined) return
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined
      void this.now()
    }, delayMs)
    this.retryTimer.unref()
  }

  close(): void {
    this.closed = true
    clearInterval(this.periodic)
    clearTimeout(this.retryTimer)
  }
}
