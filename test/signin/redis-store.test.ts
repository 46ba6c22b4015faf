/**
 * The Redis session store with a real redis-server: two application instances (one Express, one
 * Koa) share it, and a session's rotating refresh token is spent exactly once however many
 * requests on both instances need a fresh token at the same moment. Raw Redis holds no token.
 */
import { randomUUID } from 'node:crypto'

import type { Redis } from 'ioredis'
import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createRedisSessionStore, type SignInEvent } from '../../src/signin/index.js'
import { manualClock } from '../helpers/client-fixtures.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import {
  expressSignInApp,
  koaSignInApp,
  recordingFetch,
  signInOptions,
  signInWith,
  startSignInProvider,
  testKeys,
} from '../helpers/signin.js'

let provider: RunningProvider
let redis: RedisServer
let clients: Redis[]
beforeAll(async () => {
  provider = await startSignInProvider()
  redis = await startRedisServer()
  clients = [await redis.client(), await redis.client()]
})
afterAll(async () => {
  await provider.close()
  await redis.stop()
})

/** Two instances on one Redis, one clock, one key ring. */
function fleet() {
  const clock = manualClock()
  const keys = testKeys()
  const recorder = recordingFetch()
  const events: SignInEvent[] = []
  const options = (redisClient: Redis) =>
    signInOptions(provider, {
      store: createRedisSessionStore({ redis: redisClient }),
      clock,
      keys: () => keys,
      fetch: recorder.fetch,
      onEvent: (event) => events.push(event),
    })
  return {
    clock,
    recorder,
    events,
    express: expressSignInApp(options(clients[0] as Redis)),
    koa: koaSignInApp(options(clients[1] as Redis)),
  }
}

async function rawRedis(client: Redis): Promise<string> {
  const parts: string[] = []
  for (const key of await client.keys('*')) {
    parts.push(key)
    const type = await client.type(key)
    if (type === 'string') parts.push((await client.get(key)) ?? '')
    if (type === 'set') parts.push(...(await client.smembers(key)))
  }
  return parts.join('\n')
}

