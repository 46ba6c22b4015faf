/**
 * `createSignIn()`: sign-in for a product backend (OAuth 2.0 Authorization Code with PKCE, OpenID
 * Connect), framework-neutral. It answers the login, callback and logout routes, loads the
 * session of every other request, and hands handlers the user's access tokens, refreshed before
 * they expire, one refresh per session however many requests, tabs or instances ask at once.
 * `tollgate/express` and `tollgate/koa` translate requests and responses, nothing more.
 *
 * @module
 */
import * as oidc from 'openid-client'

import { resolveSecret } from '../client/secrets.js'
import { createEmit } from '../events.js'
import { warnOnce } from '../warnings.js'
import { createBackChannelLogout } from './backchannel.js'
import { configurationWarning, keyRingWarning } from './config-warnings.js'
import { readCookie, serializeCookie } from './cookies.js'
import { isSignInError, SignInError } from './errors.js'
import type { SessionEndReason, SignInEvent } from './events.js'
import type { SessionEnder, SignInRequest, SignInResponse } from './internals.js'
import { createKeyRing, type KeyRing, parseKeyRingText, type SignInKey } from './key-ring.js'
import { normalizeSignInOptions, type SignInOptions } from './options.js'
import { createSignInProvider } from './provider.js'
import { createRefresher } from './refresh.js'
import { safeReturnTo } from './return-to.js'
import {
  indexOf,
  newSessionId,
  type OpenSession,
  openSession,
  PROFILE_CLAIMS,
  sealedUnderUnknownKey,
  sealSession,
  storeKeyOf,
} from './session.js'

export type { SessionEnder, SignInInternals, SignInRequest, SignInResponse } from './internals.js'

/** The signed-in user, from the ID token (profile claims only). */
export interface SignedInUser {
  readonly issuer: string
  readonly subject: string
  /** The provider's session id (`sid`), when it sends one. */
  readonly sid: string | undefined
  /** Profile claims: `name`, `email`, `preferred_username`… */
  readonly claims: Readonly<Record<string, unknown>>
}

/** What a handler sees: `req.signin` (Express), `ctx.state.signin` (Koa). */
export interface SignInContext {
  /** The user, or `undefined` when the request carries no live session. */
  readonly user: SignedInUser | undefined
  /**
   * The user's access token for `product` (a name from the `products` option; default: the
   * first product, or the sign-in's own token when there are none). Answered from the session
   * while it has more than `refresh.beforeExpirySeconds` left; refreshed otherwise, once per
   * session across every instance sharing the store.
   *
   * @throws SignInError `ERR_SIGNIN_REQUIRED` (401) when there is no session or it ended (the
   * refresh token was refused: `invalid_grant`); `ERR_CLIENT_REFUSED` (500) when the token
   * endpoint refused this client (a configuration error; the session stays);
   * `ERR_SIGNIN_UNAVAILABLE` (503) when the provider or the store cannot be reached.
   * @throws TypeError when `product` is not one of the `products`.
   */
  accessToken(product?: string): Promise<string>
  /** The login route with `returnTo` (same-origin paths only; anything else becomes `/`). */
  loginPath(returnTo?: string): string
}

/** What {@link SignIn.handle} decided. */
export type SignInOutcome =
  | { readonly response: SignInResponse; readonly context?: undefined }
  | {
      readonly response?: undefined
      readonly context: SignInContext
      /** Headers to add to the application's response (a `Set-Cookie` clearing a dead session). */
      readonly headers: Readonly<Record<string, readonly string[]>>
    }

/** Sign-in, framework-neutral. */
export interface SignIn {
  /** Answers a sign-in route, or loads the session of any other request. */
  handle(request: SignInRequest): Promise<SignInOutcome>
  /** `undefined` when the request has a user; otherwise a redirect to sign in (pages) or a 401 (APIs). */
  requireUser(
    context: SignInContext | undefined,
    request: SignInRequest,
  ): SignInResponse | undefined
  /** The redirect URI to register at the provider. */
  readonly redirectUri: string
}

const TRANSACTION_AAD = 'tollgate/signin v1\0transaction'
/** How often a key ring given as a function or `fromEnv()` is read again: 5 minutes. */
export const KEY_RING_REREAD_MS = 300_000
const TRANSACTION_SECONDS = 600
/** Sign-ins one browser may have under way at once (tabs); the oldest is dropped beyond that. */
const MAX_TRANSACTIONS = 4
const JSON_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
}

interface Transaction {
  readonly s: string
  readonly n: string
  readonly v: string
  readonly r: string
  readonly e: number
}

