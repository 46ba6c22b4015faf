/**
 * The `onStoreError` policy of a Redis-backed list: `'enforce-known'` keeps deciding with what
 * this instance knows (and says so with `revocation_fallback`); `'deny'` does too for
 * `denyAfterMs`, then refuses with 503 until the list is synchronized again.
 *
 * @module
 */
import type { Emit } from '../events.js'
import type { NormalizedRevocationOptions } from './options.js'

export class StoreHealth {
  /** With `'deny'`: out of sync past `denyAfterMs`. */
  denying = false
  private denyTimer: NodeJS.Timeout | undefined
  private everSynced = false
  /** Whether a `revocation_fallback` with `engaged: true` was the last one emitted. */
  private engaged = false

  private readonly options: Pick<NormalizedRevocationOptions, 'onStoreError' | 'denyAfterMs'>
  private readonly emit: Emit

  constructor(
    options: Pick<NormalizedRevocationOptions, 'onStoreError' | 'denyAfterMs'>,
    emit: Emit,
  ) {
    this.options = options
    this.emit = emit
  }

  /** Starts the `denyAfterMs` bound (at start too: until the first synchronization, nothing is known). */
  startDenyTimer(): void {
    if (this.options.onStoreError !== 'deny' || this.denyTimer !== undefined || this.denying) return
    this.denyTimer = setTimeout(() => {
      this.denyTimer = undefined
      this.denying = true
      this.engage()
    }, this.options.denyAfterMs)
    this.denyTimer.unref()
  }

  /** Redis answers and the list is (being) brought in step: nothing to deny. */
  reachable(): void {
    clearTimeout(this.denyTimer)
    this.denyTimer = undefined
    this.denying = false
  }

  onSynced(synced: boolean): void {
    if (synced) {
      this.everSynced = true
      this.reachable()
      if (this.engaged) {
        this.engaged = false
        this.emit?.({
          type: 'revocation_fallback',
          engaged: false,
          policy: this.options.onStoreError,
        })
      }
    } else if (this.options.onStoreError === 'deny') this.startDenyTimer()
    // Before the first synchronization there is nothing known to fall back on, and nothing to say.
    else if (this.everSynced) this.engage()
  }

  close(): void {
    clearTimeout(this.denyTimer)
  }

  private engage(): void {
    if (this.engaged) return
    this.engaged = true
    this.emit?.({ type: 'revocation_fallback', engaged: true, policy: this.options.onStoreError })
  }
}
