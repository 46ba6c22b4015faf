/**
 * A subject's claims changed at the provider (CAEP `token-claims-change`, `assurance-level-change`):
 * the introspection verdicts of its tokens are dropped, so that the next request asks the provider
 * again and is judged on the claims as they are now, on this instance and, through the revocation
 * store's Redis channel, on every other. Counted in calls to the provider's endpoint. A call in
 * flight when the drop happens keeps no verdict; the message on the channel is bounded.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import type { Gate } from '../../src/gate/gate.js'
import { createGate, type GateOptions } from '../../src/index.js'
import { IntrospectionCache } from '../../src/introspection/cache.js'
import { dropMessage, parseDrop, parseMessage } from '../../src/revocation/redis-scripts.js'
import { createSignalReceiver, type SignalReceiver } from '../../src/signals/receiver.js'
import {
  createTestTransmitter,
  SSF_EVENTS,
  type TestTransmitter,
} from '../../src/testing/ssf-transmitter.js'
import {
  type IntrospectionEndpointStub,
  startIntrospectionEndpoint,
} from '../helpers/introspection-endpoint.js'
import { type RedisServer, startRedisServer } from '../helpers/redis.js'

const AUDIENCE = 'https://gateway.example'
const PUSH = 'Bearer push-secret-for-drops'

let endpoint: IntrospectionEndpointStub
let transmitter: TestTransmitter
/** Each token's subject and scope as the provider answers them now. */
const provider = new Map<string, { sub: string; scope: string }>()
const closing: (() => unknown)[] = []

beforeAll(async () => {
  endpoint = await startIntrospectionEndpoint()
  transmitter = await createTestTransmitter({ audience: AUDIENCE })
  endpoint.answer = (form) => {
    const held = provider.get(form.get('token') ?? '')
    return {
      body: JSON.stringify(
        held === undefined
          ? { active: false }
          : {
              active: true,
              ...held,
              aud: 'orders',
              client_id: 'shop',
              iat: Math.floor(Date.now() / 1000) - 10,
              exp: Math.floor(Date.now() / 1000) + 600,
            },
      ),
    }
  }
})
afterAll(async () => {
  await transmitter.close()
  await endpoint.close()
})
afterEach(async () => {
  for (const close of closing.splice(0)) await close()
  endpoint.calls.length = 0
})

const issuer = () => `${endpoint.url}/idp`

function gateWith(extra: Partial<GateOptions> = {}): Gate {
  const gate = createGate({
    issuers: [
      {
        issuer: issuer(),
        jwksUri: `${endpoint.url}/jwks`,
        introspection: {
          endpoint: `${endpoint.url}/introspect`,
          clientId: 'orders-api',
          clientSecret: 'orders-secret',
        },
      },
    ],
    audience: 'orders',
    ...extra,
  })
  closing.push(() => gate.close())
  return gate
}

function receiverOf(gate: Gate, extra: Record<string, unknown> = {}): SignalReceiver {
  const receiver = createSignalReceiver({
    gate,
    transmitter: { issuer: transmitter.issuer },
    audience: AUDIENCE,
    authorization: PUSH,
    ...extra,
  })
  closing.push(() => receiver.close())
  return receiver
}

/** A token the provider answers for, as `sub` with `scope`. */
function tokenOf(sub: string, scope = 'read'): string {
  const token = randomBytes(24).toString('base64url')
  provider.set(token, { sub, scope })
  return token
}

const scopesOf = async (gate: Gate, token: string) =>
  (await gate.check({ headers: { authorization: `Bearer ${token}` } })).auth?.scopes

async function claimsChanged(receiver: SignalReceiver, sub: string, event: string) {
  const set = await transmitter.sign(event, { format: 'iss_sub', iss: issuer(), sub })
  const answer = await receiver.push({
    method: 'POST',
    headers: { 'content-type': 'application/secevent+jwt', authorization: PUSH },
    body: set.token,
  })
  expect(answer.status).toBe(202)
}

