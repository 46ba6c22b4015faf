/**
 * Host of docs/stores.md's `httpSharedStore(url, secret)`: runs the client against the guide's
 * counter service (written beside it as counter-service.ts, started here) and prints, one JSON
 * line each, what two increments and two claims of one key resolve to, and what a client with
 * another secret rejects with.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { SharedStore } from 'tollgate'

const file = process.env['SAMPLE_MODULE'] ?? ''
const { httpSharedStore } = (await import(pathToFileURL(file).href)) as {
  httpSharedStore(url: string, secret: string): SharedStore
}
const { createCounterService } = (await import(
  pathToFileURL(join(dirname(file), 'counter-service.ts')).href
)) as { createCounterService(secret: string): Server }

const service = createCounterService('the-right-secret')
await new Promise<void>((done) => service.listen(0, '127.0.0.1', done))
const url = `http://127.0.0.1:${(service.address() as AddressInfo).port}`
const store = httpSharedStore(url, 'the-right-secret')
const print = (value: unknown) => console.log(JSON.stringify(value))
print(await store.increment('k', 2, 60_000))
print(await store.increment('k', 3, 60_000))
print(await store.claimOnce('proof', 60_000))
print(await store.claimOnce('proof', 60_000))
await httpSharedStore(url, 'a-wrong-secret')
  .increment('k', 1, 60_000)
  .then(print, (error: Error) => print({ rejected: error.message }))
process.exit(0)