/**
 * Creates sign-in. Validates the options; reads the key ring and contacts the provider on the
 * first request that needs them.
 *
 * @example
 * ```ts
 * import { createRedisSessionStore, createSignIn, fromEnv, keycloak } from 'tollgate/signin'
 *
 * const signIn = createSignIn({
 *   issuer: keycloak({ authUrl: 'https://sso.example.com', realm: 'acme' }),
 *   clientId: 'office-web',
 *   clientSecret: fromEnv('OFFICE_WEB_SECRET'),
 *   baseUrl: 'https://office.example.com',
 *   keys: fromEnv('SIGNIN_KEYS'),
 *   store: createRedisSessionStore({ redis }),
 *   products: { office: { resource: 'https://office.example.com' } },
 * })
 * ```
 * @throws TypeError at creation when `options` are invalid (naming the option, never a secret).
 */
export function createSignIn(options: SignInOptions): SignIn {
  const settings = normalizeSignInOptions(options)
  const { client, store, now, routes } = settings
  const provider = createSignInProvider(client)
  const backChannel = createBackChannelLogout(() => provider.jwksUri())
  const issuer = provider.issuer
  const emit = createEmit<SignInEvent>(settings.onEvent)
  let ring: Promise<KeyRing> | undefined
  let ringReadAt = 0

  const cookieAttributes = (path: string, maxAgeSeconds: number | undefined) => ({
    path,
    secure: settings.secureCookie,
    sameSite: 'Lax' as const,
    maxAgeSeconds,
  })
  const sessionCookie = (value: string, maxAgeSeconds: number) =>
    serializeCookie(settings.cookieName, value, cookieAttributes('/', maxAgeSeconds))
  const clearSessionCookie = sessionCookie('', 0)
  // Path=/ so that it can carry the __Host- prefix: a sibling subdomain cannot plant its own
  // transaction (cookie tossing, which would sign the victim in as the attacker).
  const transactionCookie = (value: string, maxAgeSeconds: number) =>
    serializeCookie(settings.transactionCookieName, value, cookieAttributes('/', maxAgeSeconds))

  const readRing = async (): Promise<KeyRing> => {
    const value = await resolveSecret<string | readonly SignInKey[]>(
      settings.keys,
      { clientId: client.clientId, issuer, option: 'keys' },
      (input): input is string | readonly SignInKey[] =>
        typeof input === 'string' || Array.isArray(input),
    )
    return createKeyRing(typeof value === 'string' ? parseKeyRingText(value) : value)
  }
  // A ring from a function or the environment is read again every KEY_RING_REREAD_MS, so that
  // a rotation reaches running processes; a ring given as an array never changes.
  const rereadRing = !Array.isArray(settings.keys)

  function keyRing(): Promise<KeyRing> {
    if (ring !== undefined && rereadRing && now() - ringReadAt >= KEY_RING_REREAD_MS) {
      const previous = ring
      ringReadAt = now()
      // A failed re-read keeps the ring in use (a secrets manager's hiccup signs nobody out);
      // the next re-read is due KEY_RING_REREAD_MS later.
      ring = readRing().catch(() => previous)
    }
    if (ring === undefined) {
      ringReadAt = now()
      ring = readRing().catch((error: unknown) => {
        // Not kept: a key mounted a moment later is read by the next request.
        ring = undefined
        if (emit === undefined) warnOnce({ ...keyRingWarning(settings), now })
        throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'keys_unavailable', error)
      })
    }
    return ring
  }

  /** A store operation; its failure is a 503, never a sign-out. */
  async function stored<T>(operation: Promise<T>): Promise<T> {
    try {
      return await operation
    } catch (error) {
      emit?.({ type: 'store_error', error })
      throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'store_unavailable', error)
    }
  }

  function respond(
    status: number,
    headers: Record<string, string | readonly string[]>,
    body = '',
  ): SignInResponse {
    return { status, headers: { 'Cache-Control': 'no-store', ...headers }, body }
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

  function methodNotAllowed(allowed: string): SignInResponse {
    const response = errorResponse(new SignInError('ERR_SIGNIN_BAD_REQUEST', 'method'))
    return { ...response, headers: { ...response.headers, Allow: allowed } }
  }

  const loginPath = (returnTo?: string) =>
    `${routes.login}?returnTo=${encodeURIComponent(safeReturnTo(returnTo) ?? '/')}`

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

  async function login(request: SignInRequest, url: URL): Promise<SignInResponse> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET')
    const returnTo = safeReturnTo(url.searchParams.get('returnTo')) ?? '/'
    const keys = await keyRing()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const codeVerifier = oidc.randomPKCECodeVerifier()
    const parameters = new URLSearchParams({
      redirect_uri: settings.redirectUri,
      response_type: 'code',
      scope: settings.authorizationScope,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    })
    // Every product's resource, so that the one refresh token can later be exchanged for each.
    const resources = new Set<string>()
    for (const product of settings.products.values()) {
      for (const resource of product.resource) resources.add(resource)
    }
    for (const resource of resources) parameters.append('resource', resource)
    const target = await provider.authorizationUrl(parameters)
    const transaction: Transaction = {
      s: state,
      n: nonce,
      v: codeVerifier,
      r: returnTo,
      e: now() + TRANSACTION_SECONDS * 1000,
    }
    // The transactions travel in their own cookie, sealed: nothing is stored for a visit to
    // /login, and a callback only completes in the browser that started its sign-in (login
    // CSRF). Several at once, so that sign-ins started in two tabs both complete.
    const pending = readTransactions(keys, request).slice(-(MAX_TRANSACTIONS - 1))
    return respond(302, {
      Location: target.href,
      'Set-Cookie': [
        transactionCookie(sealTransactions(keys, [...pending, transaction]), TRANSACTION_SECONDS),
      ],
    })
  }

  function sealTransactions(keys: KeyRing, transactions: readonly Transaction[]): string {
    return keys.encrypt(JSON.stringify(transactions), TRANSACTION_AAD)
  }

  /** The unexpired sign-ins this browser started; none when the cookie is absent or altered. */
  function readTransactions(keys: KeyRing, request: SignInRequest): Transaction[] {
    const sealed = readCookie(request.headers['cookie'], settings.transactionCookieName)
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

  async function callback(request: SignInRequest, url: URL): Promise<SignInResponse> {
    if (request.method !== 'GET') return methodNotAllowed('GET')
    const cookies = [transactionCookie('', 0)]
    try {
      const keys = await keyRing()
      const transactions = readTransactions(keys, request)
      if (transactions.length === 0) {
        throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'transaction_missing')
      }
      // The sign-in this callback answers; openid-client checks the state again below.
      const state = url.searchParams.get('state')
      const transaction = transactions.find((item) => item.s === state)
      // Its own reason, apart from openid-client's `state` check below, so that a test can tell
      // which layer refused.
      if (transaction === undefined) {
        throw new SignInError('ERR_SIGNIN_CALLBACK_INVALID', 'state_unknown')
      }
      // Used once, whatever the outcome; the other tabs' sign-ins stay.
      const others = transactions.filter((item) => item !== transaction)
      if (others.length > 0) {
        cookies[0] = transactionCookie(sealTransactions(keys, others), TRANSACTION_SECONDS)
      }
      const callbackUrl = new URL(settings.redirectUri)
      callbackUrl.search = url.search
      const { name, parameters } = productOf(undefined)
      const tokens = await provider.exchangeCode(
        callbackUrl,
        { state: transaction.s, nonce: transaction.n, codeVerifier: transaction.v },
        parameters,
      )
      const claims = tokens.claims as Record<string, unknown>
      const subject = claims['sub'] as string
      const sid = typeof claims['sid'] === 'string' ? claims['sid'] : undefined
      // A new session id at every sign-in (session fixation): whatever the browser held ends.
      const previous = readSessionId(keys, request)
      if (previous !== undefined) await stored(store.delete(storeKeyOf(previous)))
      const sessionId = newSessionId()
      const at = now()
      const profile: Record<string, unknown> = {}
      for (const claim of PROFILE_CLAIMS) if (claim in claims) profile[claim] = claims[claim]
      const session: OpenSession = {
        issuer,
        subject,
        sid,
        createdAt: at,
        expiresAt: at + settings.absoluteTimeoutMs,
        claims: profile,
        refreshToken: tokens.refreshToken,
        idToken: tokens.idToken,
        accessTokens: {
          [name]: { token: tokens.accessToken, expiresAt: at + tokens.expiresInSeconds * 1000 },
        },
        generation: 1,
      }
      await stored(
        store.create(
          storeKeyOf(sessionId),
          sealSession(keys, sessionId, session),
          Math.min(settings.idleTimeoutMs, settings.absoluteTimeoutMs),
          indexesOf(session),
          // The index outlives every read that extends the session (back-channel logout).
          settings.absoluteTimeoutMs,
        ),
      )
      cookies.push(sessionCookie(keys.sign(sessionId), settings.absoluteTimeoutMs / 1000))
      emit?.({ type: 'signed_in', issuer, subject })
      return respond(302, { Location: transaction.r, 'Set-Cookie': cookies })
    } catch (error) {
      if (isSignInError(error)) return errorResponse(error, cookies)
      throw error
    }
  }

  function readSessionId(keys: KeyRing, request: SignInRequest): string | undefined {
    const signed = readCookie(request.headers['cookie'], settings.cookieName)
    return signed === undefined ? undefined : keys.verify(signed)
  }

  /** The sid and sub indexes under which back-channel logout finds a session. */
  function indexesOf(session: Pick<OpenSession, 'issuer' | 'subject' | 'sid'>): string[] {
    const indexes = [indexOf('sub', session.issuer, session.subject)]
    if (session.sid !== undefined) indexes.push(indexOf('sid', session.issuer, session.sid))
    return indexes
  }

  /**
   * Deletes a session and its index entries: those of `session` when it could be read, else
   * `indexes` (the one a back-channel logout walked). An entry left behind (an unreadable
   * session) is dropped the next time its index is walked or grows.
   */
  async function endSession(
    key: string,
    session: Pick<OpenSession, 'issuer' | 'subject' | 'sid'> | undefined,
    reason: SessionEndReason,
    indexes: readonly string[] = [],
  ): Promise<void> {
    await stored(store.delete(key, session === undefined ? indexes : indexesOf(session)))
    emit?.({
      type: 'session_ended',
      issuer: session?.issuer,
      subject: session?.subject,
      reason,
    })
  }

  /**
   * `true` when a browser says the request comes from another site: an `Origin` other than
   * `baseUrl`'s (`null` included), or `Sec-Fetch-Site: cross-site`. A request without either
   * (an old browser, a script) is not refused; `SameSite=Lax` keeps its cookie off cross-site POSTs.
   */
  function crossSite(request: SignInRequest): boolean {
    const header = (name: string) => {
      const value = request.headers[name]
      return Array.isArray(value) ? value.join(',') : value
    }
    const origin = header('origin')
    if (origin !== undefined && origin !== new URL(settings.baseUrl).origin) return true
    return header('sec-fetch-site')?.trim().toLowerCase() === 'cross-site'
  }

  async function logout(request: SignInRequest): Promise<SignInResponse> {
    if (request.method !== 'POST') return methodNotAllowed('POST')
    // Logout CSRF: a form on another site must not sign the user out.
    if (crossSite(request)) throw new SignInError('ERR_SIGNIN_BAD_REQUEST', 'cross_site')
    const keys = await keyRing()
    const sessionId = readSessionId(keys, request)
    let idToken: string | undefined
    if (sessionId !== undefined) {
      const key = storeKeyOf(sessionId)
      try {
        const raw = await stored(store.read(key, settings.idleTimeoutMs))
        const session = raw === undefined ? undefined : openSession(keys, sessionId, issuer, raw)
        idToken = session?.idToken
        if (raw !== undefined) await endSession(key, session, 'logout')
      } catch (error) {
        // The store is down (503): the user asked to sign out, so this browser's cookie goes
        // all the same; the stored session ends at its idle timeout.
        if (isSignInError(error)) return errorResponse(error, [clearSessionCookie])
        throw error
      }
    }
    const parameters: Record<string, string> = {
      post_logout_redirect_uri: settings.postLogoutRedirectUri,
    }
    if (idToken !== undefined) parameters['id_token_hint'] = idToken
    const target =
      (await provider.endSessionUrl(parameters))?.href ?? settings.postLogoutRedirectUri
    return respond(303, { Location: target, 'Set-Cookie': [clearSessionCookie] })
  }

  /** Reads and opens a session; a missing, unreadable or expired one ends with ERR_SIGNIN_REQUIRED. */
  async function readOpen(keys: KeyRing, sessionId: string, key: string): Promise<OpenSession> {
    const raw = await stored(store.read(key, settings.idleTimeoutMs))
    if (raw === undefined) throw new SignInError('ERR_SIGNIN_REQUIRED', 'no_session')
    const session = openSession(keys, sessionId, issuer, raw)
    if (session === undefined && sealedUnderUnknownKey(keys, raw)) {
      // Sealed under a key this instance's ring does not hold yet (a rolling deploy adding a
      // key): not signed in here, but the session is left in the store for the instances that
      // can open it. A key retired from every ring leaves such sessions to their store expiry.
      throw new SignInError('ERR_SIGNIN_REQUIRED', 'session_key_unknown')
    }
    if (session === undefined) {
      // Tampered, another session's ciphertext, or a key no longer in the ring: fail closed.
      await endSession(key, undefined, 'unreadable')
      throw new SignInError('ERR_SIGNIN_REQUIRED', 'session_unreadable')
    }
    if (now() >= session.expiresAt) {
      await endSession(key, session, 'expired')
      throw new SignInError('ERR_SIGNIN_REQUIRED', 'session_expired')
    }
    return session
  }

  const refresher = createRefresher({
    settings,
    provider,
    emit,
    stored,
    readOpen,
    endSession,
    parametersOf: (product) => productOf(product === '' ? undefined : product).parameters,
  })
  const { fresh, refreshed } = refresher

  function contextFor(
    keys: KeyRing,
    sessionId: string,
    key: string,
    session: OpenSession,
  ): SignInContext {
    let current = session
    return {
      user: Object.freeze({
        issuer,
        subject: session.subject,
        sid: session.sid,
        claims: Object.freeze({ ...session.claims }),
      }),
      async accessToken(product) {
        const { name } = productOf(product)
        if (fresh(current, name, settings.refreshBeforeExpiryMs)) {
          return (current.accessTokens[name] as { token: string }).token
        }
        current = await refreshed(keys, sessionId, key, name)
        const held = current.accessTokens[name]
        if (held === undefined || held.expiresAt < now()) {
          throw new SignInError('ERR_SIGNIN_UNAVAILABLE', 'provider_unavailable')
        }
        return held.token
      },
      loginPath,
    }
  }

  const anonymous: SignInContext = Object.freeze({
    user: undefined,
    accessToken: async () => {
      throw new SignInError('ERR_SIGNIN_REQUIRED', 'no_session')
    },
    loginPath,
  })

  async function load(request: SignInRequest): Promise<SignInOutcome> {
    const signed = readCookie(request.headers['cookie'], settings.cookieName)
    if (signed === undefined) return { context: anonymous, headers: {} }
    const keys = await keyRing()
    const sessionId = keys.verify(signed)
    const signedOut = { context: anonymous, headers: { 'Set-Cookie': [clearSessionCookie] } }
    // Not signed in here, but the cookie is kept: it may be another instance's, signed or sealed
    // under a key this ring does not hold yet (a rolling deploy); a forged one is harmless.
    const notHere = { context: anonymous, headers: {} }
    if (sessionId === undefined) {
      // A cookie this ring did not sign (forged, altered, signed by a retired key or by a key
      // another instance already has).
      emit?.({
        type: 'signin_refused',
        code: 'ERR_SIGNIN_REQUIRED',
        reason: 'session_unreadable',
        error: undefined,
      })
      return notHere
    }
    const key = storeKeyOf(sessionId)
    try {
      const session = await readOpen(keys, sessionId, key)
      return { context: contextFor(keys, sessionId, key, session), headers: {} }
    } catch (error) {
      if (isSignInError(error) && error.reason === 'session_key_unknown') {
        emit?.({
          type: 'signin_refused',
          code: error.code,
          reason: error.reason,
          error: undefined,
        })
        return notHere
      }
      if (isSignInError(error) && error.code === 'ERR_SIGNIN_REQUIRED') return signedOut
      throw error
    }
  }

  const sessions: SessionEnder = {
    async endSessions(from, by) {
      const index =
        by.sid !== undefined
          ? indexOf('sid', from, by.sid)
          : by.sub !== undefined
            ? indexOf('sub', from, by.sub)
            : undefined
      if (index === undefined) return 0
      const keys = new Set(await stored(store.indexed(index)))
      for (const key of keys) await endSession(key, undefined, 'back_channel_logout', [index])
      return keys.size
    },
  }

  const signIn: SignIn = {
    redirectUri: settings.redirectUri,
    async handle(request) {
      const path = new URL(
        `${settings.baseUrl}${request.url.startsWith('/') ? '' : '/'}${request.url}`,
      )
      try {
        switch (path.pathname) {
          case routes.login:
            return { response: await login(request, path) }
          case routes.callback:
            return { response: await callback(request, path) }
          case routes.logout:
            return { response: await logout(request) }
          case routes.backChannelLogout:
            return { response: await backChannel({ sessions, settings, emit }, request) }
        }
        return await load(request)
      } catch (error) {
        if (isSignInError(error)) return { response: errorResponse(error) }
        throw error
      }
    },
    requireUser(context, request) {
      if (context?.user !== undefined) return undefined
      const accept = request.headers['accept']
      const wantsPage = (Array.isArray(accept) ? accept.join(',') : (accept ?? '')).includes(
        'text/html',
      )
      if ((request.method === 'GET' || request.method === 'HEAD') && wantsPage) {
        return respond(302, { Location: loginPath(request.url) })
      }
      return errorResponse(new SignInError('ERR_SIGNIN_REQUIRED', 'no_session'))
    },
  }
  return Object.freeze(signIn)
}
