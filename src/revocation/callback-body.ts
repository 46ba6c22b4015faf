/**
 * Reading a provider callback's body, whether or not the application's body parser got to it
 * first: the raw stream when nobody read it, else what the parser left in `body`. Bounded, and
 * strict about form parameters (RFC 6749 §3.2: none repeated).
 *
 * @module
 */
import type { HeadersLike } from '../types.js'

/** What an adapter hands over for a provider callback. */
export interface CallbackRequest {
  readonly headers: HeadersLike
  readonly method?: string | undefined
  /** The body, when the application's body parser already read it (`req.body`, `ctx.request.body`). */
  readonly body?: unknown
  /** The request stream (Node's `IncomingMessage`), read when no body parser consumed it. */
  readonly stream?: (AsyncIterable<unknown> & { readonly readableEnded?: boolean }) | undefined
}

/** A logout token is about 1 KB; anything far larger is not one. */
const MAX_BODY_BYTES = 16 * 1024
const FORM = 'application/x-www-form-urlencoded'

/** The stream, when nobody read it yet (no body parser ran, or one skipped this media type). */
function unread(request: CallbackRequest): CallbackRequest['stream'] {
  const { stream } = request
  return stream !== undefined && stream.readableEnded !== true ? stream : undefined
}

/** The body as text, or `undefined` when it is too large, broken off, or parsed into something else. */
export async function readText(request: CallbackRequest): Promise<string | undefined> {
  const stream = unread(request)
  if (stream === undefined) {
    const { body } = request
    if (typeof body === 'string') return body
    return Buffer.isBuffer(body) ? body.toString('utf8') : undefined
  }
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of stream) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk))
      size += bytes.length
      if (size > MAX_BODY_BYTES) return undefined
      chunks.push(bytes)
    }
  } catch {
    return undefined
  }
  return Buffer.concat(chunks).toString('utf8')
}

function mediaType(headers: HeadersLike): string | undefined {
  const value = headers['content-type']
  return typeof value === 'string' ? value.split(';', 1)[0]?.trim().toLowerCase() : undefined
}

/** `logout_token` exactly once (RFC 6749 §3.2: no repeated parameters), or `undefined`. */
export async function logoutTokenOf(request: CallbackRequest): Promise<string | undefined> {
  // §2.5: the logout token arrives as application/x-www-form-urlencoded, nothing else.
  if (mediaType(request.headers) !== FORM) return undefined
  const { body } = request
  if (
    unread(request) === undefined &&
    typeof body === 'object' &&
    body !== null &&
    !Buffer.isBuffer(body)
  ) {
    // Parsed by the application's body parser: a repeated parameter arrives as an array.
    const token = Object.hasOwn(body, 'logout_token')
      ? (body as Record<string, unknown>)['logout_token']
      : undefined
    return typeof token === 'string' ? token : undefined
  }
  const text = await readText(request)
  if (text === undefined) return undefined
  const tokens = new URLSearchParams(text).getAll('logout_token')
  return tokens.length === 1 ? tokens[0] : undefined
}
