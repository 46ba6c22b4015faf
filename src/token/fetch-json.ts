/**
 * Fetching a JSON document from an identity provider: a deadline over headers and body, a size
 * cap, no redirects, and failures classified by reason for events and backoff.
 *
 * @module
 */
import type { JWKSFailureReason } from '../events.js'

const ACCEPT = 'application/jwk-set+json, application/json;q=0.9'

/** A fetch that did not yield a usable document, with the reason events report. */
export class FetchFailure extends Error {
  readonly reason: JWKSFailureReason
  constructor(reason: JWKSFailureReason, cause?: unknown) {
    super(`JWKS fetch failed: ${reason}`, cause === undefined ? undefined : { cause })
    this.reason = reason
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
 * @throws FetchFailure with reason `network`, `timeout`, `redirect`, `status`, `too_large` or `invalid_json`.
 */
export async function fetchJSON(uri: string, options: FetchJSONOptions): Promise<unknown> {
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
      fetchAndParse(uri, options.fetch, options.maxBodyBytes, controller.signal),
      deadline,
    ])
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', forwardClose)
  }
}

async function fetchAndParse(
  uri: string,
  fetch: typeof globalThis.fetch,
  maxBodyBytes: number,
  signal: AbortSignal,
): Promise<unknown> {
  let response: Response
  try {
    response = await fetch(uri, { redirect: 'manual', headers: { accept: ACCEPT }, signal })
  } catch (error) {
    throw new FetchFailure(isTimeout(error) ? 'timeout' : 'network', error)
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure('redirect')
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure('status')
  }
  const text = await readCapped(response, maxBodyBytes)
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new FetchFailure('invalid_json', error)
  }
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
