/**
 * Per-tenant entries in process memory with an expiry and a bound, and no timer: the memory
 * store's windows and the limiter's memory of spent tenants. A `Map` from tenant id to
 * a slot; each slot's expiry and count side by side in a typed array; and a queue of slots in the order their
 * entries were opened, which the table sweeps a few at a time as entries are opened. Every
 * operation is O(1) (amortized), whatever the number of tenants, and a tenant costs a `Map`
 * entry, its id and about 40 bytes of arrays.
 *
 * Expiry is lazy: a lookup never returns an expired entry (it removes it), and opening an entry
 * first removes up to {@link SWEEP_STEP} expired ones from the front of the queue, so the memory
 * of tenants that went quiet is reclaimed by the traffic of those that did not. When all of a
 * table's entries last as long (a window of one duration), the queue is in expiry order and the
 * front is always the next to expire.
 *
 * @module
 */

const INITIAL_SLOTS = 256
/** Expired entries removed, at most, each time an entry is opened: more than one, to keep ahead. */
const SWEEP_STEP = 4

/** A table of at most `capacity` live entries (see the module comment). */
export class TenantTable {
  readonly capacity: number
  private readonly slots = new Map<string, number>()
  /** Slot → tenant id, `undefined` for a free slot. */
  private tenants: (string | undefined)[] = []
  /**
   * Slot → expiry (ms since the epoch) at `2 × slot`, and count (points consumed in a window) at
   * `2 × slot + 1`: side by side, a lookup reads both from one cache line.
   */
  private entries = new Float64Array(2 * INITIAL_SLOTS)
  private readonly freeSlots: number[] = []
  /** Slots handed out so far; below it, a slot is in use or in `freeSlots`. */
  private allocated = 0
  /** The queue: a ring of (slot, expiry when queued); an entry is stale once its slot changed. */
  private queueSlots = new Int32Array(INITIAL_SLOTS)
  private queueExpiry = new Float64Array(INITIAL_SLOTS)
  private head = 0
  private queued = 0

  constructor(capacity: number) {
    this.capacity = capacity
  }

  /** Live entries. */
  get size(): number {
    return this.slots.size
  }

  /** The tenant's slot while its entry lasts, else -1 (an expired entry is removed). */
  find(tenant: string, now: number): number {
    const slot = this.slots.get(tenant)
    if (slot === undefined) return -1
    if ((this.entries[2 * slot] as number) > now) return slot
    this.remove(slot)
    return -1
  }

  /** When the entry in `slot` expires, ms since the epoch. */
  expiresAt(slot: number): number {
    return this.entries[2 * slot] as number
  }

  /** The count of the entry in `slot`. */
  count(slot: number): number {
    return this.entries[2 * slot + 1] as number
  }

  /** Adds `amount` (negative to take it back) to the count of the entry in `slot`. */
  add(slot: number, amount: number): void {
    this.entries[2 * slot + 1] = (this.entries[2 * slot + 1] as number) + amount
  }

  /** Moves the expiry of the entry in `slot`. */
  expireAt(slot: number, expiresAt: number): void {
    if (this.entries[2 * slot] === expiresAt) return
    this.entries[2 * slot] = expiresAt
    this.enqueue(slot, expiresAt)
  }

  /**
   * Opens an entry for a tenant that has none (`find` returned -1), with `count`, until
   * `expiresAt`. When `capacity` live entries are held: `evict` removes the oldest one to make
   * room; otherwise nothing is opened and the answer is -1.
   */
  open(tenant: string, count: number, expiresAt: number, now: number, evict: boolean): number {
    this.sweep(now, SWEEP_STEP)
    if (this.slots.size >= this.capacity && !this.makeRoom(now, evict)) return -1
    const slot = this.freeSlots.pop() ?? this.allocate()
    this.slots.set(tenant, slot)
    this.tenants[slot] = tenant
    this.entries[2 * slot] = expiresAt
    this.entries[2 * slot + 1] = count
    this.enqueue(slot, expiresAt)
    return slot
  }

