/**
 * Verification of a Security Event Token (RFC 8417) as the Shared Signals Framework 1.0 §4
 * profiles it: a JWS with `typ: secevent+jwt`, signed by a key of the transmitter's key set
 * (the gate's JWS parser, algorithm allow-list and key sets, as logout tokens are), from the
 * transmitter (`iss`), for this receiver (`aud`), issued within the `iat` window, with a `jti`,
 * a subject and exactly one event (SSF 1.0 §4.1.8).
 *
 * @module
 */

import { LogoutRefusal, verifyProviderJWS } from '../revocation/logout-token.js'
import { DEFAULT_ALGORITHMS } from '../token/algorithms.js'
import type { IssuerKeys } from '../token/jwks.js'
import type { SignalRefusalReason } from './events.js'
import type { SetErrorCode } from './vocabulary.js'

/** A SET that passed every check but the `jti` de-duplication (the caller's, which owns the store). */
export interface VerifiedSET {
  readonly issuer: string
  readonly jti: string
  readonly iat: number
  /** The one event's type (a URI) and payload. */
  readonly event: string
  readonly payload: Readonly<Record<string, unknown>>
  /** `sub_id`, else the event payload's `subject` (drafts before SSF 1.0). */
  readonly subject: unknown
  /** When the event happened (seconds): CAEP's `event_timestamp`, else RFC 8417's `toe`, else `iat`. */
  readonly eventTime: number
}

/** What verification needs. */
export interface SETRules {
  readonly issuer: string
  readonly keys: IssuerKeys
  readonly audiences: ReadonlySet<string>
  readonly maxAgeSeconds: number
  readonly clockToleranceSeconds: number
  readonly maxTokenBytes: number
}

/** A refused SET: the RFC 8935 §2.4 code to answer, the reason to report, and whether to retry. */
export class SetRefusal extends Error {
  readonly err: SetErrorCode | undefined
  readonly reason: SignalRefusalReason
  readonly issuer: string | undefined
  /** Set when the SET was not judged (keys could not be had): answer 503 with this Retry-After. */
  readonly retryAfterSeconds: number | undefined

  constructor(
    reason: SignalRefusalReason,
    options: { issuer?: string | undefined; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(
      'invalid security event token',
      options.cause === undefined ? undefined : { cause: options.cause },
    )
    this.name = 'SetRefusal'
    this.reason = reason
    this.issuer = options.issuer
    this.retryAfterSeconds = options.retryAfterSeconds
    this.err = options.retryAfterSeconds !== undefined ? undefined : ERR_OF[reason]
  }
}

/** RFC 8935 §2.4: which code each refusal is answered with. */
const ERR_OF: Partial<Record<SignalRefusalReason, SetErrorCode>> = {
  request: 'invalid_request',
  malformed: 'invalid_request',
  token_type: 'invalid_request',
  algorithm: 'invalid_request',
  header: 'invalid_request',
  issued_in_future: 'invalid_request',
  too_old: 'invalid_request',
  missing_claim: 'invalid_request',
  events: 'invalid_request',
  subject: 'invalid_request',
  // "One or more keys used to … sign the SET is invalid or otherwise unacceptable".
  signature: 'invalid_key',
  unknown_kid: 'invalid_key',
  unknown_issuer: 'invalid_issuer',
  audience: 'invalid_audience',
  authentication: 'authentication_failed',
}

/** SSF 1.0 §4.1.1 and RFC 8417 §2.3: explicit typing; no other `typ` is a SET. */
const SET_MEDIA_TYPES = new Set(['secevent+jwt', 'application/secevent+jwt'])
const ALGORITHMS = new Set<string>(DEFAULT_ALGORITHMS)
const MAX_ID_LENGTH = 1024

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
const isNumericDate = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value)

function hasAudience(aud: unknown, accepted: ReadonlySet<string>): boolean {
  if (typeof aud === 'string') return accepted.has(aud)
  if (!Array.isArray(aud) || aud.length === 0) return false
  return aud.every((item) => typeof item === 'string') && aud.some((item) => accepted.has(item))
}

/** Turns the shared JWS verifier's refusal into a SET refusal. */
function refusalOf(error: LogoutRefusal): SetRefusal {
  const { reason } = error
  if (reason === 'keys_unavailable') {
    return new SetRefusal('keys_unavailable', {
      retryAfterSeconds: error.retryAfterSeconds ?? 30,
      cause: error,
    })
  }
  const known: SignalRefusalReason[] = [
    'malformed',
    'token_type',
    'algorithm',
    'header',
    'signature',
    'unknown_kid',
    'unknown_issuer',
  ]
  const mapped = reason === 'too_large' ? 'request' : known.find((item) => item === reason)
  return new SetRefusal(mapped ?? 'malformed', { cause: error })
}

/**
 * Verifies a SET.
 *
 * @throws SetRefusal for every refusal, `retryAfterSeconds` set when the keys could not be had.
 */
export async function verifySET(
  token: string,
  rules: SETRules,
  nowMs: number,
): Promise<VerifiedSET> {
  let verified: Awaited<ReturnType<typeof verifyProviderJWS>>
  try {
    verified = await verifyProviderJWS(
      token,
      {
        keys: new Map([[rules.issuer, { keys: rules.keys }]]),
        algorithms: ALGORITHMS,
        maxTokenBytes: rules.maxTokenBytes,
      },
      'iss',
      SET_MEDIA_TYPES,
    )
  } catch (error) {
    if (error instanceof LogoutRefusal) throw refusalOf(error)
    throw error
  }
  const { issuer, header, payload } = verified
  const refuse = (reason: SignalRefusalReason) => new SetRefusal(reason, { issuer })
  // The shared verifier lets an untyped JWS through (logout tokens predate explicit typing);
  // SSF 1.0 requires the type, so an ID or access token can never be taken for a SET.
  if (typeof header.typ !== 'string') throw refuse('token_type')
  if (!hasAudience(payload.aud, rules.audiences)) throw refuse('audience')
  const { iat, jti, events } = payload
  if (!isNumericDate(iat) || typeof jti !== 'string' || jti === '' || jti.length > MAX_ID_LENGTH) {
    throw refuse('missing_claim')
  }
  const now = nowMs / 1000
  if (iat > now + rules.clockToleranceSeconds) throw refuse('issued_in_future')
  // The window a retry may arrive in; the jti is remembered as long, so a replay past it is too old.
  if (iat < now - rules.maxAgeSeconds - rules.clockToleranceSeconds) throw refuse('too_old')
  // RFC 8417 §2.2 and SSF 1.0 §4.1.8: `events` is an object; SSF allows exactly one event per SET.
  if (!isObject(events)) throw refuse('events')
  const types = Object.keys(events)
  if (types.length !== 1) throw refuse('events')
  const event = types[0] as string
  const eventPayload = events[event]
  if (!isObject(eventPayload)) throw refuse('events')
  // RFC 8417 §2.2: a SET is not an access or ID token; a `sub` at top level means another use.
  const subject = payload.sub_id ?? eventPayload.subject
  if (subject === undefined) throw refuse('subject')
  const timestamp = eventPayload.event_timestamp ?? payload.toe
  if (timestamp !== undefined && !isNumericDate(timestamp)) throw refuse('malformed')
  return {
    issuer,
    jti,
    iat,
    event,
    payload: eventPayload,
    subject,
    eventTime: (timestamp as number | undefined) ?? iat,
  }
}
