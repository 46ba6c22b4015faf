/**
 * Reads an MCP request's body when the framework has not parsed it: bounded, then parsed as
 * JSON, for the policy to read and for the MCP transport to be handed on (Express `req.body`).
 *
 * @module
 */
import { McpRequestError } from '../errors.js'

/** Parses a JSON-RPC body's text. @throws McpRequestError (-32700) when it is not JSON. */
export function parseMcpBody(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (cause) {
    throw new McpRequestError({ reason: 'mcp_body_invalid', jsonRpcCode: -32700, cause })
  }
}

const JSON_TYPE = /^application\/(?:[^/]*\+)?json$/

/**
 * The JSON-RPC body as a framework's parsers left it (Fastify's, NestJS's): text or bytes that a
 * parser of another type left (Fastify's own `text/plain` parser) parsed; a parsed JSON body as it
 * is, a JSON string (`"…"`) included; `undefined` when no parser read it, for the adapter to read
 * the stream.
 *
 * @throws McpRequestError (-32700) when the text is not JSON.
 */
export function parsedBodyOf(body: unknown, contentType: string | string[] | undefined): unknown {
  if (body === undefined || body === null) return undefined
  if (Buffer.isBuffer(body)) return parseMcpBody(body.toString('utf8'))
  if (typeof body !== 'string') return body
  const type = typeof contentType === 'string' ? contentType : undefined
  const essence = type?.split(';', 1)[0]?.trim().toLowerCase()
  return essence !== undefined && JSON_TYPE.test(essence) ? body : parseMcpBody(body)
}

/** The body too large for `maxBodyBytes`. */
export function bodyTooLarge(): McpRequestError {
  return new McpRequestError({ reason: 'mcp_body_too_large', jsonRpcCode: -32600 })
}

/** Reads a Node request stream up to `maxBytes`, as text. @throws McpRequestError past the bound. */
export async function readNodeBody(
  stream: AsyncIterable<Uint8Array | string>,
  maxBytes: number,
): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk)
    size += buffer.length
    if (size > maxBytes) throw bodyTooLarge()
    chunks.push(buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Reads a Fetch `Request`'s body (a clone: the handler reads the original) up to `maxBytes`. */
export async function readFetchBody(request: Request, maxBytes: number): Promise<string> {
  const declared = Number(request.headers.get('content-length'))
  if (Number.isFinite(declared) && declared > maxBytes) throw bodyTooLarge()
  const body = request.clone().body
  if (body === null) return ''
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > maxBytes) {
      await reader.cancel()
      throw bodyTooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}
