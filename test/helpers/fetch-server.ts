/**
 * A Fetch host on Node's HTTP server, as `@hono/node-server`, Bun and Deno are: each request
 * becomes a WHATWG `Request` (repeated fields joined by `Headers`, as every Fetch host does) and
 * the handler's `Response` is written back. Lets the harness run Fetch handlers over real sockets.
 *
 * The body is streamed, as those hosts stream it: a `ReadableStream` of several chunks, each a
 * view at an offset into a larger buffer (Node's socket reads, @hono/node-server's
 * `Readable.toWeb`, Bun's and Deno's pools hand over such views). A reader that takes a chunk's
 * whole `buffer` instead of its `byteOffset`/`byteLength` reads bytes that are not the body.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'

export type FetchHandler = (request: Request) => Response | Promise<Response>

/** Bytes per chunk handed to the handler: small, so that every form body arrives in pieces. */
const PIECE = 64
/** Bytes of other data around each chunk in its backing buffer. */
const MARGIN = 16

/** A chunk as a view into a larger buffer, at an offset, with other bytes on either side. */
function viewOf(bytes: Uint8Array): Uint8Array {
  const backing = new Uint8Array(bytes.length + 2 * MARGIN).fill(0x3d) // '='
  backing.set(bytes, MARGIN)
  return backing.subarray(MARGIN, MARGIN + bytes.length)
}

function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  const chunks = req[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await chunks.next()
        if (done) return controller.close()
        for (let start = 0; start < value.length; start += PIECE) {
          controller.enqueue(viewOf(value.subarray(start, start + PIECE)))
        }
      } catch (error) {
        controller.error(error)
      }
    },
    async cancel() {
      await chunks.return?.()
    },
  })
}

function requestOf(req: IncomingMessage): Request {
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
  const body = method === 'GET' || method === 'HEAD' ? null : bodyStream(req)
  return new Request(new URL(req.url ?? '/', base), { method, headers, body, duplex: 'half' })
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
    Promise.resolve()
      .then(() => handler(requestOf(req)))
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
