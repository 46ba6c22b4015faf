/**
 * Key rotation and unknown-kid floods through Express 4/5 and Koa 2/3, with the default `jwks`
 * options: a key the provider rotated in is accepted within a second of its first request, however
 * recently keys were fetched, while a flood of random kids backs off to one fetch per cooldown.
 * Time is a fake clock (Date); a request may still wait up to `minCooldownMs` of real time for its
 * refetch slot, which the assertions add as a constant, never measure.
 */
import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { bearer, INVALID_TOKEN, OK, send, useApps } from '../security/helpers.js'
import { accessClaims, attackerKey, signWith } from '../security/tokens.js'

const COOLDOWN_MS = 30_000
const MIN_COOLDOWN_MS = 500

let issuer: TestIssuer
let now = Date.UTC(2031, 0, 1)
const advance = (ms: number) => {
  now += ms
  vi.setSystemTime(now)
}

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'], now })
  issuer = await createTestIssuer({ realms: ['acme'], algorithms: ['RS256'], audience: 'gateway' })
})
afterAll(async () => {
  vi.useRealTimers()
  await issuer.close()
})

const apps = useApps(() => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
}))

const attacker = attackerKey('rsa').privateKey
const randomKidToken = () =>
  signWith(attacker, 'RS256', { alg: 'RS256', kid: randomUUID() }, accessClaims(issuer))

describe('key rotation under traffic, default options', () => {
  beforeAll(async () => {
    await apps.expectAll(bearer(await issuer.mint()), OK)
  })

  it('accepts a rotated key on the first request that carries it after a quiet period', async () => {
    advance(COOLDOWN_MS + 1)
    issuer.resetCounts()
    await issuer.rotate()
    await apps.expectAll(bearer(await issuer.mint()), OK)
    expect(issuer.fetchCount()).toBe(apps.servers.length)
  })

  it('accepts a rotated key within 1 s of its first request just after an unknown-kid fetch', async () => {
    advance(COOLDOWN_MS + 1)
    // Every gate has just fetched, for a kid that stayed unknown: the interval is now 1 s.
    await apps.expectAll(bearer(randomKidToken()), INVALID_TOKEN)
    issuer.resetCounts()
    await issuer.rotate()
    const token = await issuer.mint()
    const firstSentAt = now + 100
    const acceptedAt = new Map<string, number>()
    for (let step = 0; step < 50 && acceptedAt.size < apps.servers.length; step++) {
      advance(100)
      const answers = await Promise.all(
        apps.servers.map(([, server]) => send(server, bearer(token))),
      )
      answers.forEach((answer, index) => {
        const name = apps.servers[index]?.[0] as string
        if (answer.status === 200 && !acceptedAt.has(name)) acceptedAt.set(name, now)
        else if (answer.status !== 200) expect(answer.status).toBe(401)
      })
    }
    expect(acceptedAt.size).toBe(apps.servers.length)
    for (const at of acceptedAt.values()) {
      expect(at + MIN_COOLDOWN_MS - firstSentAt).toBeLessThanOrEqual(1000)
    }
    expect(issuer.fetchCount()).toBe(apps.servers.length)
  })
})

describe('a flood of random kids, default options', () => {
  // 10,000 real requests: a deadline for a loaded, shared 2-core machine (it timed out at 20 s
  // there), not a measure.
  it('backs off over 10,000 requests to one fetch per gate per cooldown', {
    timeout: 120_000,
  }, async () => {
    advance(COOLDOWN_MS + 1)
    issuer.resetCounts()
    const tokens = Array.from({ length: 10_000 }, randomKidToken)
    const servers = apps.servers.map(([, server]) => server)
    const startedAt = now
    const fetchesAt: Array<{ at: number; count: number }> = []
    // 200 batches of 50 concurrent requests, spread over the gates, 600 ms apart: 2 minutes.
    for (let start = 0; start < tokens.length; start += 50) {
      const batch = tokens.slice(start, start + 50)
      const answers = await Promise.all(
        batch.map((token, index) => send(servers[index % servers.length] as Server, bearer(token))),
      )
      for (const answer of answers) expect(answer.status).toBe(401)
      fetchesAt.push({ at: now - startedAt, count: issuer.fetchCount() })
      advance(600)
    }
    const spanMs = now - startedAt
    const perGate = issuer.fetchCount() / servers.length
    // Ramping from 500 ms to the 30 s cooldown takes log2(60) ≈ 6 doublings; then one per cooldown.
    const rampFetches = Math.ceil(Math.log2(COOLDOWN_MS / MIN_COOLDOWN_MS))
    expect(perGate).toBeLessThanOrEqual(1 + rampFetches + Math.ceil(spanMs / COOLDOWN_MS))
    expect(perGate).toBeGreaterThanOrEqual(2)
    // The last minute, in steady state: one per cooldown (plus one at the window's edge).
    const minuteBefore = fetchesAt.findLast((entry) => entry.at <= spanMs - 60_000)?.count ?? 0
    const lastMinute = (issuer.fetchCount() - minuteBefore) / servers.length
    expect(lastMinute).toBeLessThanOrEqual(60_000 / COOLDOWN_MS + 1)
  })
})
