/**
 * ID tokens signed with an algorithm sign-in does not accept, and HMAC-signed ones when asked
 * for, against a real OpenID provider that signs this client's ID tokens with HS256 or HS512 (its
 * `id_token_signed_response_alg`, keyed by the client secret as OpenID Connect Core §10.1 allows):
 * by default the callback answers 500 `ERR_CLIENT_REFUSED`, and the event and the warning name the
 * algorithm, the option and what openid-client said; with `idTokenAlgorithms: ['HS512']` the user
 * signs in and refreshes, and an ID token whose HMAC was made with another secret is refused.
 */
import { SignJWT } from 'jose'
import request from 'supertest'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import { resetWarningsForTests } from '../../src/warnings.js'
import { manualClock } from '../helpers/client-fixtures.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  cookieHeader,
  cookiesOf,
  SIGNIN_APPS,
  SIGNIN_SECRET,
  signInClient,
  signInOptions,
  signInWith,
  startSignIn,
} from '../helpers/signin.js'

const HMAC_CLIENTS = { HS256: 'web-hs256', HS512: 'web-hs512' } as const

let provider: RunningProvider
beforeAll(async () => {
  provider = await startProvider({
    clients: [
      signInClient(),
      ...Object.entries(HMAC_CLIENTS).map(([alg, clientId]) => ({
        ...signInClient(),
        client_id: clientId,
        id_token_signed_response_alg: alg,
      })),
    ],
    idTokenSigningAlgValues: ['RS256', 'HS256', 'HS512'],
  })
})
afterAll(async () => {
  await provider.close()
})

const warnings: Array<Error & { code?: string }> = []
const record = (warning: Error) => {
  if (warning.name === 'TollgateWarning') warnings.push(warning)
}
beforeEach(() => {
  resetWarningsForTests()
  warnings.length = 0
  process.on('warning', record)
})
afterEach(() => {
  process.off('warning', record)
  provider.interceptTokenEndpoint(undefined)
})

/** The callback of a sign-in through the provider, as the browser brings it back. */
async function callbackOf(app: Parameters<typeof signInWith>[0]) {
  const started = await startSignIn(app)
  const back = await provider.followAuthorization(started.location, `${APP_ORIGIN}/auth/callback`)
  return request(app)
    .get(`${back.pathname}${back.search}`)
    .set('Cookie', cookieHeader(started.cookies))
}

describe.each(SIGNIN_APPS)('%s: ID token algorithms', (_name, createApp) => {
  it.each(Object.entries(HMAC_CLIENTS))(
    'answers an ID token signed with %s 500 ERR_CLIENT_REFUSED by default, naming the algorithm, the option and what openid-client said',
    async (alg, clientId) => {
      const events: SignInEvent[] = []
      const app = createApp(
        signInOptions(provider, { clientId, onEvent: (event) => events.push(event) }),
      )
      const res = await callbackOf(app)
      expect(res.status).toBe(500)
      expect(res.body).toEqual({
        error: 'server_error',
        error_description: 'sign-in is not configured correctly',
      })
      expect(cookiesOf(res).get('__Host-tollgate.sid') ?? '').toBe('')
      const refused = events.find((event) => event.type === 'signin_refused')
      expect(refused).toMatchObject({ code: 'ERR_CLIENT_REFUSED', reason: 'id_token_algorithm' })
      const error = (refused as { error: Error & { cause?: Error & { cause?: Error } } }).error
      expect(error.message).toBe(
        `token endpoint of ${provider.issuer()} gave client "${clientId}" an ID token signed with ${alg}, ` +
          'which sign-in does not accept (openid-client: unexpected JWT "alg" header parameter): ' +
          'list it in the idTokenAlgorithms option (now RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519) ' +
          '(HS256, HS384 and HS512 alone, and only with a clientSecret: OpenID Connect Core §10.1), ' +
          "or have the provider sign this client's ID tokens with one of those",
      )
      // openid-client's own error and oauth4webapi's under it, without the response they came from.
      expect(error.cause).toMatchObject({
        name: 'ClientError',
        message: 'invalid response encountered',
        code: 'OAUTH_INVALID_RESPONSE',
        cause: { message: 'unexpected JWT "alg" header parameter', algorithm: alg },
      })
      expect(Object.keys(error.cause?.cause ?? {})).not.toContain('header')
    },
  )

  it.each(Object.entries(HMAC_CLIENTS))(
    'signs the user in and refreshes when idTokenAlgorithms lists %s, verifying the HMAC with the client secret',
    async (alg, clientId) => {
      const clock = manualClock()
      const app = createApp(signInOptions(provider, { clientId, idTokenAlgorithms: [alg], clock }))
      const { callback, cookie } = await signInWith(app, provider)
      expect(callback.status).toBe(302)
      expect((await request(app).get('/me').set('Cookie', cookie)).body).toMatchObject({
        subject: 'user-1',
      })
      const grants = provider.grantCount('refresh_token')
      clock.advance(290_000)
      const refreshed = await request(app).get('/token/gateway').set('Cookie', cookie)
      expect(refreshed.status).toBe(200)
      expect(provider.grantCount('refresh_token')).toBe(grants + 1)
    },
  )
})

