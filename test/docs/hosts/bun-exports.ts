/**
 * Host, on Bun, of a sample that serves an app with `Bun.serve` and also exports a Next.js-style
 * route handler (`export const GET`): imports it (its `Bun.serve` starts on `PORT`) and serves
 * the exported `GET` on `EXPORTS_PORT`, called as a route handler is.
 */
import { pathToFileURL } from 'node:url'

const sample = (await import(pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href)) as {
  GET?: (request: Request) => Promise<Response>
}
const handler = sample.GET
if (handler === undefined) throw new TypeError('the sample exports no GET handler')
Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env['EXPORTS_PORT']),
  fetch: (request) => handler(request),
})
