/**
 * An introspection endpoint whose answers the test writes (RFC 7662, on loopback), for routing and
 * attack tests of the gate's introspection: any POST path answers with `answer(form, path)`, and
 * every call is recorded with its path; `/jwks` serves `keys`, any other GET `documents[path]`.
 * An answer may be `'endless'`: a 200 JSON body that never ends, written as fast as the reader
 * takes it, whose bytes are counted in `streamed`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface EndpointAnswer {
  readonly status?: number
  readonly contentType?: string
  readonly body: string
  readonly headers?: Readonly<Record<string, string>>
}

export interface IntrospectionEndpointStub {
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  /** The path of every introspection call, in order. */
  readonly calls: string[]
  /** The answer to a call; `'hang'`: never answers; `'endless'`: a body that never ends. */
  answer: (form: URLSearchParams, path: string) => EndpointAnswer | 'hang' | 'endless'
  /** GET answers by path (a discovery document, keys), beside `/jwks`. */
  documents: Record<string, EndpointAnswer | 'endless'>
  /** Bytes of endless bodies written so far, and whether each such response has ended. */
  readonly streamed: { bytes: number; closed: number }
  close(): Promise<void>
}

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve) => {
    let body = ''
    req.on('data', (chunk) => {
      body += String(chunk)
    })
    req.on('end', () => resolve(new URLSearchParams(body)))
  })
}

export async function startIntrospectionEndpoint(
  keys: readonly Record<string, unknown>[] = [],
): Promise<IntrospectionEndpointStub> {
  const stub: IntrospectionEndpointStub = {
    url: '',
    calls: [],
    answer: () => ({ body: '{"active":false}' }),
    documents: {},
    streamed: { bytes: 0, closed: 0 },
    close: async () => {},
  }
  const endless = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"active":true,"padding":"')
    const chunk = 'x'.repeat(16_384)
    const more = () => {
      while (!res.destroyed) {
        stub.streamed.bytes += chunk.length
        if (!res.write(chunk)) return
      }
    }
    res.on('drain', more)
    res.on('close', () => {
      stub.streamed.closed++
    })
    more()
  }
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      const document = stub.documents[req.url ?? '']
      if (document === 'endless') return endless(res)
      if (document !== undefined) {
        res.writeHead(document.status ?? 200, {
          'content-type': document.contentType ?? 'application/json',
          ...document.headers,
        })
        res.end(document.body)
        return
      }
      res.writeHead(req.url === '/jwks' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ keys }))
      return
    }
    const path = req.url ?? ''
    stub.calls.push(path)
    void readForm(req).then((form) => {
      const answer = stub.answer(form, path)
      if (answer === 'hang') return
      if (answer === 'endless') return endless(res)
      const { status = 200, contentType = 'application/json', body, headers = {} } = answer
      res.writeHead(status, { 'content-type': contentType, ...headers })
      res.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return Object.assign(stub, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  })
}