describe('Redis session store', () => {
  it('spends the refresh token once for 20 concurrent requests on two instances (single-flight)', async () => {
    const { clock, express, koa, events } = fleet()
    const { cookie } = await signInWith(express, provider)
    clock.advance(290_000)
    const before = provider.grants.length
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        request(index % 2 === 0 ? express : koa)
          .get('/token/gateway')
          .set('Cookie', cookie),
      ),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
    expect(new Set(answers.map((answer) => answer.body.jti)).size).toBe(1)
    const grants = provider.grants.slice(before)
    expect(grants.map((grant) => [grant.grantType, grant.ok])).toEqual([['refresh_token', true]])
    const refreshed = events.flatMap((event) =>
      event.type === 'session_refreshed' ? [event.by] : [],
    )
    expect(refreshed).toContain('this_instance')
    expect(refreshed).toContain('other_instance')
  })

  it('serializes refreshes for two products of one session across instances (one rotation each, the rotated refresh token kept)', async () => {
    const { clock, express, koa } = fleet()
    const { cookie } = await signInWith(koa, provider)
    // Both products need a refresh now: gateway's token is near expiry, office has none yet.
    clock.advance(290_000)
    const before = provider.grants.length
    const answers = await Promise.all([
      request(express).get('/token/office').set('Cookie', cookie),
      request(koa).get('/token/gateway').set('Cookie', cookie),
      request(koa).get('/token/office').set('Cookie', cookie),
      request(express).get('/token/gateway').set('Cookie', cookie),
    ])
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200])
    expect(answers.map((answer) => answer.body.aud)).toEqual([
      'office',
      'gateway',
      'office',
      'gateway',
    ])
    // One rotation per product, one after the other, the second spending the first's rotated
    // refresh token (a provider that sees a rotated-out token reused revokes the grant).
    const grants = provider.grants.slice(before)
    expect(grants.map((grant) => [grant.grantType, grant.ok])).toEqual([
      ['refresh_token', true],
      ['refresh_token', true],
    ])
    // And the token stored last is the live one: both products refresh again, on either instance.
    clock.advance(290_000)
    const again = await Promise.all([
      request(koa).get('/token/gateway').set('Cookie', cookie),
      request(express).get('/token/office').set('Cookie', cookie),
    ])
    expect(again.map((answer) => answer.status)).toEqual([200, 200])
    expect(provider.grants.slice(before + 2).map((grant) => [grant.grantType, grant.ok])).toEqual([
      ['refresh_token', true],
      ['refresh_token', true],
    ])
  })

  it('holds no token, session id, cookie or user identity in any Redis key or value', async () => {
    const { express, koa, recorder } = fleet()
    const { cookie } = await signInWith(express, provider)
    await request(koa).get('/token/office').set('Cookie', cookie)
    const stored = await rawRedis(clients[0] as Redis)
    expect(recorder.tokens.size).toBeGreaterThanOrEqual(4)
    for (const token of recorder.tokens) expect(stored).not.toContain(token)
    expect(stored).not.toContain(cookie.split('=')[1]?.split('.')[0] as string)
    expect(stored).not.toContain('user-1')
  })

  it('lets a sign-out on one instance end the session on the other', async () => {
    const { express, koa } = fleet()
    const { cookie } = await signInWith(express, provider)
    expect((await request(koa).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: true,
    })
    await request(koa).post('/auth/logout').set('Cookie', cookie)
    expect((await request(express).get('/public').set('Cookie', cookie)).body).toEqual({
      signedIn: false,
    })
  })

  it('answers 503, not a sign-out, while Redis does not answer', async () => {
    const { express } = fleet()
    const { cookie } = await signInWith(express, provider)
    redis.freeze()
    try {
      const res = await request(express).get('/public').set('Cookie', cookie)
      expect(res.status).toBe(503)
      expect(res.headers['set-cookie']).toBeUndefined()
    } finally {
      redis.thaw()
    }
    const after = await request(express).get('/public').set('Cookie', cookie)
    expect(after.body).toEqual({ signedIn: true })
  })

  it.each([
    ['express', 'express'],
    ['koa', 'koa'],
  ] as const)(
    '%s: a sign-out while Redis does not answer is a 503 that still clears the cookie',
    async (_name, which) => {
      const instances = fleet()
      const app = instances[which]
      const { cookie } = await signInWith(app, provider)
      redis.freeze()
      let res: request.Response
      try {
        res = await request(app).post('/auth/logout').set('Cookie', cookie)
      } finally {
        redis.thaw()
      }
      expect(res.status).toBe(503)
      const cleared = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? []
      expect(cleared.some((line) => /^__Host-tollgate\.sid=;/.test(line))).toBe(true)
    },
  )

  it('waits within its deadline for a client still connecting, as right after the application starts (not 503)', async () => {
    // The guides' client: no offline queue, so ioredis refuses a command outright while it connects.
    const client = redis.starting()
    try {
      expect(client.status).toBe('connecting')
      const store = createRedisSessionStore({ redis: client, keyPrefix: 'start' })
      await store.create('early', 'sealed', 30_000, ['sid.early'])
      expect(await store.read('early', 30_000)).toBe('sealed')
      expect(await store.indexed('sid.early')).toEqual(['early'])
    } finally {
      client.disconnect()
    }
  })

  it('fails at once, not after its deadline, with a client that is not connecting (lazyConnect, never told to)', async () => {
    const client = redis.starting({ lazyConnect: true })
    const store = createRedisSessionStore({ redis: client, keyPrefix: 'never', timeoutMs: 5000 })
    const startedAt = performance.now()
    await expect(store.read('any', 30_000)).rejects.toThrow()
    expect(performance.now() - startedAt).toBeLessThan(1000)
  })

  it('keeps a read-extended session in its sid and sub indexes past the idle lifetime', async () => {
    const client = clients[0] as Redis
    const store = createRedisSessionStore({ redis: client, keyPrefix: 'index-life' })
    // Idle 300 ms, absolute 30 s: real Redis expiries, read every 100 ms for three idle windows.
    await store.create('s1', 'sealed', 300, ['sid.a', 'sub.a'], 30_000)
    for (let read = 0; read < 9; read++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await store.read('s1', 300)).toBe('sealed')
    }
    expect(await store.indexed('sid.a')).toEqual(['s1'])
    expect(await store.indexed('sub.a')).toEqual(['s1'])
    // A later, shorter session of the same user never shortens the index.
    await store.create('s2', 'sealed', 300, ['sub.a'], 300)
    expect(await client.pttl('index-life:index:sub.a')).toBeGreaterThan(1000)
  })

  it('removes a session from its sid and sub indexes when it ends, however often the user signs in', async () => {
    const client = clients[0] as Redis
    const prefix = `ended-${randomUUID()}`
    const app = expressSignInApp(
      signInOptions(provider, {
        store: createRedisSessionStore({ redis: client, keyPrefix: prefix }),
        keys: testKeys(),
      }),
    )
    for (let round = 0; round < 4; round++) {
      const { cookie } = await signInWith(app, provider, 'often')
      expect((await request(app).post('/auth/logout').set('Cookie', cookie)).status).toBe(303)
    }
    const indexes = await client.keys(`${prefix}:index:*`)
    const members = await Promise.all(indexes.map((index) => client.smembers(index)))
    expect(members.flat()).toEqual([])
  })

  it('drops sessions that expired in Redis from an index when the index grows or is walked', async () => {
    const client = clients[0] as Redis
    const prefix = `expired-${randomUUID()}`
    const store = createRedisSessionStore({ redis: client, keyPrefix: prefix })
    await store.create('s1', 'sealed', 60_000, ['sub.a'], 60_000)
    await store.create('s2', 'sealed', 60_000, ['sub.a', 'sid.b'], 60_000)
    // What Redis does at a session's idle expiry: the key goes, nobody calls delete().
    await client.del(`${prefix}:{s1}`)
    await store.create('s3', 'sealed', 60_000, ['sub.a'], 60_000)
    expect((await client.smembers(`${prefix}:index:sub.a`)).sort()).toEqual(['s2', 's3'])
    await client.del(`${prefix}:{s2}`)
    expect(await store.indexed('sid.b')).toEqual([])
    expect(await client.scard(`${prefix}:index:sid.b`)).toBe(0)
  })

  it('gives the indexes of a signed-in session its absolute lifetime, not its idle one', async () => {
    const client = clients[0] as Redis
    const prefix = `absolute-${randomUUID()}`
    const app = expressSignInApp(
      signInOptions(provider, {
        store: createRedisSessionStore({ redis: client, keyPrefix: prefix }),
        keys: testKeys(),
        session: { idleTimeoutSeconds: 60, absoluteTimeoutSeconds: 3600 },
      }),
    )
    await signInWith(app, provider)
    const indexes = await client.keys(`${prefix}:index:*`)
    expect(indexes.length).toBeGreaterThanOrEqual(1)
    for (const index of indexes) expect(await client.pttl(index)).toBeGreaterThan(60_000)
  })
})

describe('createRedisSessionStore options', () => {
  it.each(['a{b}', 'has space', '', 'x'.repeat(65), 42])(
    'refuses the key prefix %j, which could move the hash tag of a session and its lock',
    (keyPrefix) => {
      expect(() =>
        createRedisSessionStore({
          redis: { defineCommand() {} } as never,
          keyPrefix: keyPrefix as never,
        }),
      ).toThrow(
        /^createRedisSessionStore\(options\): "keyPrefix" must be 1 to 64 printable ASCII characters without spaces or braces/,
      )
    },
  )
})
