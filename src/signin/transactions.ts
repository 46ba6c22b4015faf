/**
 * The sign-ins a browser has under way: sealed in their own cookie between the login route and
 * the callback, so that nothing is stored for a visit to the login route and a callback only
 * completes in the browser that started its sign-in (login CSRF).
 *
 * @module
 */
import { readCookie } from './cookies.js'
import type { SignInRequest } from './internals.js'
import type { KeyRing } from './key-ring.js'

const TRANSACTION_AAD = 'tollgate/signin v1\0transaction'
/** How long a sign-in may take between the login route and the callback, in seconds. */
export const TRANSACTION_SECONDS = 600
/** Sign-ins one browser may have under way at once (tabs); the oldest is dropped beyond that. */
export const MAX_TRANSACTIONS = 4

/**
 * One sign-in under way: state, nonce, PKCE verifier, where to return, when it expires (ms), and
 * for a step-up the `acr_values` (`a`) and `max_age` (`m`) it asked for.
 */
export interface Transaction {
  readonly s: string
  readonly n: string
  readonly v: string
  readonly r: string
  readonly e: number
  readonly a?: string | undefined
  readonly m?: number | undefined
}

export function sealTransactions(keys: KeyRing, transactions: readonly Transaction[]): string {
  return keys.encrypt(JSON.stringify(transactions), TRANSACTION_AAD)
}

/** The unexpired sign-ins this browser started; none when the cookie is absent or altered. */
export function readTransactions(
  keys: KeyRing,
  request: SignInRequest,
  cookieName: string,
  now: () => number,
): Transaction[] {
  const sealed = readCookie(request.headers['cookie'], cookieName)
  const plain = sealed === undefined ? undefined : keys.decrypt(sealed, TRANSACTION_AAD)
  if (plain === undefined) return []
  try {
    const value = JSON.parse(plain) as unknown
    if (!Array.isArray(value)) return []
    return (value as Transaction[]).filter(
      (item) =>
        typeof item?.s === 'string' &&
        typeof item.n === 'string' &&
        typeof item.v === 'string' &&
        typeof item.r === 'string' &&
        item.e > now(),
    )
  } catch {
    return []
  }
}
