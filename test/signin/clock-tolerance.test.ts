/**
 * Sign-in's `clockToleranceSeconds` on back-channel logout tokens (OpenID Connect Back-Channel
 * Logout 1.0 §2.6 step 5: an `iat` within an acceptable range): a token issued further ahead of
 * this machine's clock than the tolerance (default 5 s) is refused, one within it accepted, and
 * the option widens the range as the docs say. The clock is the sign-in's own (`clock`), set by
 * the test.
 */
import { randomUUID } from 'node:crypto'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent, SignInOptions } from '../../src/signin/index.js'
import { manualClock } from '../helpers/client-fixtures.js'
import { type RunningProvider, startProvider } from '../helpers/oidc-provider.js'
import { SIGNIN_APPS, SIGNIN_CLIENT, signInClient, signInOptions } from '../helpers/signin.js'

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startProvider({ clients: [signInClient()] })
})
afterAll(async () => {
  await provider.close()
})

describe.each(SIGNIN_APPS)('%s: clockToleranceSeconds on logout tokens', (_name, createApp) => {
  /** Posts a logout token issued `aheadSeconds` after the sign-in's clock reads. */
  async function logout(aheadSeconds: number, overrides: Partial<SignInOptions> = {}) {
    const clock = manualClock()
    const events: SignInEvent[] = []
    const app = createApp(
      signInOptions(provider, { ...overrides, clock, onEvent: (event) => events.push(event) }),
    )
    const iat = Math.floor(clock.now() / 1000) + aheadSeconds
    const token = await provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat,
        exp: iat + 120,
        jti: randomUUID(),
        sub: 'user-1',
        events: { [LOGOUT_EVENT]: {} },
      },
      { typ: 'logout+jwt' },
    )
    const res = await request(app)
      .post('/auth/backchannel-logout')
      .type('form')
      .send({ logout_token: token })
    return { status: res.status, events }
  }

  it('refuses a logout token issued 30 s ahead by default (5 s), and accepts one 3 s ahead', async () => {
    const ahead = await logout(30)
    expect(ahead.status).toBe(400)
    expect(ahead.events).toContainEqual(
      expect.objectContaining({
        code: 'ERR_LOGOUT_TOKEN_INVALID',
        reason: 'logout_token_issued_in_future',
      }),
    )
    expect((await logout(3)).status).toBe(200)
  })

  it('accepts the token 30 s ahead with clockToleranceSeconds: 60, and refuses one 3 s ahead with 0', async () => {
    expect((await logout(30, { clockToleranceSeconds: 60 })).status).toBe(200)
    expect((await logout(3, { clockToleranceSeconds: 0 })).status).toBe(400)
  })
})
