/**
 * The gate's Token Status List step (draft-ietf-oauth-status-list §8): after a token's signature
 * and claims are verified (cache hits included, since a status changes while a token is cached),
 * a token whose `status.status_list` names `{ idx, uri }` is admitted only while the list at `uri`,
 * signed by the token's own issuer, says VALID (0x00) at `idx`. INVALID and SUSPENDED are 401
 * with reasons of their own, any other value likewise, and an index past the list's end too
 * (§8.2). A list that cannot be had is 503, never an unchecked admission, unless the options
 * allow a bounded staleness. A held list costs a map lookup and a bit read per request.
 *
 * @module
 */
import { type ErrorOptions, InvalidTokenError, ServiceUnavailableError } from '../errors.js'
import type { Emit, GateEvent } from '../events.js'
import { isLoopback } from '../token/issuers.js'
import type { IssuerKeys } from '../token/jwks.js'
import type { VerifiedToken } from '../token/verify.js'
import { STATUS_INVALID, STATUS_SUSPENDED, type StatusBitList } from './bits.js'
import { StatusLists } from './lists.js'
import type { NormalizedStatusListOptions } from './options.js'

/** How long a client should wait before retrying when a list could not be had, in seconds. */
const UNAVAILABLE_RETRY_SECONDS = 5
const MAX_URI_LENGTH = 2_048

/** The status list step of one gate. */
export interface StatusListStep {
  /**
   * `undefined` when the token may go on; the refusal when it may not and that is known now; a
   * promise when its list must be fetched first (it resolves when the token may go on, and
   * rejects with the refusal otherwise).
   */
  judge(verified: VerifiedToken): InvalidTokenError | undefined | Promise<void>
  /** Aborts list fetches under way and starts no new ones. */
  close(): void
}

export interface StatusListContext {
  readonly keysOf: (issuer: string) => IssuerKeys | undefined
  readonly algorithms: ReadonlySet<string>
  readonly clockToleranceSeconds: number
  readonly emit: Emit<GateEvent>
  readonly now?: (() => number) | undefined
}

type StatusReason =
  | 'status_invalid'
  | 'status_suspended'
  | 'status_unrecognized'
  | 'status_index'
  | 'status_missing'
  | 'status_list_uri'
  | 'malformed_claim'

function refuse(reason: StatusReason, detail?: ErrorOptions['detail']): InvalidTokenError {
  return new InvalidTokenError({ reason, detail })
}

/** What a `status_list` reference names, or the refusal of a malformed one. */
function referenceOf(
  claims: Readonly<Record<string, unknown>>,
  required: boolean,
): { readonly idx: number; readonly uri: string } | InvalidTokenError | undefined {
  const status = claims.status
  if (status === undefined) return required ? refuse('status_missing') : undefined
  if (typeof status !== 'object' || status === null || Array.isArray(status)) {
    return refuse('malformed_claim', { claim: 'status' })
  }
  const reference = Object.hasOwn(status, 'status_list')
    ? (status as Record<string, unknown>).status_list
    : undefined
  // Another status mechanism only (§6.1 allows others): not ours to judge.
  if (reference === undefined) return required ? refuse('status_missing') : undefined
  if (typeof reference !== 'object' || reference === null || Array.isArray(reference)) {
    return refuse('malformed_claim', { claim: 'status' })
  }
  const { idx, uri } = reference as Record<string, unknown>
  if (typeof idx !== 'number' || !Number.isSafeInteger(idx) || idx < 0) {
    return refuse('malformed_claim', { claim: 'status' })
  }
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > MAX_URI_LENGTH) {
    return refuse('malformed_claim', { claim: 'status' })
  }
  return { idx, uri }
}

/** Whether a list may be fetched from `uri` for tokens of `issuer`. */
function uriAllowed(uri: string, issuer: string, prefixes: readonly string[]): boolean {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return false
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '') return false
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    return false
  }
  // The URL as parsed: `https://idp.example@evil/` or dot segments cannot pass for an allowed one.
  const href = url.href
  let issuerOrigin: string | undefined
  try {
    issuerOrigin = new URL(issuer).origin
  } catch {
    issuerOrigin = undefined
  }
  if (url.origin === issuerOrigin) return true
  return prefixes.some((prefix) => href.startsWith(prefix))
}

function verdictOf(list: StatusBitList, idx: number): InvalidTokenError | undefined {
  const value = list.at(idx)
  if (value === 0) return undefined
  if (value === undefined) return refuse('status_index', { size: list.size })
  if (value === STATUS_INVALID) return refuse('status_invalid')
  if (value === STATUS_SUSPENDED) return refuse('status_suspended')
  return refuse('status_unrecognized', { status: value })
}

/** Builds the step from validated options. */
export function createStatusListStep(
  options: NormalizedStatusListOptions,
  context: StatusListContext,
): StatusListStep {
  const controller = new AbortController()
  const lists = new StatusLists(options, { ...context, signal: controller.signal })
  const { required, allowedUriPrefixes } = options

  async function judgeAfterFetch(uri: string, idx: number, issuer: string): Promise<void> {
    const list = await lists.load(uri, issuer)
    if (list === 'unavailable') {
      throw new ServiceUnavailableError({
        code: 'ERR_STATUS_LIST_UNAVAILABLE',
        retryAfterSeconds: UNAVAILABLE_RETRY_SECONDS,
      })
    }
    const refusal = verdictOf(list, idx)
    if (refusal !== undefined) throw refusal
  }

  return {
    judge(verified) {
      const reference = referenceOf(verified.claims, required)
      if (reference === undefined || reference instanceof InvalidTokenError) return reference
      const { uri, idx } = reference
      const { issuer } = verified
      const held = lists.lookupNow(uri, issuer)
      if (held !== undefined) return verdictOf(held, idx)
      if (!uriAllowed(uri, issuer, allowedUriPrefixes)) return refuse('status_list_uri')
      return judgeAfterFetch(uri, idx, issuer)
    },
    close() {
      controller.abort()
    },
  }
}
