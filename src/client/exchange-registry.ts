/**
 * What the gate needs of an exchanger made by `createTokenExchange()`, without importing it (and
 * openid-client with it) into the core: the exchanger registers its fast path here, keyed by the
 * object the application holds, and `auth.tokenFor()` finds it.
 *
 * @module
 */

/** A subject token the gate has verified: its `exp` known, its hash computed once. */
export interface KnownSubject {
  readonly token: string
  /** The subject token's `exp`, seconds since the epoch. */
  readonly exp: number | undefined
  /** The subject token's `sub`, for the exchanger's events. */
  readonly sub: string | undefined
  /** Set by the exchanger on first use: the subject token's hash, for every later key. */
  hash?: string
}

/** The fast path of an exchanger: a verified subject, a target validated (and memoized) inside. */
export interface KnownSubjectExchanger {
  readonly issuer: string
  readonly clientId: string
  exchangeFor(subject: KnownSubject, target: unknown): Promise<string>
}

const registry = new WeakMap<object, KnownSubjectExchanger>()

/** Registers `facade`'s fast path (called by `createTokenExchange()`). */
export function registerExchanger(facade: object, exchanger: KnownSubjectExchanger): void {
  registry.set(facade, exchanger)
}

/** The fast path of an exchanger made by `createTokenExchange()`, else `undefined`. */
export function knownSubjectExchanger(facade: object): KnownSubjectExchanger | undefined {
  return registry.get(facade)
}
