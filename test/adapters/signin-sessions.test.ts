/**
 * Sessions at rest, through both adapters: the store never holds a token in clear, a ciphertext
 * tampered with, copied from another session or sealed under a key outside the ring ends the
 * session (the user is sent to sign in, never a 500), and tokens are refreshed before they
 * expire, a spent refresh token ending the session cleanly.
 */
import { inspect } from 'node:util'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  createMemorySessionStore,
  fromEnv,
  type SignInEvent,
  type SignInKey,
} from '../../src/signin/index.js'
import { createKeyRing } from '../../src/signin/key-ring.js'
import { KEY_RING_REREAD_MS } from '../../src/signin/signin.js'
import { manualClock } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import {
  inspectableStore,
  recordingFetch,
  SIGNIN_APPS,
  signInOptions,
  signInWith,
  startSignInProvider,
  testKeys,
} from '../helpers/signin.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startSignInProvider()
})
afterAll(async () => {
  await provider.close()
})

describe.each(SIGNIN_APPS)('%s sessions', (_name, createApp) => {
  function setup() {
    const clock = manualClock()
    const inspect = inspectableStore(clock)
    const recorder = recordingFetch()
    const events: SignInEvent[] = []
    const keys = testKeys()
    const app = createApp(
      signInOptions(provider, {
        store: inspect.store,
        clock,
        keys: () => keys,
        fetch: recorder.fetch,
        onEvent: (event) => events.push(event),
      }),
    )
    const ended = () =>
      events.flatMap((event) => (event.type === 'session_ended' ? [event.reason] : []))
    return { app, clock, inspect, recorder, events, keys, ended }
  }

  it('stores no token, no session id, no cookie and no user identity in clear', async () => {
    const { app, inspect, recorder } = setup()
    const { cookie } = await signInWith(app, provider)
    await request(app).get('/token/office').set('Cookie', cookie)
    expect(recorder.tokens.size).toBeGreaterThanOrEqual(4)
    const sessionId = cookie.split('=')[1]?.split('.')[0] as string
    const stored = [...inspect.raw.entries()].flat().join('\n')
    for (const token of recorder.tokens) expect(stored).not.toContain(token)
    expect(stored).not.toContain(sessionId)
    expect(stored).not.toContain('user-1')
  })

  it('ends a session whose refresh token ciphertext was altered, and sends the user to sign in', async () => {
    const { app, inspect, ended } = setup()
    const { cookie } = await signInWith(app, provider)
    const [key, raw] = [...inspect.raw.entries()][0] as [string, string]
    const value = JSON.parse(raw)
    const last = value.rt.at(-1) === 'A' ? 'B' : 'A'
    await inspect.overwrite(
      key,
      JSON.stringify({ ...value, rt: `${value.rt.slice(0, -1)}${last}` }),
    )
    const page = await request(app).get('/me').set('Cookie', cookie).set('Accept', 'text/html')
    expect(page.status).toBe(302)
    expect(page.headers['location']).toBe('/auth/login?returnTo=%2Fme')
    expect(ended()).toEqual(['unreadable'])
    expect(inspect.raw.has(key)).toBe(false)
  })

  it('refuses another session’s ciphertext copied into this one (bound by session id)', async () => {
    const { app, inspect, ended } = setup()
    const victim = await signInWith(app, provider, 'victim')
    const [victimKey, victimRaw] = [...inspect.raw.entries()][0] as [string, string]
    const attacker = await signInWith(app, provider, 'mallory')
    const [attackerKey, attackerRaw] = [...inspect.raw.entries()][1] as [string, string]
    const stolen = JSON.parse(victimRaw)
    await inspect.overwrite(
      attackerKey,
      JSON.stringify({ ...JSON.parse(attackerRaw), rt: stolen.rt, at: stolen.at }),
    )
    const res = await request(app).get('/token/gateway').set('Cookie', attacker.cookie)
    expect(res.status).toBe(401)
    expect(ended()).toEqual(['unreadable'])
    // The victim's own session is untouched.
    expect(inspect.raw.has(victimKey)).toBe(true)
    const mine = await request(app).get('/token/gateway').set('Cookie', victim.cookie)
    expect(mine.body).toMatchObject({ sub: 'victim' })
  })

  it('refuses a token ciphertext moved to another field of the same session (bound by purpose)', async () => {
    const { app, inspect } = setup()
    const { cookie } = await signInWith(app, provider)
    const [key, raw] = [...inspect.raw.entries()][0] as [string, string]
    const value = JSON.parse(raw)
    await inspect.overwrite(key, JSON.stringify({ ...value, idt: value.rt }))
    const res = await request(app).get('/public').set('Cookie', cookie)
    expect(res.body).toEqual({ signedIn: false })
  })

  it('ends a session sealed under a key that is no longer in the ring', async () => {
    const { app, inspect, keys } = setup()
    const { cookie } = await signInWith(app, provider)
    const [key, raw] = [...inspect.raw.entries()][0] as [string, string]
    const value = JSON.parse(raw)
    // Same key id, other secret: what a stolen store dump re-sealed by an attacker would be.
    const foreign = createKeyRing([
      { id: keys[0]?.id as string, secret: testKeys()[0]?.secret as Uint8Array },
    ])
    const sessionId = cookie.split('=')[1]?.split('.')[0] as string
    const rt = foreign.encrypt(
      'attacker-refresh-token',
      `tollgate/signin v1\0refresh_token\0${sessionId}\0${provider.issuer()}`,
    )
    await inspect.overwrite(key, JSON.stringify({ ...value, rt }))
    const res = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(res.status).toBe(401)
  })

  it('still opens sessions sealed under an older key of the ring, and re-seals them under the newest at the next refresh', async () => {
    const clock = manualClock()
    const inspect = inspectableStore(clock)
    const [newest, older] = testKeys() as [
      { id: string; secret: Uint8Array },
      { id: string; secret: string },
    ]
    let ring: SignInKey[] = [older]
    const options = signInOptions(provider, { store: inspect.store, clock, keys: () => ring })
    const before = createApp(options)
    const { cookie } = await signInWith(before, provider)
    expect(JSON.parse([...inspect.raw.values()][0] as string).rt).toMatch(/^k1\./)
    ring = [newest, older]
    const after = createApp(options)
    clock.advance(250_000)
    const res = await request(after).get('/token/gateway').set('Cookie', cookie)
    expect(res.status).toBe(200)
    expect(JSON.parse([...inspect.raw.values()][0] as string).rt).toMatch(/^k2\./)
  })

  it('reads a key ring given as a function again every 5 minutes, so that a rotation reaches a running process', async () => {
    const clock = manualClock()
    const inspect = inspectableStore(clock)
    const [newest, older] = testKeys() as [SignInKey, SignInKey]
    let ring: SignInKey[] = [older]
    let reads = 0
    const app = createApp(
      signInOptions(provider, {
        store: inspect.store,
        clock,
        keys: () => {
          reads++
          return ring
        },
      }),
    )
    const first = await signInWith(app, provider)
    expect(reads).toBe(1)
    const newestSeal = () => JSON.parse([...inspect.raw.values()].at(-1) as string).rt as string
    expect(newestSeal()).toMatch(/^k1\./)
    ring = [newest, older]
    clock.advance(KEY_RING_REREAD_MS - 1000)
    await signInWith(app, provider, 'user-2')
    expect(reads).toBe(1)
    expect(newestSeal()).toMatch(/^k1\./)
    clock.advance(1000)
    await signInWith(app, provider, 'user-3')
    expect(reads).toBe(2)
    expect(newestSeal()).toMatch(/^k2\./)
    // Sessions sealed under the older key still open.
    expect((await request(app).get('/public').set('Cookie', first.cookie)).body).toEqual({
      signedIn: true,
    })
  })

  it('leaves a session sealed under a key this instance does not hold yet in the store (rolling key rotation)', async () => {
    const clock = manualClock()
    const inspect = inspectableStore(clock)
    const events: SignInEvent[] = []
    const [newest, older] = testKeys() as [SignInKey, SignInKey]
    const instance = (ring: SignInKey[]) =>
      createApp(
        signInOptions(provider, {
          store: inspect.store,
          clock,
          keys: () => ring,
          onEvent: (event) => events.push(event),
        }),
      )
    // Mid-deploy: the old instance holds [older], the new one already seals under `newest`.
    const oldInstance = instance([older])
    const newInstance = instance([newest, older])
    const { cookie } = await signInWith(oldInstance, provider)
    clock.advance(250_000)
    expect((await request(newInstance).get('/token/gateway').set('Cookie', cookie)).status).toBe(
      200,
    )
    expect(JSON.parse([...inspect.raw.values()][0] as string).rt).toMatch(/^k2\./)
    // The old instance cannot open it: not signed in there, but nothing ends.
    const there = await request(oldInstance).get('/public').set('Cookie', cookie)
    expect(there.body).toEqual({ signedIn: false })
    expect(there.headers['set-cookie']).toBeUndefined()
    expect((await request(oldInstance).get('/token/gateway').set('Cookie', cookie)).status).toBe(
      401,
    )
    expect(inspect.raw.size).toBe(1)
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'session_ended' }))
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'signin_refused', reason: 'session_key_unknown' }),
    )
    // The new instance still has the user.
    expect((await request(newInstance).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
  })

  it('leaves no index entries in the memory store after many sign-ins and sign-outs', async () => {
    const store = createMemorySessionStore()
    const app = createApp(signInOptions(provider, { store }))
    for (let round = 0; round < 6; round++) {
      const { cookie } = await signInWith(app, provider, `many-${round % 3}`)
      expect((await request(app).post('/auth/logout').set('Cookie', cookie)).status).toBe(303)
    }
    expect(store.size()).toEqual({ sessions: 0, indexEntries: 0 })
  })

  it('refreshes the access token once it is within a minute of expiry, not before', async () => {
    const { app, clock } = setup()
    const { cookie } = await signInWith(app, provider)
    const grants = provider.grantCount('refresh_token')
    const first = await request(app).get('/token/gateway').set('Cookie', cookie)
    clock.advance(230_000)
    const still = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(still.body.jti).toBe(first.body.jti)
    expect(provider.grantCount('refresh_token')).toBe(grants)
    clock.advance(20_000)
    const renewed = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(renewed.body.jti).not.toBe(first.body.jti)
    expect(renewed.body).toMatchObject({ aud: 'gateway' })
    expect(provider.grantCount('refresh_token')).toBe(grants + 1)
  })

  it('reports a refresh that outlasted its lock as refresh_lock_lost (503), not as a sign-out', async () => {
    const clock = manualClock()
    const events: SignInEvent[] = []
    const keys = testKeys()
    let slow = false
    // The token request of a refresh takes longer than the lock (on the sign-in clock, which the
    // memory store's lock expiry follows).
    const slowRefresh: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if (slow && String(init?.body ?? '').includes('grant_type=refresh_token')) {
        clock.advance(21_000)
      }
      return response
    }
    const app = createApp(
      signInOptions(provider, {
        store: createMemorySessionStore({ clock }),
        clock,
        keys: () => keys,
        fetch: slowRefresh,
        timeoutMs: 5000,
        refresh: { lockMs: 20_000 },
        onEvent: (event) => events.push(event),
      }),
    )
    const { cookie } = await signInWith(app, provider)
    clock.advance(290_000)
    slow = true
    const res = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(res.status).toBe(503)
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'refresh_lock_lost', product: 'gateway' }),
    )
    expect(events).not.toContainEqual(expect.objectContaining({ type: 'session_ended' }))
    slow = false
    expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
  })

  it('ends the session cleanly when the provider refuses the refresh token (invalid_grant)', async () => {
    const { app, clock, inspect, ended } = setup()
    const { cookie } = await signInWith(app, provider)
    const [key, stale] = [...inspect.raw.entries()][0] as [string, string]
    await request(app).get('/token/office').set('Cookie', cookie)
    // The store goes back to the rotated-out refresh token: the provider sees it reused.
    await inspect.overwrite(key, stale)
    clock.advance(290_000)
    const res = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(res.status).toBe(401)
    expect(ended()).toEqual(['refresh_refused'])
    const page = await request(app).get('/me').set('Cookie', cookie).set('Accept', 'text/html')
    expect(page.status).toBe(302)
  })

  it('answers a refresh refused for the client with ERR_CLIENT_REFUSED (500), keeping the session', async () => {
    const { app, clock, ended } = setup()
    const { cookie } = await signInWith(app, provider)
    clock.advance(290_000)
    provider.interceptTokenEndpoint({
      status: 401,
      contentType: 'application/json',
      body: JSON.stringify({ error: 'invalid_client' }),
    })
    try {
      const res = await request(app).get('/token/gateway').set('Cookie', cookie)
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ code: 'ERR_CLIENT_REFUSED' })
    } finally {
      provider.interceptTokenEndpoint(undefined)
    }
    expect(ended()).toEqual([])
    const fixed = await request(app).get('/token/gateway').set('Cookie', cookie)
    expect(fixed.status).toBe(200)
    expect(fixed.body).toMatchObject({ aud: 'gateway' })
  })

  it('ends a session at its absolute timeout however active it is', async () => {
    const { app, clock } = setup()
    const { cookie } = await signInWith(app, provider)
    for (let step = 0; step < 17; step++) {
      clock.advance(1_700_000)
      await request(app).get('/public').set('Cookie', cookie)
    }
    const res = await request(app).get('/public').set('Cookie', cookie)
    expect(res.body).toEqual({ signedIn: false })
  })

  it('ends a session left idle longer than the idle timeout', async () => {
    const { app, clock } = setup()
    const { cookie } = await signInWith(app, provider)
    clock.advance(1_801_000)
    const res = await request(app).get('/public').set('Cookie', cookie)
    expect(res.body).toEqual({ signedIn: false })
  })

  it('reads the key ring from the environment when first needed, and answers 503 while it is unset', async () => {
    const variable = `TOLLGATE_TEST_KEYS_${_name.toUpperCase()}`
    delete process.env[variable]
    const refused: SignInEvent[] = []
    const app = createApp(
      signInOptions(provider, {
        keys: fromEnv(variable),
        onEvent: (event) => void refused.push(event),
      }),
    )
    const unset = await request(app).get('/auth/login')
    expect(unset.status).toBe(503)
    expect(unset.headers['retry-after']).toBe('5')
    expect(refused).toContainEqual(expect.objectContaining({ type: 'signin_refused' }))
    const [newest, older] = testKeys()
    process.env[variable] =
      `${newest?.id}=${Buffer.from(newest?.secret as Uint8Array).toString('base64url')},${older?.id}=${older?.secret}`
    try {
      const { cookie } = await signInWith(app, provider)
      expect((await request(app).get('/public').set('Cookie', cookie)).body).toEqual({
        signedIn: true,
      })
    } finally {
      delete process.env[variable]
    }
  })

  it('reports events that carry no token, code, cookie or session id', async () => {
    const { app, clock, events, recorder } = setup()
    const { cookie, back } = await signInWith(app, provider)
    clock.advance(290_000)
    await request(app).get('/token/gateway').set('Cookie', cookie)
    await request(app).get(`${back.pathname}${back.search}`)
    await request(app).post('/auth/logout').set('Cookie', cookie)
    const types = new Set(events.map((event) => event.type))
    expect(types).toEqual(
      new Set(['signed_in', 'session_refreshed', 'signin_refused', 'session_ended']),
    )
    const reported = events
      .map((event) => `${JSON.stringify(event)} ${inspect(event, { depth: 8 })}`)
      .join('\n')
    for (const token of recorder.tokens) expect(reported).not.toContain(token)
    expect(reported).not.toContain(back.searchParams.get('code') as string)
    expect(reported).not.toContain(cookie.split('=')[1]?.split('.')[0] as string)
  })

  it('fetches the provider’s keys once for many sign-ins and refreshes, not once each', async () => {
    const clock = manualClock()
    let keyFetches = 0
    const counting: typeof fetch = (input, init) => {
      if (String(input instanceof Request ? input.url : input).endsWith('/certs')) keyFetches++
      return fetch(input, init)
    }
    const app = createApp(signInOptions(provider, { clock, fetch: counting }))
    for (const user of ['u1', 'u2', 'u3']) {
      const { cookie } = await signInWith(app, provider, user)
      clock.advance(250_000)
      expect((await request(app).get('/token/gateway').set('Cookie', cookie)).status).toBe(200)
    }
    expect(keyFetches).toBe(1)
  })
})
