/**
 * Host of a Next.js App Router route handler (`app/api/invoices/[id]/route.ts`): serves the
 * sample's exported method handlers on Node's HTTP server at `PORT`, at the route its first line
 * names, as Next.js does: `GET(request, { params })` with `params` a promise of the dynamic
 * segments. Any other path: 404; a method the module does not export: 405.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { pathToFileURL } from 'node:url'

import { fetchListener } from '../../helpers/fetch-server.js'

type RouteHandler = (
  request: Request,
  context: { params: Promise<Record<string, string>> },
) => Response | Promise<Response>

const file = process.env['SAMPLE_MODULE'] ?? ''
const route = /\bapp(\/\S*)\/route\.ts\b/.exec(readFileSync(file, 'utf8'))?.[1]
if (route === undefined) throw new TypeError('the sample names no app/…/route.ts on its first line')
const names: string[] = []
const pattern = new RegExp(
  `^${route.replace(/\[([^\]/]+)\]/g, (_, name: string) => {
    names.push(name)
    return '([^/]+)'
  })}$`,
)
const module = (await import(pathToFileURL(file).href)) as Record<string, RouteHandler | undefined>

createServer(
  fetchListener(async (request) => {
    const match = pattern.exec(new URL(request.url).pathname)
    if (match === null) return new Response('Not Found', { status: 404 })
    const handler = module[request.method]
    if (handler === undefined) return new Response('Method Not Allowed', { status: 405 })
    const params = Object.fromEntries(names.map((name, index) => [name, match[index + 1] ?? '']))
    return handler(request, { params: Promise.resolve(params) })
  }),
).listen(Number(process.env['PORT']), '127.0.0.1')
