/**
 * CAEP `token-claims-change` and `assurance-level-change` (CAEP 1.0 §3.3, §3.4) drop the cached
 * verdicts of the tokens their subject names, on this instance and on every instance sharing the
 * revocation store: the next request with one of them is verified again (counted in signature
 * checks) instead of being decided from the verified-token cache. Introspected tokens, where the
 * provider answers with the changed claims, are tested in test/introspection/drop.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

vi.mock('../../src/token/algorithms.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/token/algorithms.js')>()
  return { ...original, signatureMatches: vi.fn(original.signatureMatches) }
})

import { SSF_EVENTS } from '../../src/testing/ssf-transmitter.js'
import { signatureMatches } from '../../src/token/algorithms.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'
import {
  decided,
  nowSeconds,
  pushRequest,
  type Receiving,
  receiving,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

const signatureChecks = vi.mocked(signatureMatches)
let world: SignalsWorld
let made: Receiving[] = []

beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world.close()
})
afterEach(async () => {
  for (const instance of made) await instance.close()
  made = []
})

const user = (sub: string) => ({ format: 'iss_sub', iss: world.tokenIssuer, sub })

/** Signature checks `check` makes. */
async function checksOf(check: () => Promise<unknown>): Promise<number> {
  const before = signatureChecks.mock.calls.length
  await check()
  return signatureChecks.mock.calls.length - before
}

async function signal(to: Receiving, event: string, subject: Record<string, unknown>) {
  const set = await world.transmitter.sign(event, subject)
  expect((await to.receiver.push(pushRequest(set.token))).status).toBe(202)
}

describe('the verified-token cache', () => {
  it.each([
    ['token-claims-change', SSF_EVENTS.tokenClaimsChange],
    ['assurance-level-change', SSF_EVENTS.assuranceLevelChange],
  ])(
    '%s: the subject’s next request is verified again, others stay cached',
    async (_name, event) => {
      const instance = receiving(world)
      made.push(instance)
      const token = await world.issuer.mint({ sub: 'claire', iat: nowSeconds() - 30 })
      const other = await world.issuer.mint({ sub: 'dmitri', iat: nowSeconds() - 30 })
      expect(await checksOf(() => decided(instance.gate, token))).toBe(1)
      expect(await checksOf(() => decided(instance.gate, other))).toBe(1)
      expect(await checksOf(() => decided(instance.gate, token))).toBe(0)
      await signal(instance, event, user('claire'))
      expect(await checksOf(() => decided(instance.gate, token))).toBe(1)
      expect(await decided(instance.gate, token)).toBe('admitted')
      expect(await checksOf(() => decided(instance.gate, other))).toBe(0)
    },
  )

  it('a session named in a complex subject drops the verdicts of tokens with that sid', async () => {
    const instance = receiving(world)
    made.push(instance)
    const mine = await world.issuer.mint({ sub: 'ezra', sid: 'sess-1', iat: nowSeconds() - 30 })
    const elsewhere = await world.issuer.mint({
      sub: 'fern',
      sid: 'sess-2',
      iat: nowSeconds() - 30,
    })
    await decided(instance.gate, mine)
    await decided(instance.gate, elsewhere)
    await signal(instance, SSF_EVENTS.tokenClaimsChange, {
      format: 'complex',
      session: { format: 'opaque', id: 'sess-1' },
    })
    expect(await checksOf(() => decided(instance.gate, mine))).toBe(1)
    expect(await checksOf(() => decided(instance.gate, elsewhere))).toBe(0)
  })

  it('a subject of an issuer the gate does not have is acknowledged and reported unmapped', async () => {
    const instance = receiving(world)
    made.push(instance)
    await signal(instance, SSF_EVENTS.tokenClaimsChange, {
      format: 'iss_sub',
      iss: 'https://elsewhere.example',
      sub: 'x',
    })
    expect(instance.events).toContainEqual(
      expect.objectContaining({ type: 'signal_refused', reason: 'unmapped_subject' }),
    )
  })
})

describe('across a fleet sharing the revocation store (Redis)', () => {
  let redis: RedisServer

  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(async () => {
    await redis.stop()
  })

  it('a signal received by one instance makes the other verify the token again', async () => {
    const instances: Receiving[] = []
    for (let i = 0; i < 2; i += 1) {
      const client = await redis.client()
      const instance = receiving(
        world,
        { store: { redis: client }, keyPrefix: 'claims:ssf' },
        {
          revocation: { store: { redis: client as never }, keyPrefix: 'claims:rv' },
          // A listener, so that the volatile test Redis is reported as an event, not a warning.
          onEvent: () => {},
        },
      )
      await instance.gate.ready()
      instances.push(instance)
      made.push(instance)
    }
    const [a, b] = instances as [Receiving, Receiving]
    const token = await world.issuer.mint({ sub: 'gwen', iat: nowSeconds() - 30 })
    expect(await checksOf(() => decided(b.gate, token))).toBe(1)
    expect(await checksOf(() => decided(b.gate, token))).toBe(0)
    await signal(a, SSF_EVENTS.tokenClaimsChange, user('gwen'))
    // Bounded by count, not by clock: until B heard the drop through Redis.
    let checks = 0
    for (let i = 0; i < 100 && checks === 0; i += 1) {
      checks = await checksOf(() => decided(b.gate, token))
      if (checks === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(checks).toBe(1)
    expect(await checksOf(() => decided(b.gate, token))).toBe(0)
  })
})
