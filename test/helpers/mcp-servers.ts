/**
 * The MCP server of the end-to-end tests, built with each MCP TypeScript SDK (1.x:
 * `@modelcontextprotocol/sdk`; 2.x: `@modelcontextprotocol/server` with its framework packages)
 * on each framework tollgate's `mcpGate` serves that the SDK serves too (Express, Hono, a Fetch
 * handler), behind
 * tollgate with the gate options a test gives. Two tools: `whoami` answers with the scopes the SDK
 * handed the tool (its `authInfo`) and the operation `mcpGate` authorized; `deploy` needs
 * `mcp:deploy` as well as the endpoint's `mcp:use`.
 *
 * Express keeps one SDK server and transport per session, as the SDK's examples do (the
 * transport for Node's request and response: 1.x `StreamableHTTPServerTransport`, 2.x
 * `NodeStreamableHTTPServerTransport`); Hono and a plain Fetch handler (`tollgate/fetch`) run one
 * stateless SDK server per request on the Web-standard transport, the parsed body and the
 * admission handed on. On 2.x, Hono's app is
 * the SDK's own (`createMcpHonoApp`: Host and Origin checks, the JSON body parsed). Express's is
 * not: `@modelcontextprotocol/express` declares Express's `req.auth` as the SDK's `AuthInfo`, which
 * clashes with tollgate's `req.auth` (the `Admission`) for every file the type-check sees; its
 * `createMcpExpressApp` only adds those checks and `express.json()`, which the app has anyway.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createMcpHonoApp } from '@modelcontextprotocol/hono'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import { McpServer as McpServer1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport as NodeTransport1 } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { WebStandardStreamableHTTPServerTransport as WebTransport1 } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  McpServer as McpServer2,
  WebStandardStreamableHTTPServerTransport as WebTransport2,
} from '@modelcontextprotocol/server'
import express from 'express'
import { Hono } from 'hono'

import { mcpGate, tollgate } from '../../adapters/express/index.js'
import { mcpGate as fetchMcpGate, tollgate as fetchTollgate } from '../../adapters/fetch/index.js'
import {
  mcpGate as honoMcpGate,
  tollgate as honoTollgate,
  type McpEnv,
} from '../../adapters/hono/index.js'
import type { GateOptions } from '../../src/gate/options.js'
import type { McpPolicyOptions } from '../../src/mcp/policy.js'
import type { Admission } from '../../src/types.js'
import { fetchListener } from './fetch-server.js'

/** The MCP TypeScript SDK's major versions under test. */
export type SdkVersion = '1.x' | '2.x'
/** The frameworks both tollgate's `mcpGate` and the SDKs serve (Fetch: any Fetch-standard host). */
export type McpFramework = 'Express' | 'Hono' | 'Fetch'

/** Every operation needs `mcp:use`; `deploy` needs `mcp:deploy` too. */
export const MCP_POLICY: McpPolicyOptions = {
  default: { scopes: ['mcp:use'] },
  tools: { deploy: { scopes: ['mcp:use', 'mcp:deploy'] } },
}

/** What `whoami` answers, as JSON text. */
export interface Whoami {
  readonly scopes: readonly string[] | undefined
  /** The operation `mcpGate` authorized for the request that called the tool. */
  readonly op: { readonly method: string | undefined; readonly name: string | undefined }
}

/** A loopback HTTP server whose URL is known before the app it serves is built. */
export interface McpHost {
  readonly server: Server
  /** `http://127.0.0.1:PORT/mcp`: the MCP endpoint, and the resource its tokens are for. */
  readonly url: string
  /** `127.0.0.1:PORT`: the `Host` its clients send (DPoP's `allowedHosts`). */
  readonly host: string
  /** Serves the app from now on. */
  serve(listener: RequestListener): void
  close(): Promise<void>
}

export async function mcpHost(): Promise<McpHost> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    server,
    url: `http://${host}/mcp`,
    host,
    serve: (listener) => {
      server.on('request', listener)
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** The scopes the SDK handed the tool, and the operation the gate authorized. */
type Report = (scopes: readonly string[] | undefined) => string

/** The `authInfo` the SDKs take: the admission's token, client and scopes. */
function authInfoOf(admission: Admission | undefined) {
  return admission === undefined
    ? undefined
    : { token: admission.token, clientId: admission.clientId ?? '', scopes: [...admission.scopes] }
}

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] })

