/**
 * Host of a sample that exports a Fetch application: its default export's `fetch` (a Hono app, a
 * Workers-style `{ fetch }`), or the handler exported under the name in `SAMPLE_EXPORT`. Serves
 * it on Node's HTTP server at `PORT`, as `@hono/node-server`'s `serve(app)` does and as Bun and
 * Deno serve a default export.
 */
import { createServer } from 'node:http'
import { pathToFileURL } from 'node:url'

import { type FetchHandler, fetchListener } from '../../helpers/fetch-server.js'

const sample = (await import(pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href)) as Record<
  string,
  unknown
>
const name = process.env['SAMPLE_EXPORT']
const exported =
  name === undefined ? (sample['default'] as { fetch?: unknown })?.fetch : sample[name]
if (typeof exported !== 'function') {
  throw new TypeError(`the sample exports no ${name ?? 'default app with fetch()'}`)
}
const app = name === undefined ? (sample['default'] as object) : undefined
const handler: FetchHandler = (request) =>
  (exported as FetchHandler).call(app, request) as Promise<Response>
createServer(fetchListener(handler)).listen(Number(process.env['PORT']), '127.0.0.1')
