/**
 * How an MCP refusal of the request itself is answered: as MCP servers answer it, a JSON-RPC
 * error body (Streamable HTTP, "Server Validation"), so that an MCP client reads a
 * `HeaderMismatch` (-32020) as a modern server's answer and does not fall back to an older
 * transport. Every other refusal (401, 403, 429) keeps the gate's own answer and challenge.
 *
 * @module
 */
import { type ErrorResponse, McpRequestError, renderError } from '../errors.js'

const HEADERS = Object.freeze({
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
})

/**
 * The response for a refusal on an MCP endpoint: a {@link McpRequestError} as
 * `{ jsonrpc: '2.0', id, error: { code, message } }` with its status; anything else as
 * `renderError` renders it. The message is fixed text: no header, name or token is echoed.
 */
export function renderMcpError(error: unknown): ErrorResponse {
  if (!(error instanceof McpRequestError)) return renderError(error)
  return {
    status: error.status,
    headers: { ...HEADERS },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: error.id,
      error: { code: error.jsonRpcCode, message: error.message },
    }),
  }
}
