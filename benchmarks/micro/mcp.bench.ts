/**
 * What `mcpGate` adds to a `tools/call`: the Express middleware on a cached token, alone, against
 * the same middleware behind `mcpGate` (the operation read from the parsed JSON-RPC body,
 * `Mcp-Method` / `Mcp-Name` checked against it, the tool's scopes checked by the gate's guard), and
 * with a window per (tenant, tool) in memory. In process, on request and response objects of the
 * shape Express hands to middleware, so that only tollgate's code is timed (no socket, no JSON
 * parsing: `express.json()` costs the same with or without the per-tool gate). Target: at most
 * 2 µs added. Needs `dist/adapters/express/mcp.js` (`npm run build`).
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { distDir, isMain } from '../config.ts'
import { AUDIENCE, mintPool, REALM } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type MicroRow, newResult, type SuiteResult, writeResult } from '../results.ts'
import { closeGate, type Gate, loadCore } from '../tollgate.ts'
import { type Contender, measureCase } from './measure.ts'

export const PLAIN = 'Express middleware, cached token'
export const PER_TOOL = 'the same behind mcpGate: tools/call, per-tool scopes, headers checked'
export const PER_TOOL_LIMITED = 'the same with a window per (tenant, tool), memory'

type Next = (error?: unknown) => void
type Handler = ((req: object, res: object, next: Next) => void) & { readonly gate: Gate }
interface ExpressMcpModule {
  tollgate(options: object): Handler
  mcpGate(auth: Handler, policy: object): (req: object, res: object, next: Next) => void
}

const expressPath = join(distDir, 'adapters/express/index.js')
const mcpPath = join(distDir, 'adapters/express/mcp.js')

/** A response object with what the middleware touches: headers, and whether it was sent. */
function response() {
  const headers: Record<string, string> = {}
  return {
    headersSent: false,
    statusCode: 200,
    setHeader(name: string, value: string) {
      headers[name] = value
    },
    getHeader(name: string) {
      return headers[name]
    },
    end() {
      this.headersSent = true
    },
  }
}

export async function runSuite(): Promise<SuiteResult<MicroRow>> {
  const result = newResult<MicroRow>('micro-mcp')
  if (!existsSync(mcpPath)) {
    result.skipped.push({ what: 'mcpGate', why: 'dist/adapters/express/mcp.js is not built' })
    console.log('\nmcpGate: not measured (dist/adapters/express/mcp.js is not built)')
    return result
  }
  const issuer = await startIssuer()
  const gates: Gate[] = []
  try {
    const core = await loadCore()
    const express = (await import(pathToFileURL(expressPath).href)) as ExpressMcpModule
    const tokens = mintPool(issuer, 1000, 'ES256', 100)
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search', arguments: { query: 'invoices' } },
    }
    const requestFor = (token: string) => {
      const headers = {
        host: 'mcp.example.com',
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'search',
      }
      const rawHeaders = Object.entries(headers).flat()
      return () => ({ headers, rawHeaders, method: 'POST', originalUrl: '/mcp', body, socket: {} })
    }
    const requests = tokens.map(requestFor)
    const auth = () => {
      const middleware = express.tollgate({
        issuers: core.keycloak({ authUrl: issuer.url, realms: [REALM] }),
        audience: AUDIENCE,
        cache: { maxEntries: 10_000 },
        tenant: { claim: 'tenant' },
      })
      gates.push(middleware.gate)
      return middleware
    }
    let admitted = 0
    const next: Next = (error) => {
      if (error !== undefined) throw error
      admitted++
    }
    // Each request is a new object, as in Express: the gate's decision is kept on the request.
    const run = (middleware: (req: object, res: object, next: Next) => void) => {
      let i = 0
      return () => middleware(requests[i++ % requests.length]!(), response(), next)
    }
    const plain = auth()
    const perTool = auth()
    const limited = auth()
    const scopes = ['openid', 'profile']
    const contenders: Contender[] = [
      [PLAIN, run(plain)],
      [
        PER_TOOL,
        run(express.mcpGate(perTool, { default: { scopes }, tools: { search: { scopes } } })),
      ],
      [
        PER_TOOL_LIMITED,
        run(
          express.mcpGate(limited, {
            default: { scopes },
            tools: {
              search: { scopes, rateLimit: [{ points: 1_000_000_000, durationSeconds: 60 }] },
            },
          }),
        ),
      ],
    ]
    for (const gate of gates) await gate.ready()
    // Every token verified once: the cases measure cache hits.
    for (const [, fn] of contenders) for (let i = 0; i < requests.length; i++) fn()
    const before = admitted
    for (const [, fn] of contenders) fn()
    if (admitted !== before + contenders.length) {
      throw new Error('a contender did not admit its request synchronously')
    }
    const rows = await measureCase('mcpGate, tools/call (ES256 tokens, cached)', contenders)
    const base = rows.find((row) => row.contender === PLAIN)!
    for (const row of rows) {
      if (row === base) continue
      row.note = `adds ≈ ${((row.nsPerOp - base.nsPerOp) / 1000).toFixed(2)} µs`
      console.log(`  ${row.contender}: ${row.note}`)
    }
    result.rows.push(...rows)
  } finally {
    for (const gate of gates) await closeGate(gate)
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
