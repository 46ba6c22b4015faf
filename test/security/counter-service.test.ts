/**
 * The store recipe of docs/stores.md ("A store of your own") under attack: the counter service
 * decides on the headers before it reads a body (an unauthenticated or oversized POST costs it no
 * memory), refuses what no gateway sends (a window beyond tollgate's longest, a key of kilobytes),
 * and its client refuses plain http off loopback, gives up on a hung service (its connections
 * close instead of piling up) and refuses answers outside the contract.
 */
import { once } from 'node:events'
import type { AddressInfo, Socket } from 'node:net'
import { connect } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS, type ProtectedServer } from '../helpers/apps.js'
import {
  type CounterService,
  startCounterService,
  startHungService,
} from '../helpers/counter-service.js'
import { httpSharedStore } from '../limits/samples/http-shared-store.js'

let service: CounterService

beforeAll(async () => {
  service = await startCounterService()
})
afterAll(async () => {
  await service?.close()
})

/** What one raw request got, and what it cost the service. */
interface Exchange {
  readonly status: number
  /** Body bytes the client had written when the answer's first byte arrived. */
  readonly bodyBytesSentBeforeAnswer: number
  /** Bytes the service's socket read from the connection, headers included. */
  readonly bytesReadByService: number
}

const CHUNK = Buffer.alloc(64 * 1024, 'a')

/**
 * Sends the request head, then up to `bodyBytes` of body in 64 KiB chunks (as chunked transfer
 * coding when `chunked`), writing as fast as the connection takes them and stopping as soon as
 * the service answers or closes.
 */
async function exchange(
  head: readonly string[],
  bodyBytes: number,
  { chunked = false }: { chunked?: boolean } = {},
): Promise<Exchange> {
  const served = new Promise<Socket>((resolve) => service.server.once('connection', resolve))
  const { port } = service.server.address() as AddressInfo
  const socket = connect(port, '127.0.0.1')
  const serviceSocket = await served
  let raw = ''
  let sent = 0
  let sentBeforeAnswer: number | undefined
  let over = false
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    sentBeforeAnswer ??= sent
    raw += chunk
  })
  socket.on('error', () => {
    over = true // the service closed while the client was still writing
  })
  // Resolves on the first of these events (an 'error' included: the service may close first).
  const first = (...names: string[]) =>
    new Promise<void>((resolve) => {
      const done = () => {
        for (const name of names) socket.off(name, done)
        resolve()
      }
      for (const name of names) socket.on(name, done)
    })
  const ended = once(socket, 'close')
  const serviceClosed = once(serviceSocket, 'close')
  socket.write(`${[...head, 'Host: 127.0.0.1'].join('\r\n')}\r\n\r\n`)
  const framed = chunked
    ? Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')])
    : CHUNK
  while (sent < bodyBytes && sentBeforeAnswer === undefined && !over && !socket.destroyed) {
    sent += CHUNK.length
    if (!socket.write(framed)) {
      await first('drain', 'close', 'data', 'error')
    }
  }
  // A service that answered keeps reading nothing more; one that did not answer yet gets the end
  // of the request (or waits for it forever, which the test's own timeout reports).
  if (sentBeforeAnswer === undefined && !socket.destroyed) {
    // The end of the body, so that a service that reads it all before deciding answers too.
    if (chunked && !over) socket.write('0\r\n\r\n')
    await first('close', 'data', 'error')
  }
  socket.destroy()
  await ended
  await serviceClosed
  return {
    status: Number(raw.slice(9, 12)),
    bodyBytesSentBeforeAnswer: sentBeforeAnswer ?? sent,
    bytesReadByService: serviceSocket.bytesRead,
  }
}

const MIB = 1024 * 1024

