/**
 * A Fetch host on Node's HTTP server, as `@hono/node-server`, Bun and Deno are: each request
 * becomes a WHATWG `Request` (repeated fields joined by `Headers`, as every Fetch host does) and
 * the handler's `Response` is written back. Lets the harness run Fetch handlers over real sockets.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'

export type FetchHandler = (request: Request) => Response | Promise<Response>

async function requestOf(req: IncomingMessage): Promise<Request> {
  const headers = new Headers()
  const raw = req.rawHeaders
  for (let index = 0; index < raw.length; index += 2) {
    headers.append(raw[index] as string, raw[index + 1] as string)
  }
  let base = 'http://localhost'
  try {
    base = new URL(`http://${req.headers.host ?? 'localhost'}`).origin
  } catch {
    // A Host the URL parser refuses: the request still reaches the handler, as on other hosts.
  }
  const method = req.method ?? 'GET'
  let body: Buffer | undefined
  if (method !== 'GET' && method !== 'HEAD') {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    body = Buffer.concat(chunks)
  }
  return new Request(new URL(req.url ?? '/', base), { method, headers, body: body ?? null })
}

async function write(res: ServerResponse, response: Response, head: boolean): Promise<void> {
  res.statusCode = response.status
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value)
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) res.setHeader('set-cookie', cookies)
  const body = Buffer.from(await response.arrayBuffer())
  if (!res.hasHeader('content-length') && response.body !== null) {
    res.setHeader('content-length', body.length)
  }
  res.end(head ? undefined : body)
}

/** A Node request listener that serves `handler`. A throw becomes a bare 500, as on Bun or Deno. */
export function fetchListener(handler: FetchHandler): RequestListener {
  return (req, res) => {
    requestOf(req)
      .then(handler)
      .then(
        (response) => write(res, response, req.method === 'HEAD'),
        () => {
          res.statusCode = 500
          res.end()
        },
      )
      .catch(() => res.destroy())
  }
}
