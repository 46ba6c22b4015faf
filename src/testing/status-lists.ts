/**
 * Token Status Lists the test issuer publishes (draft-ietf-oauth-status-list): a list per name and
 * realm, served at `{issuer}/statuslists/{name}` as a Status List Token signed with the realm's
 * current key (`typ: statuslist+jwt`, `sub` its own URL, `iat`, `exp`, `ttl`), whose statuses a
 * test sets. Tokens name an index of it with `status: list.reference(idx)`.
 *
 * @module
 */
import { encodeStatusList, type StatusBits } from '../status/bits.js'
import type { Reply } from './http.js'

/** A status list of the test issuer, as a test drives it. */
export interface TestStatusList {
  /** Where the list is served: `{issuer}/statuslists/{name}`. */
  readonly uri: string
  /** The `status` claim of a token at `idx` of this list (§6.1). */
  reference(idx: number): { readonly status_list: { readonly idx: number; readonly uri: string } }
  /**
   * Sets the status at `idx`: 0 VALID, 1 INVALID (revoked), 2 SUSPENDED, or another value the
   * list's `bits` can hold. Served from the next fetch on.
   */
  set(idx: number, status: number): void
  /** The status at `idx` (0 unless set). */
  get(idx: number): number
  /** How many times the list was fetched. */
  readonly fetchCount: number
}

/** Options of {@link TestStatusList}, given when it is first asked for. */
export interface TestStatusListOptions {
  readonly realm?: string | undefined
  /** Bits per status: 1, 2, 4 or 8 (default 2: VALID, INVALID, SUSPENDED). */
  readonly bits?: StatusBits | undefined
  /** Statuses the list holds (default 1024; indexes past it are outside the list). */
  readonly size?: number | undefined
  /** The list's `ttl`, in seconds (default 60). */
  readonly ttlSeconds?: number | undefined
}

/** One published list. */
export class StatusListState implements TestStatusList {
  readonly uri: string
  readonly bits: StatusBits
  readonly ttlSeconds: number
  private readonly statuses: Uint8Array
  fetchCount = 0

  constructor(uri: string, options: TestStatusListOptions) {
    const { bits = 2, size = 1024, ttlSeconds = 60 } = options
    if (bits !== 1 && bits !== 2 && bits !== 4 && bits !== 8) {
      throw new TypeError('statusList(): "bits" must be 1, 2, 4 or 8')
    }
    if (!Number.isInteger(size) || size < 1 || size > 16_777_216) {
      throw new TypeError('statusList(): "size" must be a whole number from 1 to 16777216')
    }
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) {
      throw new TypeError(
        'statusList(): "ttlSeconds" must be a whole number of seconds, at least 1',
      )
    }
    this.uri = uri
    this.bits = bits
    this.ttlSeconds = ttlSeconds
    this.statuses = new Uint8Array(size)
  }

  reference(idx: number) {
    return { status_list: { idx, uri: this.uri } }
  }

  set(idx: number, status: number): void {
    if (!Number.isInteger(idx) || idx < 0 || idx >= this.statuses.length) {
      throw new RangeError(`set(): index ${idx} is outside the list (size ${this.statuses.length})`)
    }
    if (!Number.isInteger(status) || status < 0 || status >= 2 ** this.bits) {
      throw new RangeError(
        `set(): status must be from 0 to ${2 ** this.bits - 1} with ${this.bits} bits`,
      )
    }
    this.statuses[idx] = status
  }

  get(idx: number): number {
    return this.statuses[idx] ?? 0
  }

  /** The list's payload as of now. */
  payload(nowSeconds: number): Record<string, unknown> {
    return {
      sub: this.uri,
      iat: nowSeconds,
      exp: nowSeconds + 86_400,
      ttl: this.ttlSeconds,
      status_list: { bits: this.bits, lst: encodeStatusList(this.statuses, this.bits) },
    }
  }
}

/** The reply of a list fetch, signed by `sign`. */
export async function statusListReply(
  list: StatusListState,
  sign: (header: Record<string, unknown>, payload: Record<string, unknown>) => Promise<string>,
): Promise<Reply> {
  list.fetchCount += 1
  const jwt = await sign({ typ: 'statuslist+jwt' }, list.payload(Math.floor(Date.now() / 1000)))
  return {
    status: 200,
    headers: { 'content-type': 'application/statuslist+jwt', 'cache-control': 'no-cache' },
    body: jwt,
  }
}
