/**
 * A refresh the provider refuses, through every adapter, against a real OpenID provider whose
 * token endpoint is made to answer as other providers do: a refusal for good (`invalid_grant`,
 * `invalid_request` for a deleted refresh token, a bare 400) ends the session with an event naming
 * the provider's error, and the dead refresh token is never sent again; only a network failure, a
 * 5xx, a 429 or `temporarily_unavailable` is an outage (503, session kept); a product's scope or
 * resource refused is a configuration error (500, session kept).
 */
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { SignInEvent } from '../../src/signin/index.js'
import { manualClock } from '../helpers/client-fixtures.js'
import type { RunningProvider, TokenEndpointAnswer } from '../helpers/oidc-provider.js'
import {
  inspectableStore,
  SIGNIN_APPS,
  signInOptions,
  signInWith,
  startSignInProvider,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider()
})
afterAll(async () => {
  await provider.close()
})

const json = (status: number, body: Record<string, string>): TokenEndpointAnswer => ({
  status,
  contentType: 'application/json',
  body: JSON.stringify(body),
})

/** What the provider answers, for the test names. */
const REFUSED_FOR_GOOD: ReadonlyArray<[string, TokenEndpointAnswer, string | undefined]> = [
  [
    '400 invalid_request (a deleted refresh token)',
    json(400, { error: 'invalid_request', error_description: 'unknown refresh token' }),
    'invalid_request',
  ],
  ['400 invalid_grant', json(400, { error: 'invalid_grant' }), 'invalid_grant'],
  [
    '400 without an OAuth error (an HTML page)',
    { status: 400, contentType: 'text/html', body: '<h1>Bad Request</h1>' },
    undefined,
  ],
]

const OUTAGES: ReadonlyArray<[string, TokenEndpointAnswer]> = [
  ['503', { status: 503, contentType: 'text/html', body: 'down' }],
  ['502 with an OAuth body', json(502, { error: 'server_error' })],
  ['429', { status: 429, body: '' }],
  ['400 temporarily_unavailable', json(400, { error: 'temporarily_unavailable' })],
]

describe.each(SIGNIN_APPS)('%s: a refresh the provider refuses', (_name, createApp) => {
  function setup() {
    const clock = manualClock()
    const inspect = inspectableStore(clock)
    const events: SignInEvent[] = []
    let tokenRequests = 0
    const counting: typeof fetch = (input, init) => {
      if (String(init?.body ?? '').includes('grant_type=refresh_token')) tokenRequests++
      return fetch(input, init)
    }
    const app = createApp(
      signInOptions(provider, {
        store: inspect.store,
        clock,
        fetch: counting,
        onEvent: (event) => events.push(event),
      }),
    )
    const ended = () => events.filter((event) => event.type === 'session_ended')
    return { app, clock, inspect, events, ended, tokenRequests: () => tokenRequests }
  }

  async function refreshAnswered(answer: TokenEndpointAnswer | 'unreachable') {
    const context = setup()
    const { cookie } = await signInWith(context.app, provider)
    context.clock.advance(290_000)
    if (answer === 'unreachable') await provider.stop()
    else provider.interceptTokenEndpoint(answer)
    try {
      const res = await request(context.app).get('/token/gateway').set('Cookie', cookie)
      return { ...context, cookie, res }
    } finally {
      provider.interceptTokenEndpoint(undefined)
      await provider.start()
    }
  }

  it.each(REFUSED_FOR_GOOD)(
    'ends the session when the provider answers %s, naming its error on the event, and never sends that refresh token again',
    async (_case, answer, error) => {
      const { app, res, cookie, ended, inspect, tokenRequests } = await refreshAnswered(answer)
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ code: 'ERR_SIGNIN_REQUIRED' })
      expect(ended()).toEqual([
        {
          type: 'session_ended',
          issuer: provider.issuer(),
          subject: 'user-1',
          reason: 'refresh_refused',
          refusal: { error, status: 400 },
        },
      ])
      expect(inspect.raw.size).toBe(0)
      expect(tokenRequests()).toBe(1)
      // The provider accepts refresh tokens again: this session's is gone, so none is sent.
      const later = await request(app).get('/token/gateway').set('Cookie', cookie)
      expect(later.status).toBe(401)
      const page = await request(app).get('/public').set('Cookie', cookie)
      expect(page.body).toEqual({ signedIn: false })
      expect(tokenRequests()).toBe(1)
    },
  )

  it('does not carry the provider’s error_description (it may quote the refresh token) on the event', async () => {
    const { events } = await refreshAnswered(
      json(400, { error: 'invalid_request', error_description: 'refresh token rt-SECRET unknown' }),
    )
    expect(JSON.stringify(events)).not.toContain('rt-SECRET')
  })

  it.each([...OUTAGES, ['the token endpoint unreachable', 'unreachable'] as const])(
    'answers 503 and keeps the session when the provider answers %s',
    async (_case, answer) => {
      const { app, res, cookie, ended } = await refreshAnswered(answer)
      expect(res.status).toBe(503)
      expect(res.body).toEqual({ code: 'ERR_SIGNIN_UNAVAILABLE' })
      expect(ended()).toEqual([])
      const back = await request(app).get('/token/gateway').set('Cookie', cookie)
      expect(back.status).toBe(200)
      expect(back.body).toMatchObject({ aud: 'gateway', sub: 'user-1' })
    },
  )

  it.each(['invalid_target', 'invalid_scope'])(
    'answers a product refused with %s as ERR_CLIENT_REFUSED (500) and keeps the session, whose refresh token still serves the other products',
    async (error) => {
      const { app, res, cookie, ended, events } = await refreshAnswered(json(400, { error }))
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ code: 'ERR_CLIENT_REFUSED' })
      expect(ended()).toEqual([])
      expect(events).not.toContainEqual(expect.objectContaining({ type: 'session_ended' }))
      const office = await request(app).get('/token/office').set('Cookie', cookie)
      expect(office.status).toBe(200)
      expect(office.body).toMatchObject({ aud: 'office' })
    },
  )
})
