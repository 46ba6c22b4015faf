/**
 * A fetch that reads at most `maxBodyBytes` of a response, as the gate's JWKS fetch does: every
 * body the introspection side reads (answers, the discovery document, the keys of signed answers)
 * goes through it, so a provider (or whoever answers in its place) cannot make the gate read,
 * copy and cache a body of any size, nor hold it reading one that never ends.
 *
 * @module
 */

/** A body past the cap: reading stopped there. */
export class BodyTooLarge extends Error {
  constructor() {
    super('the response body is larger than introspection.maxBodyBytes')
    this.name = 'BodyTooLarge'
  }
}

/** `true` when `error`, or one of its causes, is a {@link BodyTooLarge}. */
export function isTooLarge(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; depth++) {
    if (at instanceof BodyTooLarge) return true
    at = at.cause
  }
  return false
}

/**
 * `fetch` whose 200 responses come back with their body read in full (at most `maxBodyBytes`,
 * else {@link BodyTooLarge}), and whose other responses come back without a body: the gate never
 * reads an error page.
 */
export function cappedFetch(
  fetch: typeof globalThis.fetch,
  maxBodyBytes: number,
): typeof globalThis.fetch {
  return async function capped(input, init) {
    const response = await fetch(input, init)
    const { status, statusText, headers } = response
    if (status !== 200) {
      await response.body?.cancel().catch(() => undefined)
      return new Response(null, { status, statusText, headers })
    }
    return new Response(await readCapped(response, maxBodyBytes), { status, statusText, headers })
  }
}

async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'))
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    throw new BodyTooLarge()
  }
  if (response.body === null) return new Uint8Array(0)
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw new BodyTooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}
