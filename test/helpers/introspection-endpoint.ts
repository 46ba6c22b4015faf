/**
 * An introspection endpoint whose answers the test writes (RFC 7662, on loopback), for routing and
 * attack tests of the gate's introspection: any POST path answers with `answer(form, path)`, and
 * every call is recorded with its path; `/jwks` serves `keys`.
 */
import { createServer, type IncomingMessage } from 'node:http'
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
  /** The answer to a call; `'hang'`: never answers. */
  answer: (form: URLSearchParams, path: string) => EndpointAnswer | 'hang'
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
    close: async () => {},
  }
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(req.url === '/jwks' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ keys }))
      return
    }
    const path = req.url ?? ''
    stub.calls.push(path)
    void readForm(req).then((form) => {
      const answer = stub.answer(form, path)
      if (answer === 'hang') return
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
