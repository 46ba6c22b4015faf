/**
 * Stream management (SSF 1.0 §8) against the test transmitter: create a push stream to a
 * receiver served over HTTP, read and update it, read its status, and verify it: the
 * verification event must arrive at the receiver with the state sent.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createSignalStreams, StreamManagementError } from '../../src/signals/stream.js'
import { EVENTS_ACTED_ON } from '../../src/signals/vocabulary.js'
import {
  PUSH_AUTHORIZATION,
  type Receiving,
  receiving,
  type SignalsWorld,
  startWorld,
} from './fixtures.js'

const MANAGEMENT = 'Bearer management-token'
let world: SignalsWorld
let made: Receiving
let server: Server
let endpoint: string

beforeAll(async () => {
  world = await startWorld({ managementAuthorization: MANAGEMENT })
  made = receiving(world)
  server = createServer((req, res) => {
    made.receiver.push({ headers: req.headers, method: req.method, stream: req }).then((answer) => {
      res.writeHead(answer.status, answer.headers).end(answer.body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ssf/events`
})
afterAll(async () => {
  await made.close()
  server.close()
  await world.close()
})

describe('stream management (SSF 1.0 §8)', () => {
  it('creates a push stream asking for every event the receiver acts on, reads, updates and verifies it', async () => {
    const streams = createSignalStreams({ receiver: made.receiver, authorization: MANAGEMENT })
    const created = await streams.create({
      delivery: {
        method: 'urn:ietf:rfc:8935',
        endpoint_url: endpoint,
        authorization_header: PUSH_AUTHORIZATION,
      },
    })
    expect(created.stream_id).toBeTypeOf('string')
    expect(created.events_requested).toEqual(EVENTS_ACTED_ON)
    expect(created.delivery).toEqual({ method: 'urn:ietf:rfc:8935', endpoint_url: endpoint })
    expect((await streams.get(created.stream_id)).stream_id).toBe(created.stream_id)
    const updated = await streams.update(created.stream_id, {
      events_requested: [EVENTS_ACTED_ON[0] as string],
    })
    expect(updated.events_delivered).toEqual([EVENTS_ACTED_ON[0]])
    expect(await streams.status(created.stream_id)).toMatchObject({ status: 'enabled' })
    expect(made.receiver.stream().verifiedAt).toBeUndefined()
    await streams.verify(created.stream_id)
    expect(made.receiver.stream().verifiedAt).toBeTypeOf('number')
    expect(made.receiver.stream().verificationState).toBeTypeOf('string')
  })

  it('a status the transmitter changes reaches the receiver (stream-updated)', async () => {
    const streams = createSignalStreams({ receiver: made.receiver, authorization: MANAGEMENT })
    const { stream_id } = await streams.get()
    const response = await fetch(`${world.transmitter.issuer}/status`, {
      method: 'POST',
      headers: { authorization: MANAGEMENT, 'content-type': 'application/json' },
      body: JSON.stringify({ stream_id, status: 'paused' }),
    })
    expect(response.status).toBe(200)
    expect(made.receiver.stream().status).toBe('paused')
  })

  it('verify() rejects when the verification event does not arrive', async () => {
    const unwired = receiving(world)
    try {
      const streams = createSignalStreams({ receiver: unwired.receiver, authorization: MANAGEMENT })
      const { stream_id } = await streams.get()
      // The transmitter pushes to the other receiver: this one never hears it.
      await expect(streams.verify(stream_id, { waitMs: 200 })).rejects.toThrow('did not arrive')
    } finally {
      await unwired.close()
    }
  })

  it('a management call refused by the transmitter rejects with its status', async () => {
    const streams = createSignalStreams({ receiver: made.receiver, authorization: 'Bearer wrong' })
    const failure = await streams.get().catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(StreamManagementError)
    expect((failure as StreamManagementError).status).toBe(401)
  })
})
