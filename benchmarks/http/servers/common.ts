/**
 * What every bench server shares: its configuration from `BENCH_SERVER`, listening on 127.0.0.1
 * on a free port, and the IPC side channel (ready, CPU usage on request). A server exits as soon
 * as its parent goes away, so no server outlives a run.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FromServer, ServerConfig, ToServer } from '../protocol.ts'

export function config(): ServerConfig {
  const raw = process.env.BENCH_SERVER
  if (!raw) throw new Error('BENCH_SERVER is not set: servers are started by http/run-http.ts')
  return JSON.parse(raw) as ServerConfig
}

const send = (message: FromServer) => process.send?.(message)

/** Reports a startup failure to the orchestrator and exits. */
export function fatal(error: unknown): never {
  send({
    type: 'fatal',
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
  })
  process.exit(1)
}

/** Listens, answers CPU probes, and exits with the parent. `start` builds the HTTP server. */
export async function serve(start: () => Promise<Server> | Server): Promise<void> {
  process.on('disconnect', () => process.exit(0))
  try {
    const server = await start()
    server.keepAliveTimeout = 60_000
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    process.on('message', (message: ToServer) => {
      if (message.type === 'gc') {
        ;(globalThis as { gc?: () => void }).gc?.()
        return void send({ id: message.id, type: 'gc' })
      }
      if (message.type !== 'cpu') return
      const { user, system } = process.cpuUsage()
      send({ id: message.id, type: 'cpu', user, system, rss: process.memoryUsage.rss() })
    })
    send({ type: 'ready', port: (server.address() as AddressInfo).port })
  } catch (error) {
    fatal(error)
  }
}
