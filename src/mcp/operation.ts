/**
 * What an MCP request does, read from its JSON-RPC body, and checked against the `Mcp-Method` /
 * `Mcp-Name` headers that MCP 2026-07-28 mirrors it in (Streamable HTTP, "Request Metadata"):
 * the gate authorizes what the server will execute (the body), and refuses a request whose
 * headers say otherwise, so that a proxy routing or limiting on the headers and the server
 * executing the body cannot be told two different things.
 *
 * @module
 */
import { McpRequestError } from '../errors.js'
import type { HeadersLike } from '../types.js'

/** One JSON-RPC message of an MCP request, as the gate authorized it. */
export interface McpOperation {
  /** The JSON-RPC `method` (`tools/call`, `resources/read`, `initialize`, …); `undefined` for a JSON-RPC response. */
  readonly method: string | undefined
  /** `params.name` of `tools/call` and `prompts/get`, `params.uri` of `resources/*`; else `undefined`. */
  readonly name: string | undefined
  /** What `name` names: a tool, a resource or a prompt; `undefined` for every other method. */
  readonly kind: 'tool' | 'resource' | 'prompt' | undefined
}

/** The first MCP revision whose clients must send `Mcp-Method` and `Mcp-Name` (SEP-2243). */
export const HEADERS_REQUIRED_FROM = '2026-07-28'

// The methods whose target `Mcp-Name` mirrors (`params.name` or `params.uri`), and the methods
// that act on one resource by URI, which a resource rule governs.
const TARGETS: Readonly<Record<string, { key: 'name' | 'uri'; kind: McpOperation['kind'] }>> = {
  'tools/call': { key: 'name', kind: 'tool' },
  'prompts/get': { key: 'name', kind: 'prompt' },
  'resources/read': { key: 'uri', kind: 'resource' },
  'resources/subscribe': { key: 'uri', kind: 'resource' },
  'resources/unsubscribe': { key: 'uri', kind: 'resource' },
}
/** The methods whose `Mcp-Name` is required (Streamable HTTP, "Standard Request Headers"). */
const NAME_REQUIRED = new Set(['tools/call', 'prompts/get', 'resources/read'])

const DATE = /^\d{4}-\d{2}-\d{2}$/
const SENTINEL_PREFIX = '=?base64?'
const SENTINEL_SUFFIX = '?='
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** One header's value: a repeated header is no single value. */
function single(value: string | string[] | undefined): string | undefined | null {
  if (value === undefined) return undefined
  if (typeof value === 'string') return value
  return value.length === 1 ? (value[0] as string) : null
}

/**
 * The `Mcp-Name` value decoded: a value in the Base64 sentinel form `=?base64?…?=` is the Base64
 * of the UTF-8 name (Streamable HTTP, "Value Encoding"); `undefined` when the sentinel's content
 * is not strict Base64 of valid UTF-8.
 */
export function decodeMcpName(value: string): string | undefined {
  if (!value.startsWith(SENTINEL_PREFIX) || !value.endsWith(SENTINEL_SUFFIX)) return value
  if (value.length < SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length) return undefined
  const encoded = value.slice(SENTINEL_PREFIX.length, -SENTINEL_SUFFIX.length)
  if (!BASE64.test(encoded)) return undefined
  try {
    return UTF8.decode(Buffer.from(encoded, 'base64'))
  } catch {
    return undefined
  }
}

/** The request's MCP headers, read once per request. */
interface McpHeaders {
  /** The protocol version requires the headers (2026-07-28 or later). */
  readonly required: boolean
  readonly method: string | undefined | null
  readonly name: string | undefined | null
}

function headersOf(headers: HeadersLike): McpHeaders {
  const version = single(headers['mcp-protocol-version'])
  return {
    required: typeof version === 'string' && DATE.test(version) && version >= HEADERS_REQUIRED_FROM,
    method: single(headers['mcp-method']),
    name: single(headers['mcp-name']),
  }
}

type Id = string | number | null

function idOf(message: Record<string, unknown>): Id {
  const { id } = message
  return typeof id === 'string' || typeof id === 'number' ? id : null
}

type McpReason = ConstructorParameters<typeof McpRequestError>[0]['reason']

function refuse(reason: McpReason, id: Id): McpRequestError {
  return new McpRequestError({
    reason,
    jsonRpcCode: reason.startsWith('mcp_header') ? -32020 : -32600,
    id,
  })
}

/** One message of the body, read and checked against the headers. */
function operationOf(message: unknown, headers: McpHeaders): McpOperation {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    throw refuse('mcp_body_invalid', null)
  }
  const record = message as Record<string, unknown>
  const id = idOf(record)
  const { method } = record
  if (method === undefined && !('id' in record && ('result' in record || 'error' in record))) {
    throw refuse('mcp_body_invalid', id)
  }
  if (method !== undefined && typeof method !== 'string') throw refuse('mcp_body_invalid', id)
  // A JSON-RPC response (to a server's request, MCP before 2026-07-28): it names no operation.
  if (method === undefined) return { method: undefined, name: undefined, kind: undefined }
  if (headers.method === null) throw refuse('mcp_header_mismatch', id)
  if (headers.method === undefined) {
    if (headers.required) throw refuse('mcp_header_missing', id)
  } else if (headers.method !== method) {
    throw refuse('mcp_header_mismatch', id)
  }
  const target = TARGETS[method]
  if (target === undefined) return { method, name: undefined, kind: undefined }
  const params = record.params
  const name =
    typeof params === 'object' && params !== null
      ? (params as Record<string, unknown>)[target.key]
      : undefined
  // A call whose target cannot be read cannot be authorized by its target.
  if (typeof name !== 'string') throw refuse('mcp_body_invalid', id)
  if (NAME_REQUIRED.has(method)) {
    if (headers.name === null) throw refuse('mcp_header_mismatch', id)
    if (headers.name === undefined) {
      if (headers.required) throw refuse('mcp_header_missing', id)
    } else {
      const decoded = decodeMcpName(headers.name)
      if (decoded === undefined) throw refuse('mcp_header_malformed', id)
      if (decoded !== name) throw refuse('mcp_header_mismatch', id)
    }
  }
  return { method, name, kind: target.kind }
}

/** What the body of one request does: one operation per JSON-RPC message. */
export interface McpMessages {
  readonly operations: readonly McpOperation[]
  /** The body was a JSON-RPC batch (an array). */
  readonly batch: boolean
}

const NO_OPERATIONS: McpMessages = Object.freeze({ operations: Object.freeze([]), batch: false })

/**
 * Reads the operations of an MCP request from its parsed JSON-RPC body, checked against its
 * headers. A request without a body (the GET stream, DELETE of a session) has none.
 *
 * @throws McpRequestError (400) when a header disagrees with the body, a header the protocol
 * version requires is missing, `Mcp-Name` is not a valid sentinel, or the body is not JSON-RPC
 * messages whose operation can be read (an empty batch included).
 */
export function readMcpMessages(
  method: string | undefined,
  body: unknown,
  headers: HeadersLike,
): McpMessages {
  if (method !== 'POST') return NO_OPERATIONS
  const mcp = headersOf(headers)
  if (!Array.isArray(body)) {
    return { operations: [operationOf(body, mcp)], batch: false }
  }
  if (body.length === 0) throw refuse('mcp_body_invalid', null)
  return { operations: body.map((message) => operationOf(message, mcp)), batch: true }
}
