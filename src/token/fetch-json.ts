/**
 * Fetching a document (JSON, or a signed token) from an identity provider: a deadline over headers and body, a size
 * cap, no redirects, and failures classified by reason for events and backoff.
 *
 * @module
 */
import type { JWKSFailureReason } from '../events.js'

const ACCEPT = 'application/jwk-set+json, application/json;q=0.9'

/** Where a failed fetch went, and what it was answered. */
export interface FetchFailurePlace {
  /** The HTTP status of an answer that was not 200 (reasons `status` and `redirect`). */
  readonly status?: number | undefined
  /** The URL fetched, as {@link urlForOperators} shows it. */
  readonly url?: string | undefined
}

/** A fetch that did not yield a usable document, with the reason events report. */
export class FetchFailure extends Error {
  readonly reason: JWKSFailureReason
  readonly status: number | undefined
  readonly url: string | undefined
  constructor(reason: JWKSFailureReason, cause?: unknown, place: FetchFailurePlace = {}) {
    const status = place.status === undefined ? '' : ` ${place.status}`
    const from = place.url === undefined ? '' : ` from ${place.url}`
    super(
      `JWKS fetch failed: ${reason}${status}${from}`,
      cause === undefined ? undefined : { cause },
    )
    this.reason = reason
    this.status = place.status
    this.url = place.url
  }

  /** The same failure, naming the URL it came from. */
  at(uri: string): FetchFailure {
    return new FetchFailure(this.reason, this.cause, {
      status: this.status,
      url: urlForOperators(uri),
    })
  }
}

/**
 * A URL as events, warnings and `ready()` show it: scheme, host and path. Key URLs carry no
 * credentials (refused at construction), and a query, which might, is shown as `?…`.
 */
export function urlForOperators(uri: string): string {
  try {
    const url = new URL(uri)
    return `${url.origin}${url.pathname}${url.search === '' ? '' : '?…'}`
  } catch {
    return '(not a URL)'
  }
}

/** How {@link fetchJSON} fetches. */
export interface FetchJSONOptions {
  readonly fetch: typeof globalThis.fetch
  readonly timeoutMs: number
  readonly maxBodyBytes: number
  /** Aborts the fetch early (the gate's `close()`). */
  readonly signal?: AbortSignal | undefined
}

/**
 * Fetches and parses a JSON document, within `timeoutMs` for headers and body together.
 *
 * @throws FetchFailure with reason `network`, `timeout`, `redirect`, `status` (and the status),
 *   `too_large` or `invalid_json`, naming the URL.
 */
export async function fetchJSON(uri: string, options: FetchJSONOptions): Promise<unknown> {
  const text = await fetchText(uri, ACCEPT, options)
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new FetchFailure('invalid_json', error).at(uri)
  }
}

/**
 * Fetches a document as text with {@link fetchJSON}'s rules (deadline over headers and body, size
 * cap, no redirects): for documents that are not JSON, such as a Status List Token.
 *
 * @throws FetchFailure with reason `network`, `timeout`, `redirect`, `status` or `too_large`.
 */
export async function fetchText(
  uri: string,
  accept: string,
  options: FetchJSONOptions,
): Promise<string> {
  const controller = new AbortController()
  const { signal } = options
  const forwardClose = () => controller.abort(signal?.reason)
  if (signal?.aborted) forwardClose()
  signal?.addEventListener('abort', forwardClose, { once: true })
  // The deadline is our own timer, raced against the whole fetch, not only a signal handed to
  // fetch: Node 20's fetch can lose track of a signal after a garbage collection (undici's
  // request-signal following, nodejs/node#55428), and a composite AbortSignal.any() with
  // AbortSignal.timeout() then never fires, so a provider that hangs would hold requests forever.
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const failure = new FetchFailure('timeout')
      controller.abort(failure)
      reject(failure)
    }, options.timeoutMs)
  })
  try {
    return await Promise.race([
      fetchBody(uri, accept, options.fetch, options.maxBodyBytes, controller.signal),
      deadline,
    ])
  } catch (error) {
    throw error instanceof FetchFailure && error.url === undefined ? error.at(uri) : error
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', forwardClose)
  }
}

async function fetchBody(
  uri: string,
  accept: string,
  fetch: typeof globalThis.fetch,
  maxBodyBytes: number,
  signal: AbortSignal,
): Promise<string> {
  let response: Response
  try {
    response = await fetch(uri, { redirect: 'manual', headers: { accept }, signal })
  } catch (error) {
    throw new FetchFailure(isTimeout(error) ? 'timeout' : 'network', error)
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure('redirect', undefined, { status: response.status })
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure('status', undefined, { status: response.status })
  }
  return readCapped(response, maxBodyBytes)
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'))
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure('too_large')
  }
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined)
        throw new FetchFailure('too_large')
      }
      chunks.push(value)
    }
  } catch (error) {
    if (error instanceof FetchFailure) throw error
    throw new FetchFailure(isTimeout(error) ? 'timeout' : 'network', error)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}
