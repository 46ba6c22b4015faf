import { once } from 'node:events'
import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { onceConnected, storeCall, withinDeadline } from '../src/deadline.js'
import { failFast, type RedisServer, startRedisServer } from './helpers/redis.js'

/** A store in another process, answering through a socket: `PING` → `+PONG`. */
let redis: RedisServer
beforeAll(async () => {
  redis = await startRedisServer()
})
afterAll(() => redis.stop())

async function storeClient(): Promise<{ ask(text: string): Promise<string>; socket: Socket }> {
  const socket = connect(redis.port, '127.0.0.1')
  await once(socket, 'connect')
  return {
    socket,
    ask: (text) =>
      new Promise((resolve) => {
        socket.once('data', (data) => resolve(data.toString()))
        socket.write(text)
      }),
  }
}

const busyFor = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

describe('withinDeadline', () => {
  it('gives the answer that arrived while the event loop was busy past the deadline', async () => {
    const client = await storeClient()
    const answer = withinDeadline(client.ask('PING\r\n'), 20, () => new Error('late'))
    busyFor(120)
    await expect(answer).resolves.toBe('+PONG\r\n')
    client.socket.destroy()
  })

  it('rejects with the late error when no answer comes within the deadline', async () => {
    const started = performance.now()
    const late = new Error('store did not answer within 30 ms')
    await expect(withinDeadline(new Promise(() => {}), 30, () => late)).rejects.toBe(late)
    expect(performance.now() - started).toBeGreaterThanOrEqual(29)
  })

  it('keeps the rejection of a call that failed before its deadline', async () => {
    const failure = new Error('connection reset')
    await expect(
      withinDeadline(Promise.reject(failure), 1000, () => new Error('late')),
    ).rejects.toBe(failure)
  })

  it('swallows a rejection that comes after the deadline (no unhandled rejection)', async () => {
    let fail: (error: Error) => void = () => {}
    const operation = new Promise<never>((_, reject) => {
      fail = reject
    })
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      await expect(withinDeadline(operation, 10, () => new Error('late'))).rejects.toThrow('late')
      fail(new Error('too late'))
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('does not keep the process alive while it waits', async () => {
    // Only handles that keep the loop alive are listed: an unref'd timer is not.
    const timers = () =>
      process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length
    const before = timers()
    const answer = withinDeadline(new Promise(() => {}), 60_000, () => new Error('late'))
    answer.catch(() => {})
    expect(timers()).toBe(before)
  })
})

describe('onceConnected', () => {
  it('holds the calls made while a client connects until it is ready, with one listener for all of them', async () => {
    const client = redis.starting()
    try {
      const listening = client.listenerCount('ready')
      const calls = Array.from({ length: 50 }, (_, i) =>
        onceConnected(client, () => client.set(`test:connecting:${i}`, '1', 'PX', 1000)),
      )
      expect(client.listenerCount('ready')).toBe(listening + 1)
      expect(await Promise.all(calls)).toEqual(Array(50).fill('OK'))
      expect(client.listenerCount('ready')).toBe(listening)
      expect(client.listenerCount('close')).toBe(0)
    } finally {
      client.disconnect()
    }
  })

  it('calls at once a client that is ready, or any object that is no ioredis client', async () => {
    const client = await redis.client()
    let called = 0
    await onceConnected(client, async () => called++)
    await onceConnected({ set: async () => 'OK' }, async () => called++)
    expect(called).toBe(2)
    expect(client.listenerCount('ready')).toBe(0)
  })

  it('turns a call that throws instead of rejecting into a rejection', async () => {
    const thrown = new Error('closed')
    const answer = onceConnected({}, () => {
      throw thrown
    })
    await expect(answer).rejects.toBe(thrown)
  })
})

describe('storeCall', () => {
  it('bounds the wait for a connecting client by the deadline, then calls nothing', async () => {
    // A server that accepts and never answers: the client stays connecting, never ready.
    const silent = createServer(() => {})
    silent.listen(0, '127.0.0.1')
    await once(silent, 'listening')
    const { port } = silent.address() as AddressInfo
    const client = new Redis({ host: '127.0.0.1', port, ...failFast })
    client.on('error', () => {})
    let called = 0
    try {
      const answer = storeCall(
        client,
        async () => called++,
        50,
        () => new Error('late'),
      )
      await expect(answer).rejects.toThrow('late')
      expect(called).toBe(0)
    } finally {
      client.disconnect()
      silent.close()
    }
  })
})