describe('a refresh whose ID token comes in an algorithm idTokenAlgorithms does not list', () => {
  it('answers accessToken() with ERR_CLIENT_REFUSED (500) and keeps the session', async () => {
    const clientId = HMAC_CLIENTS.HS512
    const clock = manualClock()
    const events: SignInEvent[] = []
    const [, createApp] = SIGNIN_APPS[0] as (typeof SIGNIN_APPS)[number]
    const app = createApp(
      signInOptions(provider, {
        clientId,
        idTokenAlgorithms: ['HS512'],
        clock,
        onEvent: (event) => events.push(event),
      }),
    )
    const { cookie } = await signInWith(app, provider)
    clock.advance(290_000)
    const now = Math.floor(clock.now() / 1000)
    // The provider's own RS256 key: a valid signature, in an algorithm this client does not take.
    const idToken = await provider.sign({
      iss: provider.issuer(),
      aud: clientId,
      sub: 'user-1',
      iat: now,
      exp: now + 300,
    })
    provider.interceptTokenEndpoint({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        access_token: 'at',
        token_type: 'Bearer',
        expires_in: 300,
        id_token: idToken,
      }),
    })
    const res = await request(app).get('/token/gateway').set('Cookie', cookie)
    provider.interceptTokenEndpoint(undefined)
    expect(res.status).toBe(500)
    expect(res.body).toEqual({ code: 'ERR_CLIENT_REFUSED' })
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'session_ended' }))
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
  })
})

describe('an HMAC-signed ID token made with another secret', () => {
  /** A callback whose token endpoint answers with an ID token signed by `secret`. */
  async function callbackWithIdTokenSignedBy(secret: string) {
    const clientId = HMAC_CLIENTS.HS512
    const events: SignInEvent[] = []
    const [, createApp] = SIGNIN_APPS[0] as (typeof SIGNIN_APPS)[number]
    const app = createApp(
      signInOptions(provider, {
        clientId,
        idTokenAlgorithms: ['HS512'],
        onEvent: (event) => events.push(event),
      }),
    )
    const started = await startSignIn(app)
    const authorization = new URL(started.location)
    const now = Math.floor(Date.now() / 1000)
    const idToken = await new SignJWT({ nonce: authorization.searchParams.get('nonce') })
      .setProtectedHeader({ alg: 'HS512' })
      .setIssuer(provider.issuer())
      .setAudience(clientId)
      .setSubject('mallory')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(new TextEncoder().encode(secret))
    provider.interceptTokenEndpoint({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        access_token: 'at',
        token_type: 'Bearer',
        expires_in: 300,
        id_token: idToken,
      }),
    })
    const callback = new URL('/auth/callback', APP_ORIGIN)
    callback.searchParams.set('code', 'any-code')
    callback.searchParams.set('state', authorization.searchParams.get('state') ?? '')
    callback.searchParams.set('iss', provider.issuer())
    const res = await request(app)
      .get(`${callback.pathname}${callback.search}`)
      .set('Cookie', cookieHeader(started.cookies))
    return { res, events }
  }

  it('is refused (400 ERR_SIGNIN_CALLBACK_INVALID, reason id_token), and no session starts', async () => {
    const { res, events } = await callbackWithIdTokenSignedBy(
      'another-secret-of-the-same-length-as-the-client-secret',
    )
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      error: 'invalid_request',
      error_description: 'the sign-in response does not match a sign-in started here',
    })
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'id_token' }),
    )
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'signed_in' }))
  })

  it('is accepted when made with the client secret (the same answer, the right key)', async () => {
    const { res, events } = await callbackWithIdTokenSignedBy(SIGNIN_SECRET)
    expect(res.status).toBe(302)
    expect(events).toContainEqual({
      type: 'signed_in',
      issuer: provider.issuer(),
      subject: 'mallory',
    })
  })
})

describe('without onEvent', () => {
  it('warns once, naming the algorithm and the option, never the secret', async () => {
    const [, createApp] = SIGNIN_APPS[0] as (typeof SIGNIN_APPS)[number]
    const app = createApp(signInOptions(provider, { clientId: HMAC_CLIENTS.HS512 }))
    for (let attempt = 0; attempt < 2; attempt++) expect((await callbackOf(app)).status).toBe(500)
    await new Promise((resolve) => setImmediate(resolve))
    expect(warnings.map((warning) => warning.code)).toEqual(['TOLLGATE_SIGNIN_ID_TOKEN_ALGORITHM'])
    expect(warnings[0]?.message).toContain('an ID token signed with HS512')
    expect(warnings[0]?.message).toContain('idTokenAlgorithms')
    expect(warnings[0]?.message).not.toContain(SIGNIN_SECRET)
  })
})