describe('a claims change drops the introspection verdicts of its subject', () => {
  it.each([
    ['token-claims-change', SSF_EVENTS.tokenClaimsChange],
    ['assurance-level-change', SSF_EVENTS.assuranceLevelChange],
  ])(
    '%s: the next request asks the provider again, and gets the claims as they are now',
    async (_name, event) => {
      const gate = gateWith()
      const receiver = receiverOf(gate)
      const token = tokenOf('dana', 'read')
      const other = tokenOf('erin', 'read')
      expect(await scopesOf(gate, token)).toEqual(['read'])
      expect(await scopesOf(gate, other)).toEqual(['read'])
      expect(await scopesOf(gate, token)).toEqual(['read'])
      expect(endpoint.calls).toHaveLength(2)
      // The provider now gives dana more, and says so.
      provider.set(token, { sub: 'dana', scope: 'read write' })
      await claimsChanged(receiver, 'dana', event)
      expect(await scopesOf(gate, token)).toEqual(['read', 'write'])
      expect(endpoint.calls).toHaveLength(3)
      // Asked once, then held again; erin's verdict was not dropped.
      expect(await scopesOf(gate, token)).toEqual(['read', 'write'])
      expect(await scopesOf(gate, other)).toEqual(['read'])
      expect(endpoint.calls).toHaveLength(3)
    },
  )

  it('a stale verdict (staleIfErrorSeconds) is dropped too: the old claims never answer again', () => {
    const cache = new IntrospectionCache<{ sub: string }>({
      maxEntries: 10,
      maxTtlSeconds: 60,
      inactiveTtlSeconds: 5,
      staleIfErrorSeconds: 300,
    })
    cache.keep('a', { sub: 'dana' }, { validFrom: 0, validUntil: 1e12 }, 0)
    cache.keep('b', { sub: 'erin' }, { validFrom: 0, validUntil: 1e12 }, 0)
    expect(cache.stale('a', 61_000)).toEqual({ sub: 'dana' })
    cache.forgetWhere((verdict) => verdict.sub === 'dana')
    expect(cache.stale('a', 61_000)).toBeUndefined()
    expect(cache.verdict('a', 1000)).toBeUndefined()
    expect(cache.verdict('b', 1000)).toEqual({ sub: 'erin' })
  })
})

