/**
 * Sign-in's back-channel logout route shares the gate's logout token verifier: when the
 * provider's keys cannot be fetched, the token is not judged and the answer is 503 (providers do
 * not retry a 400, and the logout would be lost); the provider's retry of the same token, once
 * the keys are back, ends the sessions. The gate's own callbacks are in
 * test/revocation/callbacks.test.ts.
 */
import { randomUUID } from 'node:crypto'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import {
  expressSignInApp,
  SIGNIN_CLIENT,
  signInOptions,
  startSignInProvider,
} from '../helpers/signin.js'

const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'

let provider: RunningProvider

beforeAll(async () => {
  provider = await startSignInProvider({ backchannel: true })
})
afterAll(async () => {
  await provider.close()
})

describe('sign-in back-channel logout while the provider’s keys cannot be fetched', () => {
  it('answers 503 keys_unavailable, not 400, and accepts the provider’s retry once they are back', async () => {
    let certsDown = true
    const events: SignInEvent[] = []
    const fetchThrough: typeof fetch = (input, init) => {
      const url = input instanceof Request ? input.url : String(input)
      if (certsDown && url.includes('/certs')) {
        return Promise.resolve(new Response('down', { status: 500 }))
      }
      return fetch(input, init)
    }
    const app = expressSignInApp(
      signInOptions(provider, { fetch: fetchThrough, onEvent: (event) => events.push(event) }),
    )
    const now = Math.floor(Date.now() / 1000)
    const token = await provider.sign(
      {
        iss: provider.issuer(),
        aud: SIGNIN_CLIENT,
        iat: now,
        exp: now + 120,
        jti: randomUUID(),
        sub: 'nobody',
        events: { [LOGOUT_EVENT]: {} },
      },
      { typ: 'logout+jwt' },
    )
    const post = () =>
      request(app).post('/auth/backchannel-logout').type('form').send({ logout_token: token })

    const refused = await post()
    expect(refused.status).toBe(503)
    expect(refused.headers['retry-after']).toBeDefined()
    expect(refused.body).toMatchObject({ error: 'temporarily_unavailable' })
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'keys_unavailable' }),
    )

    certsDown = false
    // The provider retries (after the key set's failure backoff, at most a second): the token
    // was not spent by the first try.
    let status = 503
    while (status === 503) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      status = (await post()).status
    }
    expect(status).toBe(200)
    // Then it is spent.
    expect((await post()).status).toBe(400)
  })
})
