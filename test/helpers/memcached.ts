/**
 * A real `memcached` for the limiter tests, on a free loopback port (TCP only), as `redis.ts`
 * starts its own `redis-server`. A missing binary is an error, never a skipped test
 * (`scripts/test-system.sh` installs it).
 *
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { createConnection } from 'node:net'

import { freePort } from './redis.js'

const HOST = '127.0.0.1'
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) {
    try {
      child.kill('SIGKILL')
    } catch {}
  }
})

/** One memcached process the test controls. */
export interface MemcachedServer {
  /** `127.0.0.1:<port>`, as the `memcached` client takes it. */
  readonly location: string
  stop(): Promise<void>
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.on('error', () => done(false))
    socket.on('connect', () => socket.write('version\r\n'))
    socket.on('data', (chunk) => done(chunk.toString('latin1').startsWith('VERSION')))
  })
}

/** Starts `memcached -l 127.0.0.1 -p <free port> -U 0` and waits until it answers `version`. */
export async function startMemcachedServer(): Promise<MemcachedServer> {
  const probe = spawnSync('memcached', ['-V'], { stdio: 'ignore' })
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      '"memcached" was not found on PATH. The store tests run against a real server and are never ' +
        'skipped: run scripts/test-system.sh (Debian: apt-get install memcached).',
    )
  }
  const port = await freePort()
  const args = ['-l', HOST, '-p', String(port), '-U', '0']
  if (process.getuid?.() === 0) args.push('-u', 'nobody')
  const child = spawn('memcached', args, { stdio: 'ignore' })
  children.add(child)
  child.once('exit', () => children.delete(child))
  const until = Date.now() + 10_000
  while (!(await answers(port))) {
    if (Date.now() > until || child.exitCode !== null) {
      throw new Error(`memcached on port ${port} did not start`)
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return {
    location: `${HOST}:${port}`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    },
  }
}
