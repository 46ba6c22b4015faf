/**
 * Revocation through the adapters: the provider callbacks mounted in every framework answer alike,
 * and two gateway instances (one Express, one Koa) sharing one real Redis refuse a signed-out
 * session's tokens at both after a back-channel logout posted to either.
 */
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as expressAdapter from '../../adapters/express/index.js'
import * as koaAdapter from '../../adapters/koa/index.js'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, LOGOUT_PATH, type ProtectedServer, PUSH_PATH } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import { fillList, watchStore } from '../helpers/revocation-store.js'

const ROUTE = '/api/v1/billing/subscriptions'
/** Polling bound: generous, a loaded 2-core machine must never fail on it. Not a timing assertion. */
const LIMIT_MS = 10_000
/** Every adapter, tollgate/nestjs on both of Nest's platforms included. */
const ALL_APPS = [...APPS, ...NEST_APPS]

let issuer: TestIssuer
let options: GateOptions

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    revocation: { callbacks: { clientIds: 'gateway' } },
  }
})
afterAll(async () => {
  await issuer.close()
})

async function listen(server: ProtectedServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function close(server: ProtectedServer): Promise<void> {
  await server.gate.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}

const now = () => Math.floor(Date.now() / 1000)

/**
 * What an instance on the test Redis (no AOF, no save points) reports once it holds the list:
 * these tests take the report as an event (`onEvent`) instead of a printed warning.
 */
const VOLATILE: GateEvent = {
  type: 'revocation_store_volatile',
  persistence: 'none',
  loader: false,
}
const volatileOf = (events: readonly GateEvent[]) =>
  events.filter((event) => event.type === 'revocation_store_volatile')
const postForm = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
const get = (url: string, token: string) =>
  fetch(`${url}${ROUTE}`, { headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
    await res.arrayBuffer()
    return res.status
  })

/** What must be identical across adapters: status, the headers tollgate sets, and the body. */
async function answer(res: Response) {
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    cacheControl: res.headers.get('cache-control'),
    body: await res.text(),
  }
}

