/**
 * The counter service of docs/stores.md ("A store of your own"), started on a free loopback port
 * with a fresh secret, and the docs' HTTP `SharedStore` client of it: what the shared-store tests
 * run is exactly what the guide prints (test/limits/samples/). Also a hung service (accepts
 * connections, never answers) that counts its open connections.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

import type { SharedStore } from '../../src/shared-store.js'
import { createCounterService } from '../limits/samples/counter-service.js'
import { httpSharedStore } from '../limits/samples/http-shared-store.js'

/** A running counter service. */
export interface CounterService {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly secret: string
  /** The service's server, for tests that watch its sockets. */
  readonly server: Server
  /** A fresh client of the docs' recipe (its default `timeoutMs` unless given). */
  store(timeoutMs?: number): SharedStore
  close(): Promise<void>
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function closing(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((done) => {
      server.closeAllConnections()
      server.close(() => done())
    })
}

export async function startCounterService(): Promise<CounterService> {
  const secret = randomBytes(24).toString('base64url')
  const server = createCounterService(secret)
  const url = await listen(server)
  return {
    url,
    secret,
    server,
    store: (timeoutMs?: number) => httpSharedStore(url, secret, timeoutMs),
    close: closing(server),
  }
}

/**
 * A service that takes every request and never answers, as a hung counter service does. It
 * counts the connections that carried a request (a client's idle pooled connection is no cost).
 */
export interface HungService {
  readonly url: string
  /** Connections that carried a request and are open now. */
  open(): number
  /** Connections that carried a request, since the start. */
  accepted(): number
  /** Resolves once every connection counted so far is closed. */
  allClosed(): Promise<void>
  close(): Promise<void>
}

export async function startHungService(): Promise<HungService> {
  const sockets = new Set<Socket>()
  const seen = new WeakSet<Socket>()
  const closed: Promise<void>[] = []
  // Never answers.
  const server = createServer(({ socket }) => {
    if (seen.has(socket)) return
    seen.add(socket)
    sockets.add(socket)
    closed.push(
      new Promise((done) =>
        socket.once('close', () => {
          sockets.delete(socket)
          done()
        }),
      ),
    )
  })
  const url = await listen(server)
  return {
    url,
    open: () => sockets.size,
    accepted: () => closed.length,
    allClosed: async () => {
      await Promise.all(closed)
    },
    close: closing(server),
  }
}