  /**
   * Ms until the oldest live entry expires (when a full table has room again, for tables whose
   * entries all last as long), at least 1.
   */
  msUntilRoom(now: number): number {
    this.dropStale()
    if (this.queued === 0) return 1
    return Math.max(1, (this.queueExpiry[this.head] as number) - now)
  }

  private remove(slot: number): void {
    this.slots.delete(this.tenants[slot] as string)
    this.tenants[slot] = undefined
    this.freeSlots.push(slot)
  }

  /** Whether the queue's front entry no longer describes its slot (removed, reused, moved). */
  private frontIsStale(): boolean {
    const slot = this.queueSlots[this.head] as number
    return (
      this.tenants[slot] === undefined || this.entries[2 * slot] !== this.queueExpiry[this.head]
    )
  }

  private dequeue(): void {
    this.head = (this.head + 1) % this.queueSlots.length
    this.queued--
  }

  private dropStale(): void {
    while (this.queued > 0 && this.frontIsStale()) this.dequeue()
  }

  /** Removes up to `steps` expired entries from the front of the queue. */
  private sweep(now: number, steps: number): void {
    for (let step = 0; step < steps && this.queued > 0; step++) {
      if (this.frontIsStale()) {
        this.dequeue()
        continue
      }
      if ((this.queueExpiry[this.head] as number) > now) return
      this.remove(this.queueSlots[this.head] as number)
      this.dequeue()
    }
  }

  /** Frees one slot: the front entry if it has expired, or if `evict`; `false` when none was. */
  private makeRoom(now: number, evict: boolean): boolean {
    this.dropStale()
    if (this.queued === 0) return false
    if (!evict && (this.queueExpiry[this.head] as number) > now) return false
    this.remove(this.queueSlots[this.head] as number)
    this.dequeue()
    return true
  }

  private allocate(): number {
    const slot = this.allocated++
    if (2 * slot >= this.entries.length) {
      const slots = Math.min(this.entries.length, Math.max(this.capacity, INITIAL_SLOTS))
      this.entries = grown(this.entries, 2 * slots)
    }
    return slot
  }

  private enqueue(slot: number, expiresAt: number): void {
    if (this.queued === this.queueSlots.length) this.repack()
    const tail = (this.head + this.queued) % this.queueSlots.length
    this.queueSlots[tail] = slot
    this.queueExpiry[tail] = expiresAt
    this.queued++
  }

  /**
   * The ring is full: unwrap it, without its stale entries, into arrays twice as long as what is
   * left. Stale entries stuck behind a front that expires late (entries of unequal lengths) are
   * dropped here, so the queue holds at most about twice the live entries; the O(n) copy comes
   * after at least n/2 entries were queued, O(1) amortized.
   */
  private repack(): void {
    const length = this.queueSlots.length
    const slots = new Int32Array(length)
    const expiries = new Float64Array(length)
    let kept = 0
    for (let index = 0; index < length; index++) {
      const from = (this.head + index) % length
      const slot = this.queueSlots[from] as number
      const expiresAt = this.queueExpiry[from] as number
      if (this.tenants[slot] === undefined || this.entries[2 * slot] !== expiresAt) continue
      slots[kept] = slot
      expiries[kept] = expiresAt
      kept++
    }
    const size = Math.max(INITIAL_SLOTS, kept * 2)
    this.queueSlots = new Int32Array(size)
    this.queueSlots.set(slots.subarray(0, kept))
    this.queueExpiry = new Float64Array(size)
    this.queueExpiry.set(expiries.subarray(0, kept))
    this.head = 0
    this.queued = kept
  }
}

function grown(array: Float64Array, length: number): Float64Array<ArrayBuffer> {
  const larger = new Float64Array(length)
  larger.set(array)
  return larger
}
