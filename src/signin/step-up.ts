/**
 * Step-up sign-in (RFC 9470 §4): an API refused the user's token with
 * `insufficient_user_authentication`, naming `acr_values` and/or `max_age`; the user signs in
 * again through the login route with those (`?acrValues=…&maxAge=…&returnTo=…`), the provider
 * authenticates them as asked, and the callback checks that the new ID token says so (`auth_time`
 * by openid-client's `maxAge` check, `acr` here) before opening the new session.
 *
 * @module
 */
import { SignInError } from './errors.js'

/** What `req.signin.stepUpPath()` takes: the challenge's parameters, and where to come back to. */
export interface StepUpOptions {
  /**
   * The authentication context classes the API accepts (the challenge's `acr_values`, as
   * `StepUpRequiredError.acrValues` of `tollgate/client` has them), most preferred first.
   */
  readonly acrValues?: readonly string[] | undefined
  /** The most seconds since sign-in the API accepts (the challenge's `max_age`); 0: sign in now. */
  readonly maxAge?: number | undefined
  /** Where to come back to after signing in (same-origin paths only; anything else becomes `/`). */
  readonly returnTo?: string | undefined
}

/** The step-up a login request asks for: `acr_values` (space-separated) and `max_age`. */
export interface StepUpRequest {
  readonly acrValues: string | undefined
  readonly maxAge: number | undefined
}

// An acr value holds no space, quote or backslash (it travels space-separated, RFC 9470 §3).
const ACR_VALUE = /^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/
const MAX_ACR_VALUES = 16
const MAX_AGE = /^\d{1,9}$/

function acrList(values: readonly unknown[]): string | undefined {
  if (values.length === 0) return undefined
  if (
    values.length > MAX_ACR_VALUES ||
    values.some((value) => typeof value !== 'string' || !ACR_VALUE.test(value))
  ) {
    return 'invalid'
  }
  return values.join(' ')
}

/**
 * The login route's step-up parameters: `acrValues` (space-separated) and `maxAge` (seconds).
 *
 * @throws SignInError `ERR_SIGNIN_BAD_REQUEST` (400, reason `step_up_request`) when either is
 * present and not valid: a sign-in without them would only be refused by the API again.
 */
export function readStepUp(url: URL): StepUpRequest {
  const acrParameter = url.searchParams.get('acrValues')
  const maxAgeParameter = url.searchParams.get('maxAge')
  const acrValues =
    acrParameter === null ? undefined : acrList(acrParameter.split(' ').filter(Boolean))
  if (acrValues === 'invalid' || (acrParameter !== null && acrValues === undefined)) {
    throw new SignInError('ERR_SIGNIN_BAD_REQUEST', 'step_up_request')
  }
  if (maxAgeParameter !== null && !MAX_AGE.test(maxAgeParameter)) {
    throw new SignInError('ERR_SIGNIN_BAD_REQUEST', 'step_up_request')
  }
  return {
    acrValues,
    maxAge: maxAgeParameter === null ? undefined : Number(maxAgeParameter),
  }
}

/**
 * The login route's path for a step-up: `loginPath(returnTo)` with `acrValues` and `maxAge`.
 *
 * @throws TypeError when `acrValues` is not an array of acr values (no spaces, quotes or
 * backslashes) or `maxAge` not an integer from 0 to 999999999.
 */
export function stepUpPath(
  loginPath: (returnTo?: string) => string,
  options: StepUpOptions = {},
): string {
  const { acrValues, maxAge, returnTo } = options
  const acr =
    acrValues === undefined ? undefined : Array.isArray(acrValues) ? acrList(acrValues) : 'invalid'
  if (acr === 'invalid') {
    throw new TypeError(
      'stepUpPath(): "acrValues" must be an array of acr values (as the API challenge named them), each without spaces, quotes or backslashes',
    )
  }
  if (
    maxAge !== undefined &&
    !(Number.isSafeInteger(maxAge) && maxAge >= 0 && maxAge <= 999_999_999)
  ) {
    throw new TypeError('stepUpPath(): "maxAge" must be an integer number of seconds, 0 or more')
  }
  let path = loginPath(returnTo)
  if (acr !== undefined) path += `&acrValues=${encodeURIComponent(acr)}`
  if (maxAge !== undefined) path += `&maxAge=${maxAge}`
  return path
}

/**
 * Checks the new ID token's `acr` against the `acr_values` the sign-in asked for: the provider
 * treats them as voluntary (OIDC Core §3.1.2.1) and may sign the user in with another class, which
 * the API would refuse again.
 *
 * @throws SignInError `ERR_SIGNIN_REFUSED` (reason `acr`) when the ID token's `acr` is not one of
 * them, compared as whole values of the space-separated list (`phr` is not `phrh`, nor part of it).
 */
export function checkAcr(requested: string | undefined, claims: Readonly<Record<string, unknown>>) {
  if (requested === undefined) return
  const acr = claims['acr']
  if (typeof acr !== 'string' || !requested.split(' ').includes(acr)) {
    throw new SignInError('ERR_SIGNIN_REFUSED', 'acr')
  }
}

const isTime = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value)

/**
 * With a step-up's `max_age`, checks that the new ID token's `auth_time` is a sign-in that
 * happened: not later than now, nor than the ID token's `iat`, by more than the tolerance.
 * openid-client checks only that it is not older than `max_age` (OpenID Connect Core §3.1.3.7
 * step 13), so an `auth_time` in the future would pass any `max_age`.
 *
 * @throws SignInError `ERR_SIGNIN_CALLBACK_INVALID` (reason `auth_time`) when it is later.
 */
export function checkAuthTime(
  maxAge: number | undefined,
  claims: Readonly<Record<string, unknown>>,
  nowMs: number,
  toleranceSeconds: number,
): void {
  if (maxAge === undefined) return
  const authTime = claims['auth_time']
  const iat = claims['iat']
  if (
    !isTime(authTime) ||
    authTime > nowMs / 1000 + toleranceSeconds ||
    (isTime(iat) && authTime > iat + toleranceSeconds)
  ) {
    throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'auth_time')
  }
}
