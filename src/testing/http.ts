/**
 * The loopback HTTP server under the test issuer: one port for its whole life, stop and start
 * again on that port, and shutdown that never waits for a client.
 *
 * @module
 */
import { createServer, type RequestListener, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** A complete response, sent at once. */
export interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A JSON reply; `Cache-Control: no-cache` as Keycloak sends on its documents. */
export function jsonReply(
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-cache', ...headers },
    body: JSON.stringify(value),
  }
}

export function sendReply(res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(reply.status, {
    ...reply.headers,
    'content-length': String(Buffer.byteLength(reply.body)),
  })
  res.end(reply.body)
}

/** Whether `value` is a status code Node can send as a final response. */
export function isFinalStatus(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 200 && (value as number) <= 599
}

/** A server on 127.0.0.1 that keeps its port across {@link LoopbackServer.stop} and start. */
export interface LoopbackServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string
  start(): Promise<void>
  stop(): Promise<void>
  close(): Promise<void>
}

/** Listens on 127.0.0.1:`port` (0: a free port) and resolves once connections are accepted. */
export async function listenOnLoopback(
  handler: RequestListener,
  port: number,
): Promise<LoopbackServer> {
  const server = createServer(handler)
  // Every socket, so stop() drops keep-alive and deliberately hanging connections at once.
  const sockets = new Set<Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })

  let boundPort = port
  let closed = false

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      if (server.listening) return resolve()
      const onError = (error: Error) => {
        server.off('listening', onListening)
        reject(error)
      }
      const onListening = () => {
        server.off('error', onError)
        boundPort = (server.address() as AddressInfo).port
        resolve()
      }
      server.once('error', onError)
      server.once('listening', onListening)
      server.listen({ port: boundPort, host: '127.0.0.1' })
    })

  const unlisten = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve()
      server.close(() => resolve())
      for (const socket of sockets) socket.destroy()
    })

  // start/stop/close run one after another, so racing calls cannot interleave listen and close.
  let queue: Promise<void> = Promise.resolve()
  const serially = (step: () => Promise<void>): Promise<void> => {
    const run = queue.then(step)
    queue = run.catch(() => undefined)
    return run
  }

  await listen()
  return {
    url: `http://127.0.0.1:${boundPort}`,
    start: () =>
      serially(() => (closed ? Promise.reject(new Error('the test issuer is closed')) : listen())),
    stop: () => serially(unlisten),
    close: () =>
      serially(() => {
        closed = true
        return unlisten()
      }),
  }
}