describe('the counter service of docs/stores.md, before it reads a body', () => {
  it('answers an unauthenticated POST of 512 MiB with 401 before any byte of its body is sent', async () => {
    const answer = await exchange(
      [
        'POST /increment HTTP/1.1',
        `Content-Length: ${512 * MIB}`,
        'Content-Type: application/json',
      ],
      0,
    )
    expect(answer.status).toBe(401)
    expect(answer.bodyBytesSentBeforeAnswer).toBe(0)
  })

  it('reads almost nothing of an unauthenticated body streamed at it, and closes the connection', async () => {
    const answer = await exchange(
      ['POST /increment HTTP/1.1', 'Transfer-Encoding: chunked', 'Authorization: Bearer wrong'],
      64 * MIB,
      { chunked: true },
    )
    expect(answer.status).toBe(401)
    // The old recipe read all 64 MiB (and kept it) before it looked at the secret.
    expect(answer.bytesReadByService).toBeLessThan(MIB)
  })

  it('answers 413 to a body declared larger than 4 KiB, before it is sent', async () => {
    const answer = await exchange(
      [
        'POST /increment HTTP/1.1',
        `Authorization: Bearer ${service.secret}`,
        `Content-Length: ${512 * MIB}`,
      ],
      0,
    )
    expect(answer).toMatchObject({ status: 413, bodyBytesSentBeforeAnswer: 0 })
  })

  it('stops reading a chunked body at 4 KiB with 413, even from a caller with the secret', async () => {
    const answer = await exchange(
      [
        'POST /claim-once HTTP/1.1',
        `Authorization: Bearer ${service.secret}`,
        'Transfer-Encoding: chunked',
      ],
      64 * MIB,
      { chunked: true },
    )
    expect(answer.status).toBe(413)
    expect(answer.bytesReadByService).toBeLessThan(MIB)
  })

  it('answers 400 to an unknown operation without reading its body', async () => {
    const answer = await exchange(
      [
        'POST /decrement HTTP/1.1',
        `Authorization: Bearer ${service.secret}`,
        `Content-Length: ${MIB}`,
      ],
      0,
    )
    expect(answer).toMatchObject({ status: 400, bodyBytesSentBeforeAnswer: 0 })
  })

  it('still serves the gateway after each of those', async () => {
    expect(await service.store().increment('after:1', 1, 1000)).toMatchObject({ count: 1 })
  })
})

async function post(path: string, payload: unknown) {
  const response = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  })
  return { status: response.status, body: response.status === 200 ? await response.json() : null }
}

describe('the counter service of docs/stores.md, on what no gateway sends', () => {
  it('refuses a ttlMs beyond tollgate’s longest window (366 days): no counter locks a tenant for ages', async () => {
    const longest = 366 * 86_400_000
    expect((await post('/increment', { key: 'ttl:1', amount: 1, ttlMs: longest })).status).toBe(200)
    for (const ttlMs of [longest + 1, Number.MAX_SAFE_INTEGER]) {
      expect((await post('/increment', { key: 'ttl:2', amount: 1, ttlMs })).status).toBe(400)
      expect((await post('/claim-once', { key: 'ttl:3', ttlMs })).status).toBe(400)
    }
  })

  it('saturates a count at 2^53 − 1 instead of losing units', async () => {
    const max = Number.MAX_SAFE_INTEGER
    await post('/increment', { key: 'sum:1', amount: max, ttlMs: 60_000 })
    const second = await post('/increment', { key: 'sum:1', amount: max, ttlMs: 60_000 })
    expect(second).toMatchObject({ status: 200, body: { count: max } })
  })

  it('refuses a key longer than 1024 characters', async () => {
    expect((await post('/claim-once', { key: 'k'.repeat(1025), ttlMs: 1000 })).status).toBe(400)
    expect((await post('/claim-once', { key: 'k'.repeat(1024), ttlMs: 1000 })).status).toBe(200)
  })
})

