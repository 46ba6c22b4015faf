/**
 * A `Map` whose oldest entry is found in constant time, for the bounded memories that forget the
 * oldest first (DPoP proofs and their per-key windows, received security events). A base file.
 *
 * @module
 */

/** Slots of the key queue dropped at once when its front is compacted. */
const COMPACT_AFTER = 1024

/**
 * A `Map` in insertion order (a key set again moves to the back) whose oldest entry,
 * {@link FifoMap.oldest}, costs amortized constant time however many entries were removed before it.
 *
 * V8's `Map` leaves a hole where an entry was deleted until the table is rebuilt, and an iterator
 * walks the holes from the start: `map.keys().next()` after the oldest entries were deleted one by
 * one costs as many steps as entries were deleted since, which measured 272 µs per call in a map
 * of a million entries forgetting its oldest on each insertion. Here the keys are also kept in an
 * array in insertion order, read from a moving head; a slot whose key was deleted or set again
 * since is skipped once and dropped, and the array is rebuilt from the live keys when skipped
 * slots outnumber them, so it never holds more than about twice the entries.
 */
export class FifoMap<K, V> {
  readonly #entries = new Map<K, { value: V; at: number }>()
  /** Keys in insertion order from `#head`; a slot is live when its entry's `at` is its position. */
  #queue: K[] = []
  #head = 0
  /** Positions dropped from the front of `#queue` by compaction: a slot's position is `#dropped + index`. */
  #dropped = 0

  get size(): number {
    return this.#entries.size
  }

  get(key: K): V | undefined {
    return this.#entries.get(key)?.value
  }

  /** Sets `key` to `value` as the newest entry (an existing key moves to the back). */
  set(key: K, value: V): void {
    this.#entries.set(key, { value, at: this.#dropped + this.#queue.length })
    this.#queue.push(key)
    // Slots of deleted or moved keys wait until they reach the front: past twice the entries,
    // the queue is rebuilt from the live ones (amortized constant time per call).
    if (this.#queue.length - this.#head > 2 * this.#entries.size + COMPACT_AFTER) this.#rebuild()
  }

  delete(key: K): boolean {
    return this.#entries.delete(key)
  }

  /** The oldest entry, or `undefined` when empty. */
  oldest(): [K, V] | undefined {
    // `#advance` may replace the array: read it afresh each time.
    while (this.#head < this.#queue.length) {
      const key = this.#queue[this.#head] as K
      const entry = this.#entries.get(key)
      if (entry !== undefined && entry.at === this.#dropped + this.#head) return [key, entry.value]
      this.#advance()
    }
    return undefined
  }

  /** Removes the oldest entry; returns it, or `undefined` when empty. */
  shift(): [K, V] | undefined {
    const oldest = this.oldest()
    if (oldest !== undefined) {
      this.#entries.delete(oldest[0])
      this.#advance()
    }
    return oldest
  }

  #advance(): void {
    this.#head += 1
    if (this.#head >= COMPACT_AFTER && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head)
      this.#dropped += this.#head
      this.#head = 0
    }
  }

  /** The queue again from the live slots alone, in their order. */
  #rebuild(): void {
    const live: K[] = []
    for (let index = this.#head; index < this.#queue.length; index++) {
      const key = this.#queue[index] as K
      const entry = this.#entries.get(key)
      if (entry !== undefined && entry.at === this.#dropped + index) {
        entry.at = live.length
        live.push(key)
      }
    }
    this.#queue = live
    this.#head = 0
    this.#dropped = 0
  }
}