describe('a call in flight when the drop happens', () => {
  let slow: { url: string; held: ServerResponse[]; calls: number; close(): Promise<void> }

  beforeAll(async () => {
    const held: ServerResponse[] = []
    let calls = 0
    const server = createServer((req, res) => {
      calls += 1
      req.resume()
      req.on('end', () => held.push(res))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    slow = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      held,
      get calls() {
        return calls
      },
      close: async () => {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      },
    }
  })
  afterAll(() => slow.close())

  it('keeps no verdict (its answer may predate the change), and a request after the drop asks anew', async () => {
    const gate = createGate({
      issuers: [
        {
          issuer: issuer(),
          jwksUri: `${endpoint.url}/jwks`,
          introspection: {
            endpoint: `${slow.url}/introspect`,
            clientId: 'orders-api',
            clientSecret: 'orders-secret',
          },
        },
      ],
      audience: 'orders',
    })
    closing.push(() => gate.close())
    const receiver = receiverOf(gate)
    const token = randomBytes(24).toString('base64url')
    const answer = (scope: string) =>
      JSON.stringify({
        active: true,
        sub: 'fay',
        scope,
        aud: 'orders',
        client_id: 'shop',
        exp: Math.floor(Date.now() / 1000) + 600,
      })
    const waitForCalls = async (count: number) => {
      for (let i = 0; i < 500 && slow.held.length < count; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      expect(slow.held).toHaveLength(count)
    }
    const first = scopesOf(gate, token)
    await waitForCalls(1)
    await claimsChanged(receiver, 'fay', SSF_EVENTS.tokenClaimsChange)
    // Asked after the drop: not joined to the call in flight.
    const second = scopesOf(gate, token)
    await waitForCalls(2)
    slow.held[0]?.writeHead(200, { 'content-type': 'application/json' }).end(answer('read'))
    expect(await first).toEqual(['read'])
    slow.held[1]?.writeHead(200, { 'content-type': 'application/json' }).end(answer('read write'))
    expect(await second).toEqual(['read', 'write'])
    // The second call's verdict is held; the first's was not kept over it.
    expect(await scopesOf(gate, token)).toEqual(['read', 'write'])
    expect(slow.calls).toBe(2)
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

  async function instance(prefix: string): Promise<Gate> {
    const client = await redis.client()
    const gate = gateWith({
      revocation: { store: { redis: client as never }, keyPrefix: prefix },
      // A listener, so that the volatile test Redis is reported as an event, not a warning.
      onEvent: () => {},
    })
    await gate.ready()
    return gate
  }

  it('a signal received by one instance makes the other ask the provider again', async () => {
    const a = await instance('drop-1')
    const b = await instance('drop-1')
    const receiver = receiverOf(a)
    const token = tokenOf('gus', 'read')
    // gate.ready() probed the endpoint once per instance: counted from here.
    endpoint.calls.length = 0
    expect(await scopesOf(b, token)).toEqual(['read'])
    expect(await scopesOf(b, token)).toEqual(['read'])
    expect(endpoint.calls).toHaveLength(1)
    provider.set(token, { sub: 'gus', scope: 'read write' })
    await claimsChanged(receiver, 'gus', SSF_EVENTS.tokenClaimsChange)
    // Bounded by count, not by clock: until B heard the drop through Redis.
    let scopes = await scopesOf(b, token)
    for (let i = 0; i < 100 && scopes?.includes('write') !== true; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      scopes = await scopesOf(b, token)
    }
    expect(scopes).toEqual(['read', 'write'])
    expect(endpoint.calls).toHaveLength(2)
  })

  it('Redis down: the SET is not acknowledged (503), so the transmitter sends it again', async () => {
    const a = await instance('drop-2')
    const receiver = receiverOf(a)
    // Keys fetched first, so that only the store fails.
    await claimsChanged(receiver, 'warm', SSF_EVENTS.tokenClaimsChange)
    await redis.kill()
    try {
      const set = await transmitter.sign(SSF_EVENTS.tokenClaimsChange, {
        format: 'iss_sub',
        iss: issuer(),
        sub: 'hal',
      })
      const answer = await receiver.push({
        method: 'POST',
        headers: { 'content-type': 'application/secevent+jwt', authorization: PUSH },
        body: set.token,
      })
      expect(answer.status).toBe(503)
    } finally {
      await redis.restart()
    }
  })
})

describe('the drop message on the revocation channel', () => {
  const ISS = 'https://sso.example.com/realms/acme'

  it('is read back as sent, and ignored by the parser of list changes (instances of earlier versions)', () => {
    const text = dropMessage({ issuer: ISS, kind: 'sub', value: 'alice' }, 'origin-1')
    expect(parseDrop(text)).toEqual({
      subject: { issuer: ISS, kind: 'sub', value: 'alice' },
      origin: 'origin-1',
    })
    expect(parseMessage(text)).toBeUndefined()
    const anyIssuer = dropMessage({ issuer: undefined, kind: 'sid', value: 's-1' }, 'o')
    expect(parseDrop(anyIssuer)?.subject).toEqual({ issuer: undefined, kind: 'sid', value: 's-1' })
  })

  it('is bounded: an oversized message, another kind, or a value past 1024 characters is ignored', () => {
    const origin = 'o'
    expect(parseDrop(`{"drop":["${ISS}","sub","${'x'.repeat(20_000)}"],"o":"o"}`)).toBeUndefined()
    expect(
      parseDrop(dropMessage({ issuer: ISS, kind: 'sub', value: 'x'.repeat(1025) }, origin)),
    ).toBeUndefined()
    expect(parseDrop(JSON.stringify({ drop: [ISS, 'jti', 'x'], o: origin }))).toBeUndefined()
    expect(parseDrop(JSON.stringify({ drop: [ISS, 'sub', ''], o: origin }))).toBeUndefined()
    expect(parseDrop(JSON.stringify({ drop: [ISS, 'sub'], o: origin }))).toBeUndefined()
    expect(parseDrop('{not json')).toBeUndefined()
    expect(parseDrop('[1,"add","x",0,0,0,"o"]')).toBeUndefined()
  })
})