describe('the HTTP SharedStore client of docs/stores.md', () => {
  it.each([
    'http://10.0.0.5:8080',
    'http://counters.internal',
    'http://127.0.0.1.example.com',
    'ftp://127.0.0.1',
  ])('refuses %s at creation: the secret would cross the network in clear', (url) => {
    expect(() => httpSharedStore(url, 'secret')).toThrow(
      `httpSharedStore: ${url} must be https (http only on loopback)`,
    )
  })

  it.each([
    'https://counters.example.com',
    'http://127.0.0.1:9000',
    'http://localhost:9000',
    'http://[::1]:9000',
  ])('accepts %s', (url) => {
    expect(() => httpSharedStore(url, 'secret')).not.toThrow()
  })

  it('gives up on a hung service: every call rejects and its connection closes, wave after wave', async () => {
    const hung = await startHungService()
    try {
      const store = httpSharedStore(hung.url, 'secret', 100)
      for (let wave = 0; wave < 3; wave++) {
        const calls = Array.from({ length: 20 }, (_, index) =>
          index % 2 === 0
            ? store.increment(`k:${wave}:${index}`, 1, 1000)
            : store.claimOnce(`c:${wave}:${index}`, 1000),
        )
        const settled = await Promise.allSettled(calls)
        expect(settled.every((result) => result.status === 'rejected')).toBe(true)
        await hung.allClosed()
        // At most the calls of this wave (one still arriving as the others closed): the waves
        // before it left nothing open. The old client's calls never settled.
        expect(hung.open()).toBeLessThanOrEqual(20)
      }
      expect(hung.accepted()).toBeLessThanOrEqual(60)
    } finally {
      await hung.close()
    }
  })

  it('through a gateway with the service hung, closes each request’s connection once its call gave up: they do not pile up', async () => {
    const issuer: TestIssuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
    const hung = await startHungService()
    const createFetchApp = APPS.find(([name]) => name === 'fetch')?.[1] as (
      options: GateOptions,
    ) => ProtectedServer
    const app = createFetchApp({
      issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
      audience: 'gateway',
      tenant: { claim: 'tenant' },
      rateLimit: {
        windows: [{ points: 1000, durationSeconds: 60 }],
        store: { shared: httpSharedStore(hung.url, 'secret', 200) },
        storeTimeoutMs: 50,
        // Keep calling the store: every request is one more call to the hung service.
        storeRetryIntervalMs: 0,
      },
    })
    await new Promise<void>((done) => app.listen(0, '127.0.0.1', done))
    try {
      const origin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`
      const token = await issuer.mint({ tenant: 'acme-corp' })
      const statuses: number[] = []
      for (let round = 0; round < 4; round++) {
        const answers = await Promise.all(
          Array.from({ length: 25 }, () =>
            fetch(`${origin}/api/v1/billing/subscriptions`, {
              headers: { authorization: `Bearer ${token}` },
            }),
          ),
        )
        statuses.push(...answers.map((answer) => answer.status))
        // Every call of this round gives up and closes its connection.
        await hung.allClosed()
        expect(hung.open()).toBeLessThanOrEqual(25)
      }
      // The memory fallback decided them all; the service got one call per request, no more.
      expect(new Set(statuses)).toEqual(new Set([200]))
      expect(hung.accepted()).toBeGreaterThan(0)
      expect(hung.accepted()).toBeLessThanOrEqual(100)
    } finally {
      app.close()
      await app.gate.close()
      await hung.close()
      await issuer.close()
    }
  })

  describe('with a service answering outside the contract', () => {
    let answer: unknown
    let status = 200
    let followed = 0
    let origin: string
    let fake: import('node:http').Server
    beforeAll(async () => {
      const { createServer } = await import('node:http')
      fake = createServer((request, response) => {
        request.resume()
        if (request.url === '/redirected') followed += 1
        else if (status === 307)
          return void response.writeHead(307, { location: '/redirected' }).end()
        response
          .writeHead(status, { 'content-type': 'application/json' })
          .end(JSON.stringify(answer))
      })
      await new Promise<void>((done) => fake.listen(0, '127.0.0.1', done))
      origin = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`
    })
    afterAll(() => {
      fake.close()
    })

    it.each([
      ['a count below the amount', { count: 1, msBeforeReset: 1000 }],
      ['a fractional count', { count: 2.5, msBeforeReset: 1000 }],
      ['a count past 2^53', { count: 2 ** 60, msBeforeReset: 1000 }],
      ['a count as text', { count: '3', msBeforeReset: 1000 }],
      ['a negative msBeforeReset', { count: 3, msBeforeReset: -1 }],
      ['no msBeforeReset', { count: 3 }],
      ['null', null],
    ])('rejects an increment answered with %s', async (_name, body) => {
      answer = body
      status = 200
      await expect(httpSharedStore(origin, 's').increment('k', 2, 60_000)).rejects.toThrow(
        'counter service answered a malformed count',
      )
    })

    it('caps msBeforeReset at the window: a counter never outlives ttlMs', async () => {
      answer = { count: 3, msBeforeReset: 3_600_000 }
      status = 200
      expect(await httpSharedStore(origin, 's').increment('k', 2, 60_000)).toEqual({
        count: 3,
        msBeforeReset: 60_000,
      })
    })

    it.each([
      ['a string', 'yes'],
      ['a number', 1],
      ['nothing', undefined],
    ])('rejects a claim answered with %s', async (_name, claimed) => {
      answer = { claimed }
      status = 200
      await expect(httpSharedStore(origin, 's').claimOnce('k', 60_000)).rejects.toThrow(
        'counter service answered a malformed claim',
      )
    })

    it('does not follow a redirect (the secret would go along)', async () => {
      status = 307
      answer = { claimed: true }
      await expect(httpSharedStore(origin, 's').claimOnce('k', 1000)).rejects.toThrow()
      expect(followed).toBe(0)
    })
  })
})
