/**
 * The receiver in a fleet (SSF 1.0 §9 and RFC 8935 §2: a SET is acknowledged once it is applied):
 * two instances share the revocation list and the receiver's memory in Redis. A SET pushed to
 * one is enforced by the other; the same SET pushed to the other is not applied twice; an
 * instance whose Redis does not answer replies 503, so that the transmitter sends it again.
 */
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { GateEvent } from '../../src/events.js'
import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import {
  decided,
  nowSeconds,
  pushRequest,
  type Receiving,
  receiving,
  refusals,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

let world: SignalsWorld
let redis: RedisServer
let instances: Receiving[] = []

beforeAll(async () => {
  world = await startWorld()
  redis = await startRedisServer()
})
afterAll(async () => {
  await redis.stop()
  await world.close()
})
afterEach(async () => {
  for (const instance of instances) await instance.close()
  instances = []
})

async function instance(client: Redis, prefix: string): Promise<Receiving> {
  const gateEvents: GateEvent[] = []
  const made = receiving(
    world,
    { store: { redis: client }, keyPrefix: `${prefix}:ssf`, timeoutMs: 300 },
    {
      revocation: { store: { redis: client as never }, keyPrefix: `${prefix}:rv` },
      onEvent: (event) => gateEvents.push(event),
    },
  )
  instances.push(made)
  await made.gate.ready()
  return made
}

const user = (sub: string) => ({ format: 'iss_sub', iss: world.tokenIssuer, sub })

/** Waits (bounded by count, not by clock) until `check` is true. */
async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return false
}

describe('a fleet sharing Redis', () => {
  it('a SET pushed to one instance is refused by the other, and applied once across both', async () => {
    const a = await instance(await redis.client(), 'f1')
    const b = await instance(await redis.client(), 'f1')
    const token = await world.issuer.mint({ sub: 'fleet-1', iat: nowSeconds() - 30 })
    expect(await decided(b.gate, token)).toBe('admitted')
    const set = await world.transmitter.sign(SSF_EVENTS.accountDisabled, user('fleet-1'))
    expect((await a.receiver.push(pushRequest(set.token))).status).toBe(202)
    expect(await eventually(async () => (await decided(b.gate, token)) === 'revoked')).toBe(true)
    // The transmitter retries at the other instance (it lost the 202): acknowledged, not reapplied.
    expect((await b.receiver.push(pushRequest(set.token))).status).toBe(202)
    expect(refusals(b.events)).toEqual(['duplicate'])
    expect(b.events.some((event) => event.type === 'signal_applied')).toBe(false)
  })

  it('Redis down: 503, nothing acknowledged; the retry once Redis is back is applied', async () => {
    const a = await instance(await redis.client(), 'f2')
    const token = await world.issuer.mint({ sub: 'fleet-2', iat: nowSeconds() - 30 })
    const set = await world.transmitter.sign(SSF_EVENTS.credentialChange, user('fleet-2'))
    // Keys fetched first, so that only the store fails.
    const warm = await world.transmitter.sign(SSF_EVENTS.tokenClaimsChange, user('warm'))
    expect((await a.receiver.push(pushRequest(warm.token))).status).toBe(202)
    await redis.kill()
    const answer = await a.receiver.push(pushRequest(set.token))
    expect(answer.status).toBe(503)
    expect(answer.headers['Retry-After']).toBe('1')
    expect(refusals(a.events)).toContain('store_unavailable')
    expect(a.events.some((event) => event.type === 'signal_applied' && event.jti === set.jti)).toBe(
      false,
    )
    await redis.restart()
    expect(
      await eventually(async () => (await a.receiver.push(pushRequest(set.token))).status === 202),
    ).toBe(true)
    expect(await decided(a.gate, token)).toBe('revoked')
  })
})