describe.each(ALL_APPS)('%s: provider callbacks', (_name, createApp) => {
  let server: ProtectedServer
  let url: string
  beforeAll(async () => {
    server = createApp(options)
    url = await listen(server)
  })
  afterAll(async () => {
    await close(server)
  })

  it('answers a back-channel logout with 200 no-store and refuses the session’s cached token', async () => {
    const token = await issuer.mint({ sid: 'session-1', iat: now() - 10 })
    expect(await get(url, token)).toBe(200)
    const res = await postForm(`${url}${LOGOUT_PATH}`, {
      logout_token: await issuer.mintLogoutToken({ sid: 'session-1' }),
    })
    expect(await answer(res)).toMatchObject({ status: 200, cacheControl: 'no-store', body: '' })
    const refused = await fetch(`${url}${ROUTE}`, { headers: { authorization: `Bearer ${token}` } })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('www-authenticate')).toBe(
      'Bearer realm="api", error="invalid_token", error_description="invalid token"',
    )
    expect(await refused.json()).toEqual({
      error: 'invalid_token',
      error_description: 'invalid token',
    })
  })

  it('refuses a forged logout token with 400 and a JSON error, revoking nothing', async () => {
    const session = await issuer.mint({ sid: 'session-2', iat: now() - 10 })
    expect(await get(url, session)).toBe(200)
    const genuine = await issuer.mintLogoutToken({ sid: 'session-2' })
    const [header, payload, signature] = genuine.split('.') as [string, string, string]
    const altered = `${header}.${payload.slice(0, -2)}${payload.endsWith('A') ? 'B' : 'A'}${payload.slice(-1)}.${signature}`
    const res = await postForm(`${url}${LOGOUT_PATH}`, { logout_token: altered })
    expect(await answer(res)).toEqual({
      status: 400,
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'no-store',
      body: JSON.stringify({ error: 'invalid_request', error_description: 'invalid logout token' }),
    })
    // The session the forged token names is still admitted: nothing was revoked.
    expect(await get(url, session)).toBe(200)
  })

  it('refuses a replayed logout token', async () => {
    const token = await issuer.mintLogoutToken({ sid: 'session-3' })
    expect((await postForm(`${url}${LOGOUT_PATH}`, { logout_token: token })).status).toBe(200)
    expect((await postForm(`${url}${LOGOUT_PATH}`, { logout_token: token })).status).toBe(400)
  })

  it('answers Keycloak’s push not-before and refuses tokens issued before it', async () => {
    const token = await issuer.mint({ sub: 'push', iat: now() - 10 })
    const kid = issuer.jwks('acme').keys[0]?.['kid'] as string
    const action = await issuer.sign(
      { alg: 'RS256', typ: 'JWT', kid },
      {
        id: randomUUID(),
        expiration: now() + 30,
        resource: 'gateway',
        action: 'PUSH_NOT_BEFORE',
        notBefore: now(),
      },
      { kid },
    )
    const res = await fetch(`${url}${PUSH_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: action,
    })
    expect(res.status).toBe(200)
    expect(await get(url, token)).toBe(401)
    // Clear it again: the other tests of this app use tokens issued before now.
    const clear = await issuer.sign(
      { alg: 'RS256', typ: 'JWT', kid },
      {
        id: randomUUID(),
        expiration: now() + 30,
        resource: 'gateway',
        action: 'PUSH_NOT_BEFORE',
        notBefore: 0,
      },
      { kid },
    )
    expect((await fetch(`${url}${PUSH_PATH}`, { method: 'POST', body: clear })).status).toBe(200)
  })
})

describe('provider callbacks across adapters', () => {
  it('answer byte-identical status, headers and bodies in every framework', async () => {
    const servers = ALL_APPS.map(([, createApp]) => createApp(options))
    try {
      const urls = await Promise.all(servers.map(listen))
      const forged = `${(await issuer.mintLogoutToken({ sid: 'x' })).slice(0, -4)}AAAA`
      const cases = [
        { logout_token: forged },
        { logout_token: 'not-a-token' },
        { token: 'missing' },
      ]
      for (const fields of cases) {
        const answers = await Promise.all(
          urls.map(async (url) => answer(await postForm(`${url}${LOGOUT_PATH}`, fields))),
        )
        for (const other of answers.slice(1)) expect(other).toEqual(answers[0])
      }
      const oks = await Promise.all(
        urls.map(async (url) =>
          answer(
            await postForm(`${url}${LOGOUT_PATH}`, {
              logout_token: await issuer.mintLogoutToken({ sid: randomUUID() }),
            }),
          ),
        ),
      )
      for (const other of oks.slice(1)) expect(other).toEqual(oks[0])
    } finally {
      await Promise.all(servers.map(close))
    }
  })

  it.each([
    ['express', () => expressAdapter.tollgate({ ...options, revocation: {} })],
    ['koa', () => koaAdapter.tollgate({ ...options, revocation: {} })],
  ])('%s refuses to mount the endpoints without revocation.callbacks', (_name, create) => {
    const auth = create()
    expect(() => auth.backchannelLogout()).toThrow('needs "revocation.callbacks"')
    expect(() => auth.keycloakPushNotBefore()).toThrow(TypeError)
  })
})

describe('two gateway instances (Express and Koa) on one Redis', () => {
  let redis: RedisServer
  let express: ProtectedServer
  let koa: ProtectedServer
  let urls: { express: string; koa: string }
  const events = { express: [] as GateEvent[], koa: [] as GateEvent[] }

  beforeAll(async () => {
    redis = await startRedisServer()
    const shared = async (received: GateEvent[]): Promise<GateOptions> => ({
      ...options,
      revocation: {
        store: { redis: await redis.client() },
        callbacks: { clientIds: 'gateway' },
      },
      onEvent: (event) => received.push(event),
    })
    express = (APPS.find(([name]) => name === 'express 5') as (typeof APPS)[number])[1](
      await shared(events.express),
    )
    koa = (APPS.find(([name]) => name === 'koa 3') as (typeof APPS)[number])[1](
      await shared(events.koa),
    )
    urls = { express: await listen(express), koa: await listen(koa) }
  })
  afterAll(async () => {
    await Promise.all([express, koa].map(close))
    await redis.stop()
  })

  async function refusedWithin(url: string, token: string): Promise<number> {
    const started = performance.now()
    while (performance.now() - started < LIMIT_MS) {
      if ((await get(url, token)) === 401) return performance.now()
    }
    throw new Error(`${url} still admits the signed-out session after ${LIMIT_MS} ms`)
  }

  it('refuses a signed-out session at both after a back-channel logout posted to either', async ({
    annotate,
  }) => {
    const rounds = 60
    const elapsed: number[] = []
    for (let i = 0; i < rounds; i++) {
      const sid = `session-${randomUUID()}`
      const token = await issuer.mint({ sid, iat: now() - 10 })
      // Both instances hold the token in their verified-token cache.
      expect([await get(urls.express, token), await get(urls.koa, token)]).toEqual([200, 200])
      const [to, other] = i % 2 === 0 ? [urls.express, urls.koa] : [urls.koa, urls.express]
      const started = performance.now()
      const res = await postForm(`${to}${LOGOUT_PATH}`, {
        logout_token: await issuer.mintLogoutToken({ sid }),
      })
      expect(res.status).toBe(200)
      expect(await get(to, token)).toBe(401)
      elapsed.push((await refusedWithin(other, token)) - started)
    }
    elapsed.sort((x, y) => x - y)
    const at = (p: number) =>
      (
        elapsed[Math.min(elapsed.length - 1, Math.ceil((p / 100) * elapsed.length) - 1)] as number
      ).toFixed(1)
    await annotate(
      `logout POSTed to one instance → refused by the other (HTTP, loopback), ${rounds} sessions: p50 ${at(50)} ms, p90 ${at(90)} ms, p99 ${at(99)} ms, max ${at(100)} ms; ${elapsed.filter((ms) => ms <= 1000).length}/${rounds} within 1 s`,
    )
    // Each instance said once, before it first held the list, that this Redis persists nothing.
    expect(volatileOf(events.express)).toEqual([VOLATILE])
    expect(volatileOf(events.koa)).toEqual([VOLATILE])
  })
})

describe('a freshly started instance behind each adapter', () => {
  let redis: RedisServer
  let admin: Awaited<ReturnType<RedisServer['client']>>
  let prefixes = 0
  beforeAll(async () => {
    redis = await startRedisServer()
    admin = await redis.client()
  })
  afterAll(async () => {
    await admin.call('CLIENT', 'UNPAUSE')
    await redis.stop()
  })

  it.each(ALL_APPS)(
    '%s refuses a token revoked before it started, for requests sent before its first synchronization',
    async (_name, createApp) => {
      prefixes += 1
      const keyPrefix = `fresh${prefixes}`
      const token = await issuer.mint({ sub: 'long-gone', iat: now() - 10 })
      const earlier = createApp({
        ...options,
        revocation: { store: { redis: await redis.client() }, keyPrefix },
        onEvent: () => {},
      })
      await earlier.gate.revoke({ sub: 'long-gone' })
      await close(earlier)
      // Writes paused: the new instance connects and subscribes, but its first snapshot (a
      // script) waits until unpaused. Requests sent meanwhile must wait for the list.
      const client = await redis.client()
      await admin.call('CLIENT', 'PAUSE', '600000', 'WRITE')
      // `skip` runs first in every decision: it counts the requests the gate has received.
      let arrived = 0
      const events: GateEvent[] = []
      const server = createApp({
        ...options,
        skip: () => {
          arrived += 1
          return false
        },
        revocation: { store: { redis: client }, keyPrefix, storeTimeoutMs: 60_000 },
        onEvent: (event) => events.push(event),
      })
      try {
        const url = await listen(server)
        let unpaused = false
        const answeredWhilePaused: number[] = []
        const statuses = Array.from({ length: 10 }, () =>
          get(url, token).then((status) => {
            if (!unpaused) answeredWhilePaused.push(status)
            return status
          }),
        )
        const deadline = Date.now() + LIMIT_MS
        while (arrived < 10) {
          if (Date.now() > deadline) throw new Error(`only ${arrived} requests reached the gate`)
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        unpaused = true
        await admin.call('CLIENT', 'UNPAUSE')
        expect(answeredWhilePaused).toEqual([])
        expect(new Set(await Promise.all(statuses))).toEqual(new Set([401]))
        // Requests during the first load are answered by lookups in Redis; the list counts as
        // held, and ready() resolves, only once the store's persistence has been reported.
        await server.gate.ready()
        expect(volatileOf(events)).toEqual([VOLATILE])
      } finally {
        await admin.call('CLIENT', 'UNPAUSE')
        await close(server)
      }
    },
  )
})

describe('a freshly started instance on a large list, behind each adapter', () => {
  let redis: RedisServer
  let admin: Awaited<ReturnType<RedisServer['client']>>
  let prefixes = 0
  beforeAll(async () => {
    redis = await startRedisServer()
    admin = await redis.client()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it.each(APPS)(
    '%s answers 401 to a revoked token and 200 to the others while the list loads, never 503',
    async (_name, createApp) => {
      prefixes += 1
      const keyPrefix = `large${prefixes}`
      const jtis = await fillList(admin, keyPrefix, issuer.issuer('acme'), 20_000)
      const store = watchStore(await redis.client())
      // The load's first page comes, the rest wait until the requests are answered.
      store.holdPages(1)
      const server = createApp({
        ...options,
        revocation: { store: { redis: store.client as never }, keyPrefix },
      })
      try {
        const url = await listen(server)
        const deadline = Date.now() + LIMIT_MS
        while (store.runs.page < 1) {
          if (Date.now() > deadline) throw new Error('the load did not begin')
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        const revoked = await Promise.all(
          [jtis[3], jtis[10_000], jtis[19_999]].map((jti) => issuer.mint({ jti, iat: now() - 10 })),
        )
        const clean = await Promise.all(
          ['a', 'b'].map((sub) => issuer.mint({ sub, iat: now() - 10 })),
        )
        const statuses = await Promise.all([...revoked, ...clean].map((token) => get(url, token)))
        // Answered before the load went past its first page.
        expect(store.runs.page).toBeLessThan(20)
        expect(statuses).toEqual([401, 401, 401, 200, 200])
        store.release()
      } finally {
        store.release()
        await close(server)
      }
    },
  )
})
