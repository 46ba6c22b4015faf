/**
 * Token Status Lists through every adapter (Express 4/5, Koa 2/3, Fastify 4/5, Hono, Fetch and
 * NestJS on both platforms), against the test issuer's own lists: a token whose list says VALID
 * is admitted, cached or not; once the issuer sets INVALID or SUSPENDED (and the gate's copy is
 * older than the list's time), the same token is 401 `invalid_token`; a list that cannot be had is
 * 503 with `Retry-After`, never 401 and never an unchecked 200.
 */
import type { Server } from 'node:http'

import request from 'supertest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { NEST_APPS } from '../helpers/nest-apps.js'

const EVERY_APP = [...APPS, ...NEST_APPS]
const ROUTE = '/api/v1/billing/subscriptions'

let issuer: TestIssuer
beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
})
afterAll(async () => {
  await issuer.close()
})

describe.each(EVERY_APP)('%s: Token Status List', (name, createApp) => {
  let app: Server & { readonly gate?: { close(): Promise<void> } }
  const events: GateEvent[] = []
  // Each app its own list, so that one app's statuses never decide another's.
  const listName = name.replace(/[^A-Za-z0-9]/g, '-')

  beforeAll(() => {
    app = createApp({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      // The shortest the options allow: a status set now is read within a second.
      statusList: { minCacheSeconds: 1, maxCacheSeconds: 1 },
      onEvent: (event) => events.push(event),
    })
  })
  afterAll(async () => {
    await app.gate?.close()
    app.close()
  })

  const get = (token: string) => request(app).get(ROUTE).set('Authorization', `Bearer ${token}`)

  it('admits a token whose index is VALID, then refuses it once the issuer revokes it (401 status_invalid)', async () => {
    const list = issuer.statusList(listName, { ttlSeconds: 1 })
    const token = await issuer.mint({ status: list.reference(3) })
    expect((await get(token)).status).toBe(200)
    expect((await get(token)).status).toBe(200)
    list.set(3, 1)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    // The first request past the list's time may still be answered from it while the new list
    // is fetched; within the next second the new list decides.
    await get(token)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const refused = await get(token)
    expect(refused.status).toBe(401)
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"')
    expect(refused.body).toEqual({ error: 'invalid_token', error_description: 'invalid token' })
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'rejected', reason: 'status_invalid' }),
    )
  })

  it('refuses a SUSPENDED token and an index outside the list', async () => {
    const list = issuer.statusList(`${listName}-s`, { size: 16 })
    list.set(2, 2)
    expect((await get(await issuer.mint({ status: list.reference(2) }))).status).toBe(401)
    expect((await get(await issuer.mint({ status: list.reference(16) }))).status).toBe(401)
    expect(events).toContainEqual(expect.objectContaining({ reason: 'status_suspended' }))
    expect(events).toContainEqual(expect.objectContaining({ reason: 'status_index' }))
  })

  it('answers 503 with Retry-After when the list cannot be had, never 401 or 200', async () => {
    const missing = `${issuer.issuer('acme')}/statuslists/${listName}-none`
    const answer = await get(
      await issuer.mint({ status: { status_list: { idx: 0, uri: missing } } }),
    )
    expect(answer.status).toBe(503)
    expect(answer.headers['retry-after']).toBeDefined()
    expect(answer.body.error).toBe('temporarily_unavailable')
  })

  it('admits a token without status, as before', async () => {
    expect((await get(await issuer.mint({}))).status).toBe(200)
  })
})
