/**
 * Host of docs/stores.md's counter service, a module exporting `createCounterService(secret)`:
 * starts it on `PORT` with the secret in `COUNTER_SECRET`, as one process of the service runs.
 */
import type { Server } from 'node:http'
import { pathToFileURL } from 'node:url'

const { createCounterService } = (await import(
  pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href
)) as { createCounterService(secret: string): Server }
createCounterService(process.env['COUNTER_SECRET'] ?? '').listen(
  Number(process.env['PORT']),
  '127.0.0.1',
)
