/**
 * Where sessions live: a server-side store of opaque records (encrypted tokens, a few ID token
 * claims), keyed by a hash of the session id so that reading the store never yields a cookie. The
 * memory store suits the demo and tests; {@link createRedisSessionStore} (`redis-store.ts`) suits
 * a fleet. Both take a short per-session lock, which makes a refresh single-flight across every
 * instance that shares the store.
 *
 * @module
 */

/** What a session store does. Values are opaque strings; tollgate writes and reads them. */
export interface SessionStore {
  /** The session's value, its idle lifetime extended to `idleMs`; `undefined` when absent. */
  read(key: string, idleMs: number): Promise<string | undefined>
  /**
   * Stores a new session for `ttlMs` (its idle lifetime, extended by each read) and records it
   * under each of `indexes` (sid, sub) for at least `indexTtlMs` (the session's absolute lifetime;
   * default `ttlMs`): an index must outlive every read-extended session in it, or a back-channel
   * logout would not find an active session. An index's lifetime is only ever lengthened.
   */
  create(
    key: string,
    value: string,
    ttlMs: number,
    indexes: readonly string[],
    indexTtlMs?: number,
  ): Promise<void>
  /**
   * Replaces a session, only while `owner` holds its lock and the session still exists (a
   * logout during a refresh wins). `true` when written.
   */
  replace(key: string, value: string, ttlMs: number, owner: string): Promise<boolean>
  /**
   * Deletes a session and removes it from `indexes` (the sid and sub indexes it was created under,
   * when the caller knows them), so that an index holds only sessions that may still be active.
   */
  delete(key: string, indexes?: readonly string[]): Promise<void>
  /** Takes the session's lock for `ttlMs`; `false` while another owner holds it. */
  lock(key: string, owner: string, ttlMs: number): Promise<boolean>
  /** Releases the lock if `owner` still holds it. */
  unlock(key: string, owner: string): Promise<void>
  /** Keys of the sessions recorded under `index` that still exist (ended ones are dropped from it). */
  indexed(index: string): Promise<string[]>
}

/** Options of {@link createMemorySessionStore}. */
export interface MemorySessionStoreOptions {
  /** Sessions kept at most; the oldest goes first. Default 10000. */
  readonly maxSessions?: number
  /** Milliseconds since the epoch. Default `Date.now`. Give sign-in's clock when a test moves it. */
  readonly clock?: { now(): number }
}

/** The memory store, with its size for monitoring and tests. */
export interface MemorySessionStore extends SessionStore {
  /** Sessions held, and index entries (session keys recorded under a sid or sub) held. */
  size(): { readonly sessions: number; readonly indexEntries: number }
}

/**
 * A store in this process's memory: sessions end with the process and are not shared, so two
 * instances need {@link createRedisSessionStore}. Bounded (`maxSessions`): a session's index
 * entries go with it (delete, expiry, eviction).
 */
export function createMemorySessionStore(
  options: MemorySessionStoreOptions = {},
): MemorySessionStore {
  const maxSessions = options.maxSessions ?? 10_000
  if (!Number.isInteger(maxSessions) || maxSessions < 1) {
    throw new TypeError(
      'createMemorySessionStore(options): "maxSessions" must be a whole number above 0',
    )
  }
  const now =
    options.clock === undefined ? Date.now : () => (options.clock as { now(): number }).now()
  const sessions = new Map<string, { value: string; expiresAt: number }>()
  const locks = new Map<string, { owner: string; until: number }>()
  const indexes = new Map<string, Set<string>>()
  /** The indexes each session is recorded under, so that its entries go with it. */
  const indexesOf = new Map<string, readonly string[]>()
  const remove = (key: string) => {
    sessions.delete(key)
    for (const name of indexesOf.get(key) ?? []) {
      const members = indexes.get(name)
      members?.delete(key)
      if (members?.size === 0) indexes.delete(name)
    }
    indexesOf.delete(key)
  }
  const live = (key: string) => {
    const entry = sessions.get(key)
    if (entry === undefined) return undefined
    if (now() >= entry.expiresAt) {
      remove(key)
      return undefined
    }
    return entry
  }
  return {
    async read(key, idleMs) {
      const entry = live(key)
      if (entry === undefined) return undefined
      entry.expiresAt = now() + idleMs
      return entry.value
    },
    async create(key, value, ttlMs, names) {
      if (sessions.has(key)) remove(key)
      if (sessions.size >= maxSessions) {
        const oldest = sessions.keys().next().value
        if (oldest !== undefined) remove(oldest)
      }
      sessions.set(key, { value, expiresAt: now() + ttlMs })
      indexesOf.set(key, [...names])
      for (const name of names) {
        let members = indexes.get(name)
        if (members === undefined) {
          members = new Set()
          indexes.set(name, members)
        }
        members.add(key)
      }
    },
    async replace(key, value, ttlMs, owner) {
      const lock = locks.get(key)
      if (lock === undefined || lock.owner !== owner || now() >= lock.until) return false
      if (live(key) === undefined) return false
      const entry = sessions.get(key) as { value: string; expiresAt: number }
      entry.value = value
      entry.expiresAt = now() + ttlMs
      return true
    },
    async delete(key) {
      // This store knows each session's indexes itself.
      remove(key)
    },
    async lock(key, owner, ttlMs) {
      if (locks.size >= maxSessions) {
        // Locks outlive nothing: expired ones (finished refreshes, old logout jtis) go first.
        for (const [name, lock] of locks) if (now() >= lock.until) locks.delete(name)
      }
      const held = locks.get(key)
      if (held !== undefined && now() < held.until) return false
      locks.set(key, { owner, until: now() + ttlMs })
      return true
    },
    async unlock(key, owner) {
      if (locks.get(key)?.owner === owner) locks.delete(key)
    },
    size() {
      let indexEntries = 0
      for (const members of indexes.values()) indexEntries += members.size
      return { sessions: sessions.size, indexEntries }
    },
    async indexed(name) {
      const members = indexes.get(name)
      if (members === undefined) return []
      for (const key of members) live(key)
      return [...(indexes.get(name) ?? [])]
    },
  }
}
