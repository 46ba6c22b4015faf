/**
 * The counter service of docs/stores.md ("A store of your own"), started on a free loopback port
 * with a fresh secret, and the docs' HTTP `SharedStore` client of it: what the shared-store tests
 * run is exactly what the guide prints (test/limits/samples/).
 */
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'

import type { SharedStore } from '../../src/shared-store.js'
import { createCounterService } from '../limits/samples/counter-service.js'
import { httpSharedStore } from '../limits/samples/http-shared-store.js'

/** A running counter service. */
export interface CounterService {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly secret: string
  /** A fresh client of the docs' recipe. */
  store(): SharedStore
  close(): Promise<void>
}

export async function startCounterService(): Promise<CounterService> {
  const secret = randomBytes(24).toString('base64url')
  const server = createCounterService(secret)
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    secret,
    store: () => httpSharedStore(url, secret),
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
}
