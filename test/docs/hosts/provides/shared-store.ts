/**
 * What docs/stores.md's last "Over HTTP" sample declares (`declare const store: SharedStore //
 * httpSharedStore(url, secret), above`): the guide's client of the guide's counter service, both
 * as printed there (written beside the sample as http-shared-store.ts and counter-service.ts),
 * the service started here on a free loopback port.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { SharedStore } from 'tollgate'

const dir = dirname(process.env['SAMPLE_MODULE'] ?? '')
const { createCounterService } = (await import(
  pathToFileURL(join(dir, 'counter-service.ts')).href
)) as { createCounterService(secret: string): Server }
const { httpSharedStore } = (await import(
  pathToFileURL(join(dir, 'http-shared-store.ts')).href
)) as {
  httpSharedStore(url: string, secret: string): SharedStore
}

const secret = 'counter-service-secret-for-the-samples'
const service = createCounterService(secret)
await new Promise<void>((done) => service.listen(0, '127.0.0.1', done))
export const store = httpSharedStore(
  `http://127.0.0.1:${(service.address() as AddressInfo).port}`,
  secret,
)
