/**
 * Step-up guards (RFC 9470): a route that needs a stronger or a more recent sign-in than the
 * token shows refuses it with 401 `insufficient_user_authentication`, naming what to ask the
 * provider for (`acr_values`, `max_age`), read from the token's `acr` and `auth_time`. The client
 * signs the user in again with those and retries with the new token.
 *
 * @module
 */
import { InsufficientUserAuthenticationError, TokenMissingError } from '../errors.js'
import type { Admission } from '../types.js'

/** A guard, as `guards.ts` defines it (not imported from there: it builds its factories from these). */
type Guard = (auth: Admission | undefined) => void

// RFC 9470 §3 / OIDC Core §3.1.2.1: `acr_values` is a space-separated list; a value holds no
// space, quote or backslash, so that the challenge cannot be broken by it.
const ACR_VALUE = /^[\x21\x23-\x5B\x5D-\x7E]+$/
/** The largest `max_age` accepted: a year. */
const MAX_AGE_LIMIT = 31_536_000

/**
 * Requires the token's `acr` (the authentication context class the user signed in with) to be one
 * of `values`; otherwise 401 `insufficient_user_authentication` with `acr_values="…"` (every one
 * of `values`, in order of preference for the provider).
 *
 * @throws TypeError at creation when no value is given, or one is empty or holds spaces, quotes or
 * backslashes.
 */
export function requireAcr(...values: string[]): Guard {
  if (
    values.length === 0 ||
    values.some((value) => typeof value !== 'string' || !ACR_VALUE.test(value))
  ) {
    throw new TypeError(
      'requireAcr(): pass one or more acr values (as the provider names them, for example "urn:example:mfa"), each without spaces, quotes or backslashes',
    )
  }
  const accepted = Object.freeze([...new Set(values)])
  return (auth) => {
    if (auth === undefined) throw new TokenMissingError()
    const acr = auth.claims.acr
    if (typeof acr !== 'string' || !accepted.includes(acr)) {
      throw new InsufficientUserAuthenticationError({
        reason: 'acr_insufficient',
        acrValues: accepted,
        detail: { acr: typeof acr === 'string' ? acr : undefined },
      })
    }
  }
}

/** Options of {@link requireRecentSignIn}. */
export interface RecentSignInOptions {
  /**
   * How far ahead of this machine's clock, and of the token's `iat`, an `auth_time` may be and
   * still be taken as a sign-in that happened (the provider's clock may run a little ahead), in
   * seconds, 0 to 300. Default 5, the gate's default `clockToleranceSeconds`: give the same value
   * as the gate's when it sets another. It never lengthens `maxAgeSeconds`.
   */
  readonly clockToleranceSeconds?: number
}

const DEFAULT_TOLERANCE_SECONDS = 5
const MAX_TOLERANCE_SECONDS = 300

const isTime = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value)

/**
 * Requires the user to have signed in at most `maxAgeSeconds` ago, by the token's `auth_time`
 * (RFC 9470 §3; a token without `auth_time` is refused too); otherwise 401
 * `insufficient_user_authentication` with `max_age=…` (reason `authentication_too_old`). Measured
 * on this machine's clock, without tolerance: `maxAgeSeconds` is the bound.
 *
 * An `auth_time` later than now, or later than the token's `iat` (a token issued before the
 * sign-in it reports), by more than `clockToleranceSeconds` is refused the same way, with reason
 * `authentication_in_future`: a sign-in that has not happened yet would otherwise count as recent
 * for ever.
 *
 * @throws TypeError at creation unless `maxAgeSeconds` is an integer from 0 to 31536000 (a year)
 * and `clockToleranceSeconds` one from 0 to 300.
 */
export function requireRecentSignIn(
  maxAgeSeconds: number,
  options: RecentSignInOptions = {},
): Guard {
  if (!Number.isSafeInteger(maxAgeSeconds) || maxAgeSeconds < 0 || maxAgeSeconds > MAX_AGE_LIMIT) {
    throw new TypeError(
      `requireRecentSignIn(): pass the most seconds since sign-in the route accepts, an integer from 0 to ${MAX_AGE_LIMIT}`,
    )
  }
  const tolerance = options?.clockToleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (
    !Number.isSafeInteger(tolerance) ||
    tolerance < 0 ||
    tolerance > MAX_TOLERANCE_SECONDS ||
    (options !== undefined && (typeof options !== 'object' || options === null))
  ) {
    throw new TypeError(
      `requireRecentSignIn(): "clockToleranceSeconds" must be an integer from 0 to ${MAX_TOLERANCE_SECONDS} (the gate's clockToleranceSeconds; default ${DEFAULT_TOLERANCE_SECONDS})`,
    )
  }
  return (auth) => {
    if (auth === undefined) throw new TokenMissingError()
    const { auth_time: authTime, iat } = auth.claims
    const signedInAt = isTime(authTime) ? authTime : undefined
    const now = Date.now() / 1000
    if (signedInAt === undefined || now - signedInAt > maxAgeSeconds) {
      throw new InsufficientUserAuthenticationError({
        reason: 'authentication_too_old',
        maxAgeSeconds,
        detail: { authTime: signedInAt },
      })
    }
    // OIDC Core §2: `auth_time` is when the sign-in happened, so it cannot follow the moment the
    // token was issued (`iat`) nor now; past the tolerance it is a provider's broken clock or a
    // forged claim, and a fresh sign-in is the answer either way.
    if (signedInAt > now + tolerance || (isTime(iat) && signedInAt > iat + tolerance)) {
      throw new InsufficientUserAuthenticationError({
        reason: 'authentication_in_future',
        maxAgeSeconds,
        detail: { authTime: signedInAt, iat: isTime(iat) ? iat : undefined },
      })
    }
  }
}

/** The step-up guard factories as an adapter exposes them (see `GuardMiddlewareFactories`). */
export interface StepUpGuardFactories<Middleware> {
  /**
   * Route middleware: runs the gate when it has not decided on the request, then 401
   * `insufficient_user_authentication` with `acr_values="…"` unless the token's `acr` is one of
   * `values` (RFC 9470).
   */
  requireAcr(...values: string[]): Middleware
  /**
   * Route middleware: runs the gate when it has not decided on the request, then 401
   * `insufficient_user_authentication` with `max_age=…` unless the token's `auth_time` is at most
   * `maxAgeSeconds` ago (RFC 9470), and not later than now or than the token's `iat` by more than
   * `options.clockToleranceSeconds` (default 5).
   */
  requireRecentSignIn(maxAgeSeconds: number, options?: RecentSignInOptions): Middleware
}

/** Builds the step-up guard factories from an adapter's one way of turning a guard into middleware. */
export function stepUpMiddleware<Middleware>(
  wrap: (guard: Guard) => Middleware,
): StepUpGuardFactories<Middleware> {
  return {
    requireAcr: (...values) => wrap(requireAcr(...values)),
    requireRecentSignIn: (maxAgeSeconds, options) =>
      wrap(requireRecentSignIn(maxAgeSeconds, options)),
  }
}
