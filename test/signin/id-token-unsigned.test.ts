/**
 * A callback whose ID token is unsigned (`alg: none`) or in an algorithm no JWS library signs
 * with, as a hostile or broken provider answers (RFC 9700 §2.1 and OpenID Connect Core §3.1.3.7
 * step 6: the client validates the ID token's signature; RFC 8725 §3.1: `none` is never
 * accepted where a signature is required). The callback refuses it as a bad answer, 400 naming
 * what was refused, with no session; no `idTokenAlgorithms` could accept it, so it is not the
 * 500 "sign-in is not configured correctly" that an HMAC-signed ID token gets (which
 * `idTokenAlgorithms` can enable). The authorization runs at a real provider (oidc-provider);
 * its token endpoint answers with the hand-made ID token.
 */
import { randomBytes } from 'node:crypto'

import { base64url } from 'jose'
import request from 'supertest'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import { resetWarningsForTests } from '../../src/warnings.js'
import { manualClock } from '../helpers/client-fixtures.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import {
  APP_ORIGIN,
  cookieHeader,
  cookiesOf,
  SIGNIN_APPS,
  SIGNIN_CLIENT,
  type SignInAppFactory,
  signInClient,
  signInOptions,
  signInWith,
  startSignIn,
} from '../helpers/signin.js'

const HS256_CLIENT = 'web-hs256'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startProvider({
    clients: [
      signInClient(),
      { ...signInClient(), client_id: HS256_CLIENT, id_token_signed_response_alg: 'HS256' },
    ],
    idTokenSigningAlgValues: ['RS256', 'HS256'],
  })
})
afterAll(async () => {
  await provider.close()
})
afterEach(() => {
  provider.interceptTokenEndpoint(undefined)
})

const part = (value: unknown) => base64url.encode(JSON.stringify(value))

/** The callback of a sign-in whose token endpoint answers an ID token with header `alg`. */
async function callbackWithIdToken(
  createApp: SignInAppFactory,
  alg: string,
  overrides: { clientId?: string; idTokenAlgorithms?: string[]; listen?: false } = {},
) {
  const { listen, ...options } = overrides
  const clientId = options.clientId ?? SIGNIN_CLIENT
  const events: SignInEvent[] = []
  const app = createApp(
    signInOptions(provider, {
      ...options,
      clientId,
      ...(listen === false ? {} : { onEvent: (event: SignInEvent) => events.push(event) }),
    }),
  )
  const started = await startSignIn(app)
  const authorization = new URL(started.location)
  const now = Math.floor(Date.now() / 1000)
  // Every claim right (issuer, audience, nonce, times): only the signature is missing or unknown.
  const claims = {
    iss: provider.issuer(),
    aud: clientId,
    sub: 'mallory',
    nonce: authorization.searchParams.get('nonce'),
    iat: now,
    exp: now + 300,
  }
  const signature = alg === 'none' ? '' : base64url.encode(randomBytes(32))
  const idToken = `${part({ alg, typ: 'JWT' })}.${part(claims)}.${signature}`
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

function expectRefused(
  { res, events }: Awaited<ReturnType<typeof callbackWithIdToken>>,
  reason: string,
  description: string,
) {
  expect(res.status).toBe(400)
  expect(res.body).toEqual({ error: 'invalid_request', error_description: description })
  expect(cookiesOf(res).get('__Host-tollgate.sid') ?? '').toBe('')
  expect(events).toContainEqual(
    expect.objectContaining({
      type: 'signin_refused',
      code: 'ERR_SIGNIN_CALLBACK_INVALID',
      reason,
    }),
  )
  expect(events.some((event) => event.type === 'signed_in')).toBe(false)
}

const UNSIGNED = 'the identity provider sent an unsigned ID token (alg none)'
const UNSUPPORTED =
  'the identity provider signed the ID token with an algorithm sign-in does not support'

describe.each(SIGNIN_APPS)('%s: an ID token no configuration can accept', (_name, createApp) => {
  it('alg none: 400 naming the unsigned ID token (reason id_token_unsigned), no session', async () => {
    expectRefused(await callbackWithIdToken(createApp, 'none'), 'id_token_unsigned', UNSIGNED)
  })

  it('alg none with idTokenAlgorithms listing an HMAC algorithm: refused the same way', async () => {
    const result = await callbackWithIdToken(createApp, 'none', {
      clientId: HS256_CLIENT,
      idTokenAlgorithms: ['HS256'],
    })
    expectRefused(result, 'id_token_unsigned', UNSIGNED)
  })

  it('an algorithm no JWS library signs with: 400 (reason id_token_algorithm_unsupported)', async () => {
    const result = await callbackWithIdToken(createApp, 'XS999')
    expectRefused(result, 'id_token_algorithm_unsupported', UNSUPPORTED)
  })

  it('an HMAC algorithm idTokenAlgorithms can enable stays a configuration error (500 ERR_CLIENT_REFUSED)', async () => {
    const { res, events } = await callbackWithIdToken(createApp, 'HS256')
    expect(res.status).toBe(500)
    expect(res.body).toEqual({
      error: 'server_error',
      error_description: 'sign-in is not configured correctly',
    })
    expect(events).toContainEqual(
      expect.objectContaining({ code: 'ERR_CLIENT_REFUSED', reason: 'id_token_algorithm' }),
    )
  })
})

describe('an unsigned ID token without onEvent', () => {
  it('warns nothing: no configuration is at fault, so the operator is not told to change one', async () => {
    const warnings: Error[] = []
    const record = (warning: Error) => {
      if (warning.name === 'TollgateWarning') warnings.push(warning)
    }
    resetWarningsForTests()
    process.on('warning', record)
    try {
      const [, createApp] = SIGNIN_APPS[0] as (typeof SIGNIN_APPS)[number]
      const { res } = await callbackWithIdToken(createApp, 'none', { listen: false })
      expect(res.status).toBe(400)
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings).toEqual([])
    } finally {
      process.off('warning', record)
    }
  })
})

describe('a refresh whose ID token is unsigned (alg none)', () => {
  it('is an answer not to use: accessToken() answers 503, the session stays, no configuration error', async () => {
    const clock = manualClock()
    const events: SignInEvent[] = []
    const [, createApp] = SIGNIN_APPS[0] as (typeof SIGNIN_APPS)[number]
    const app = createApp(
      signInOptions(provider, { clock, onEvent: (event) => events.push(event) }),
    )
    const { cookie } = await signInWith(app, provider)
    clock.advance(290_000)
    const now = Math.floor(clock.now() / 1000)
    const claims = {
      iss: provider.issuer(),
      aud: SIGNIN_CLIENT,
      sub: 'user-1',
      iat: now,
      exp: now + 300,
    }
    provider.interceptTokenEndpoint({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        access_token: 'at',
        token_type: 'Bearer',
        expires_in: 300,
        id_token: `${part({ alg: 'none' })}.${part(claims)}.`,
      }),
    })
    const res = await request(app).get('/token/gateway').set('Cookie', cookie)
    provider.interceptTokenEndpoint(undefined)
    expect(res.status).toBe(503)
    expect(res.body).toEqual({ code: 'ERR_SIGNIN_UNAVAILABLE' })
    expect(events).not.toContainEqual(expect.objectContaining({ code: 'ERR_CLIENT_REFUSED' }))
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'session_ended' }))
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
  })
})
