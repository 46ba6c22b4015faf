/**
 * The direct lookups that decide requests while a fresh instance loads the list (see
 * src/revocation/redis-lookup.ts) must fail closed: a lookup Redis did not answer says nothing
 * about the token, so the request is 503, never admitted as "not revoked". First the lookup on
 * its own (a Redis client whose scripts fail), then through HTTP on every adapter with a real
 * `redis-server` of the test's own, frozen (SIGSTOP) while the first load is held after it began.
 */
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GateEvent } from '../../src/events.js'
import type { GateOptions } from '../../src/gate/options.js'
import { identityOf, RevocationList } from '../../src/revocation/list.js'
import { RedisLink } from '../../src/revocation/redis-link.js'
import { startLookups } from '../../src/revocation/redis-lookup.js'
import type { PendingWrites } from '../../src/revocation/redis-writes.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import { fillList, watchStore } from '../helpers/revocation-store.js'

/** Polling bound: generous, a loaded 2-core machine must never fail on it. Not a timing assertion. */
const LIMIT_MS = 10_000
const ROUTE = '/api/v1/billing/subscriptions'

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + LIMIT_MS
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${LIMIT_MS} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe('a direct lookup Redis does not answer', () => {
  const field = identityOf({ issuer: 'https://idp', kind: 'jti', value: 'gone' })

  function lookupsOver(evalScript: () => Promise<unknown>) {
    const events: GateEvent[] = []
    const link = new RedisLink(
      { eval: evalScript } as never,
      { storeTimeoutMs: 50, keyPrefix: 'unit' },
      (event) => events.push(event),
    )
    const state = {
      link,
      list: new RevocationList(),
      writes: { queued: () => undefined } as unknown as PendingWrites,
      touched: new Map<string, number>(),
      closed: () => false,
      forgetTouched: () => {},
    }
    const lookups = startLookups(state, () => {})
    lookups.start()
    return { lookups, events, state }
  }

  it('answers false (cannot decide), never true, when the script fails', async () => {
    const { lookups, events } = lookupsOver(() => Promise.reject(new Error('connection lost')))
    expect(await lookups.lookup([field])).toBe(false)
    expect(events.map((event) => event.type)).toEqual(['revocation_store_error'])
  })

  it('answers false when the script outlasts storeTimeoutMs', async () => {
    const { lookups } = lookupsOver(() => new Promise(() => {}))
    expect(await lookups.lookup([field])).toBe(false)
  })

  it('does not remember a field whose lookup failed: the next request asks Redis again', async () => {
    let fail = true
    let asked = 0
    const { lookups, state } = lookupsOver(async () => {
      asked += 1
      if (fail) throw new Error('connection lost')
      return ['1', [`100:${Date.now() + 60_000}`]]
    })
    expect(await lookups.lookup([field])).toBe(false)
    expect(lookups.lookup([field])).not.toBe(true)
    fail = false
    expect(await lookups.lookup([field])).toBe(true)
    expect(asked).toBe(3)
    expect(state.list.size).toBe(1)
    // Read once: now known without asking.
    expect(lookups.lookup([field])).toBe(true)
    expect(asked).toBe(3)
  })
})

describe('a revoked token while the first load runs and Redis stops answering, behind each adapter', () => {
  let issuer: TestIssuer
  let options: GateOptions
  let redis: RedisServer
  let admin: Awaited<ReturnType<RedisServer['client']>>
  let prefixes = 0

  beforeAll(async () => {
    issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
    options = {
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
    }
    redis = await startRedisServer()
    admin = await redis.client()
  })
  afterAll(async () => {
    redis?.thaw()
    await redis?.stop()
    await issuer?.close()
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

  const get = (url: string, token: string) =>
    fetch(`${url}${ROUTE}`, { headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
      await res.arrayBuffer()
      return { status: res.status, retryAfter: res.headers.get('retry-after') }
    })

  it.each(APPS)('%s answers 503 with Retry-After, never 200', async (_name, createApp) => {
    prefixes += 1
    const keyPrefix = `frozen${prefixes}`
    const [jti] = await fillList(admin, keyPrefix, issuer.issuer('acme'), 10)
    const store = watchStore(await redis.client())
    // Every page of the load waits: the list holds nothing, lookups decide every request.
    store.holdPages(0)
    const events: GateEvent[] = []
    const server = createApp({
      ...options,
      revocation: { store: { redis: store.client as never }, keyPrefix, storeTimeoutMs: 200 },
      onEvent: (event) => events.push(event),
    })
    try {
      const url = await listen(server)
      await until('the load has begun', () => store.runs.page >= 1)
      const revoked = await issuer.mint({ jti, iat: Math.floor(Date.now() / 1000) - 10 })
      redis.freeze()
      const answer = await get(url, revoked)
      redis.thaw()
      expect(answer).toEqual({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) })
      expect(events.map((event) => event.type)).toContain('revocation_store_error')
      // Redis answers again: the same token, looked up, is refused as revoked.
      expect((await get(url, revoked)).status).toBe(401)
    } finally {
      redis.thaw()
      store.release()
      await close(server)
    }
  })
})
