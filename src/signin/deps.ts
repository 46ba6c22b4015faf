/**
 * What sign-in's routes share, built once by `createSignIn()` and passed to each route: the
 * settings, the provider, the key ring, the store guard, the cookies and the one place a refusal
 * becomes a response. Each route takes this and the request; none holds the others in a closure.
 *
 * @module
 */
import type { NormalizedParameters } from '../client/parameters.js'
import { createEmit, type Emit } from '../events.js'
import { warnOnce } from '../warnings.js'
import { configurationWarning } from './config-warnings.js'
import { readCookie, serializeCookie } from './cookies.js'
import { SignInError } from './errors.js'
import type { SignInEvent } from './events.js'
import type { SignInRequest, SignInResponse } from './internals.js'
import type { KeyRing } from './key-ring.js'
import { createKeyRingSource } from './key-source.js'
import type { NormalizedSignInOptions } from './options.js'
import { createSignInProvider, type SignInProvider } from './provider.js'
import { safeReturnTo } from './return-to.js'

const JSON_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
}

/** The cookies sign-in sets, serialized with this deployment's attributes. */
export interface SignInCookies {
  /** The session cookie carrying `value` (the signed session id). */
  session(value: string, maxAgeSeconds: number): string
  /** The session cookie, cleared. */
  readonly clearSession: string
  /** The transaction cookie carrying `value` (the sealed sign-ins under way). */
  transaction(value: string, maxAgeSeconds: number): string
}

/** What sign-in's routes share. */
export interface SignInDeps {
  readonly settings: NormalizedSignInOptions
  readonly provider: SignInProvider
  /** The provider's issuer identifier. */
  readonly issuer: string
  readonly emit: Emit<SignInEvent>
  readonly cookies: SignInCookies
  /** The key ring; `ERR_SIGNIN_UNAVAILABLE` (`keys_unavailable`) when it cannot be read. */
  keyRing(): Promise<KeyRing>
  /** A store operation; its failure is a 503, never a sign-out. */
  stored<T>(operation: Promise<T>): Promise<T>
  /** A refusal as a JSON response (and its event, or its warning when nobody listens). */
  errorResponse(error: SignInError, cookies?: readonly string[]): SignInResponse
  /** The login route with `returnTo` (same-origin paths only). */
  loginPath(returnTo?: string): string
  /** The name and request parameters of a product (`undefined`: the default one). */
  productOf(product: string | undefined): {
    name: string
    parameters: NormalizedParameters | undefined
  }
  /** The session id of the request's session cookie, when this ring signed it. */
  readSessionId(keys: KeyRing, request: SignInRequest): string | undefined
}

/** A response sign-in answers with; never cached (it sets cookies or redirects with state). */
export function respond(
  status: number,
  headers: Record<string, string | readonly string[]>,
  body = '',
): SignInResponse {
  return { status, headers: { 'Cache-Control': 'no-store', ...headers }, body }
}

/** A route's refusal of a method, with `Allow`. */
export function methodNotAllowed(deps: SignInDeps, allowed: string): SignInResponse {
  const response = deps.errorResponse(new SignInError('ERR_SIGNIN_BAD_REQUEST', 'method'))
  return { ...response, headers: { ...response.headers, Allow: allowed } }
}

/** Builds what the routes of one sign-in share, from its validated options. */
export function createSignInDeps(settings: NormalizedSignInOptions): SignInDeps {
  const { client, now, routes } = settings
  const provider = createSignInProvider(
    client,
    { algorithms: settings.idTokenAlgorithms, hmac: settings.idTokenHmac },
    settings.clockToleranceSeconds,
  )
  const issuer = provider.issuer
  const emit = createEmit<SignInEvent>(settings.onEvent)

  const cookieAttributes = (path: string, maxAgeSeconds: number | undefined) => ({
    path,
    secure: settings.secureCookie,
    sameSite: 'Lax' as const,
    maxAgeSeconds,
  })
  const sessionCookie = (value: string, maxAgeSeconds: number) =>
    serializeCookie(settings.cookieName, value, cookieAttributes('/', maxAgeSeconds))
  const cookies: SignInCookies = {
    session: sessionCookie,
    clearSession: sessionCookie('', 0),
    // Path=/ so that it can carry the __Host- prefix: a sibling subdomain cannot plant its own
    // transaction (cookie tossing, which would sign the victim in as the attacker).
    transaction: (value, maxAgeSeconds) =>
      serializeCookie(settings.transactionCookieName, value, cookieAttributes('/', maxAgeSeconds)),
  }

  async function stored<T>(operation: Promise<T>): Promise<T> {
    try {
      return await operation
    } catch (error) {
      emit?.({ type: 'store_error', error })
      throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'store_unavailable', error)
    }
  }

  function errorResponse(error: SignInError, cookies: readonly string[] = []): SignInResponse {
    if (emit === undefined) {
      // Without a listener, a configuration failure would be a bare 503 or 500 with nothing in
      // the logs: once per code and subject every 10 minutes, never per request.
      const warning = configurationWarning(error, settings)
      if (warning !== undefined) warnOnce({ ...warning, now })
    }
    emit?.({
      type: 'signin_refused',
      code: error.code,
      reason: error.reason,
      error: error.cause,
      ...(error.provider === undefined ? {} : { provider: error.provider }),
    })
    return {
      status: error.status,
      headers: {
        ...JSON_HEADERS,
        ...error.headers,
        ...(cookies.length === 0 ? {} : { 'Set-Cookie': cookies }),
      },
      body: JSON.stringify({ error: error.error, error_description: error.message }),
    }
  }

  function productOf(product: string | undefined) {
    const name = product ?? settings.defaultProduct
    if (name === undefined) return { name: '', parameters: undefined }
    const parameters = settings.products.get(name)
    if (parameters === undefined) {
      throw new TypeError(
        `accessToken(product): "${name}" is not one of the products given to createSignIn(options)`,
      )
    }
    return { name, parameters }
  }

  return {
    settings,
    provider,
    issuer,
    emit,
    cookies,
    keyRing: createKeyRingSource(settings, issuer, emit),
    stored,
    errorResponse,
    loginPath: (returnTo) =>
      `${routes.login}?returnTo=${encodeURIComponent(safeReturnTo(returnTo) ?? '/')}`,
    productOf,
    readSessionId(keys, request) {
      const signed = readCookie(request.headers['cookie'], settings.cookieName)
      return signed === undefined ? undefined : keys.verify(signed)
    },
  }
}