/** An SDK server with the two tools, connected to `transport`. */
const SERVERS = {
  '1.x': async (transport: NodeTransport1 | WebTransport1, report: Report) => {
    const mcp = new McpServer1({ name: 'tollgate-test', version: '1.0.0' })
    mcp.registerTool('whoami', { description: 'who is calling' }, async (extra) =>
      text(report(extra.authInfo?.scopes)),
    )
    mcp.registerTool('deploy', { description: 'deploys' }, async () => text('deployed'))
    await mcp.connect(transport)
  },
  '2.x': async (transport: NodeStreamableHTTPServerTransport | WebTransport2, report: Report) => {
    const mcp = new McpServer2({ name: 'tollgate-test', version: '1.0.0' })
    mcp.registerTool('whoami', { description: 'who is calling' }, async (ctx) =>
      text(report(ctx.http?.authInfo?.scopes)),
    )
    mcp.registerTool('deploy', { description: 'deploys' }, async () => text('deployed'))
    await mcp.connect(transport)
  },
} as const

/** A transport for Node's request and response, with sessions, of either SDK. */
interface NodeTransport {
  handleRequest(req: IncomingMessage, res: express.Response, body: unknown): Promise<void>
}

function expressApp(sdk: SdkVersion, options: GateOptions): RequestListener {
  const auth = tollgate(options)
  const app = express()
  const sessions = new Map<string, NodeTransport>()
  let operation: Whoami['op'] | undefined
  const report: Report = (scopes) => JSON.stringify({ scopes, op: operation })
  const opened = async (): Promise<NodeTransport> => {
    const transportOptions = {
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (session: string) => {
        sessions.set(session, transport)
      },
    }
    let transport: NodeTransport
    if (sdk === '1.x') {
      const created = new NodeTransport1(transportOptions)
      await SERVERS['1.x'](created, report)
      transport = created
    } else {
      const created = new NodeStreamableHTTPServerTransport(transportOptions)
      await SERVERS['2.x'](created, report)
      transport = created
    }
    return transport
  }
  app.use(auth.resourceMetadata)
  app.all('/mcp', express.json(), mcpGate(auth, MCP_POLICY), async (req, res) => {
    const id = req.headers['mcp-session-id']
    let transport = typeof id === 'string' ? sessions.get(id) : undefined
    if (transport === undefined) {
      if (req.method !== 'POST' || req.body?.method !== 'initialize') {
        res
          .status(400)
          .json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } })
        return
      }
      transport = await opened()
    }
    operation = { method: req.mcp?.method, name: req.mcp?.name }
    await transport.handleRequest(req, res, req.body)
  })
  return app
}

/**
 * One stateless SDK server for one Fetch request, on the Web-standard transport: the body the gate
 * parsed and the admission handed on.
 */
async function answerStateless(
  sdk: SdkVersion,
  request: Request,
  operation: { method: string | undefined; name: string | undefined; body: unknown },
  admission: Admission | undefined,
): Promise<Response> {
  const { method, name, body } = operation
  const report: Report = (scopes) => JSON.stringify({ scopes, op: { method, name } })
  const authInfo = authInfoOf(admission)
  const handed = { parsedBody: body, ...(authInfo === undefined ? {} : { authInfo }) }
  if (sdk === '1.x') {
    const transport = new WebTransport1({ enableJsonResponse: true })
    await SERVERS['1.x'](transport, report)
    return transport.handleRequest(request, handed)
  }
  const transport = new WebTransport2({ enableJsonResponse: true })
  await SERVERS['2.x'](transport, report)
  return transport.handleRequest(request, handed)
}

function fetchApp(sdk: SdkVersion, options: GateOptions): RequestListener {
  const auth = fetchTollgate(options)
  const guarded = fetchMcpGate(auth, MCP_POLICY)
  const mcp = guarded((request, admission, operation) =>
    answerStateless(sdk, request, operation, admission),
  )
  return fetchListener((request) => {
    const metadata = auth.resourceMetadata(request)
    if (metadata !== undefined) return metadata
    if (new URL(request.url).pathname === '/mcp') return mcp(request)
    return new Response(null, { status: 404 })
  })
}

function honoApp(sdk: SdkVersion, options: GateOptions): RequestListener {
  const auth = honoTollgate(options)
  const mcp = new Hono<McpEnv>()
  mcp.all('/mcp', honoMcpGate(auth, MCP_POLICY), (c) =>
    answerStateless(sdk, c.req.raw, c.get('mcp'), c.get('auth')),
  )
  const app = sdk === '1.x' ? new Hono() : createMcpHonoApp()
  app.use(auth.resourceMetadata)
  app.route('/', mcp)
  return fetchListener((request) => app.fetch(request))
}

/** The MCP server of `sdk` on `framework`, behind tollgate with `options`. */
export function mcpApp(
  sdk: SdkVersion,
  framework: McpFramework,
  options: GateOptions,
): RequestListener {
  if (framework === 'Express') return expressApp(sdk, options)
  return framework === 'Hono' ? honoApp(sdk, options) : fetchApp(sdk, options)
}
