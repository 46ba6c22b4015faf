/**
 * The back-channel logout route given more than one `logout_token` (OpenID Connect Back-Channel
 * Logout 1.0 §2.5: the request carries one): refused with 400 even when each token would verify
 * on its own, and no session ends.
 */
import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import { freePort } from '../helpers/redis.js'
import {
  SIGNIN_APPS,
  SIGNIN_CLIENT,
  signInOptions,
  signInWith,
  startSignInProvider,
} from '../helpers/signin.js'

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

describe.each(SIGNIN_APPS)('%s back-channel logout with two logout_tokens', (_name, createApp) => {
  let provider: RunningProvider
  let server: Server
  let origin: string
  const events: SignInEvent[] = []
  beforeAll(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    provider = await startSignInProvider({ origin, backchannel: true })
    server = createApp(
      signInOptions(provider, { baseUrl: origin, onEvent: (event) => events.push(event) }),
    )
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await provider.close()
  })

  const logoutToken = (sub: string) => {
    const now = Math.floor(Date.now() / 1000)
    return provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat: now,
        exp: now + 120,
        jti: randomUUID(),
        sub,
        events: { [LOGOUT_EVENT]: {} },
      },
      { typ: 'logout+jwt' },
    )
  }
  const signedIn = async (cookie: string) =>
    (await request(origin).get('/public').set('Cookie', cookie)).body.signedIn as boolean

  it('refuses two valid logout_tokens in one request with 400 and ends neither user’s session', async () => {
    const erin = await signInWith(origin, provider, 'erin', origin)
    const frank = await signInWith(origin, provider, 'frank', origin)
    const body = new URLSearchParams()
    body.append('logout_token', await logoutToken('erin'))
    body.append('logout_token', await logoutToken('frank'))
    events.length = 0
    const res = await request(origin)
      .post('/auth/backchannel-logout')
      .type('form')
      .send(body.toString())
    expect(res.status).toBe(400)
    expect(res.body.error).toBe('invalid_request')
    expect(events).toMatchObject([
      { type: 'signin_refused', code: 'ERR_LOGOUT_TOKEN_INVALID', reason: 'logout_token' },
    ])
    expect(await signedIn(erin.cookie)).toBe(true)
    expect(await signedIn(frank.cookie)).toBe(true)
    // Each alone is accepted: the refusal was for the pair, not for either token.
    const alone = await request(origin)
      .post('/auth/backchannel-logout')
      .type('form')
      .send({ logout_token: await logoutToken('erin') })
    expect(alone.status).toBe(200)
    expect(await signedIn(erin.cookie)).toBe(false)
    expect(await signedIn(frank.cookie)).toBe(true)
  })
})
