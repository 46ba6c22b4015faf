import { describe, expect, it } from 'vitest'

import { FetchFailure, fetchJSON } from '../../src/token/fetch-json.js'

const never = new Promise<never>(() => undefined)
const options = (fetch: typeof globalThis.fetch) => ({ fetch, timeoutMs: 50, maxBodyBytes: 1024 })

async function reasonOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
  } catch (error) {
    return error instanceof FetchFailure ? error.reason : `not a FetchFailure: ${String(error)}`
  }
  return undefined
}

describe('fetchJSON', () => {
  it('times out a fetch that never answers and ignores its signal', async () => {
    // What Node 20's fetch does once it has lost track of a signal after a garbage collection.
    expect(
      await reasonOf(
        fetchJSON(
          'https://sso/certs',
          options(() => never),
        ),
      ),
    ).toBe('timeout')
  })

  it('times out a body that never ends, whatever the fetch does with its signal', async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"keys":'))
      },
    })
    const fetch = async () => new Response(body, { status: 200 })
    expect(await reasonOf(fetchJSON('https://sso/certs', options(fetch)))).toBe('timeout')
  })

  it('aborts the request it gave up on', async () => {
    let seen: AbortSignal | undefined
    const fetch: typeof globalThis.fetch = (_url, init) => {
      seen = init?.signal ?? undefined
      return never
    }
    await reasonOf(fetchJSON('https://sso/certs', options(fetch)))
    expect(seen?.aborted).toBe(true)
  })

  it('stops when its caller aborts (the gate closing)', async () => {
    const closing = new AbortController()
    const fetch: typeof globalThis.fetch = (_url, init) =>
      new Promise((_, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      )
    const pending = fetchJSON('https://sso/certs', {
      ...options(fetch),
      timeoutMs: 60_000,
      signal: closing.signal,
    })
    closing.abort()
    expect(await reasonOf(pending)).toBe('timeout')
  })

  it('parses a document that arrives in time', async () => {
    const fetch = async () => new Response('{"keys":[]}', { status: 200 })
    expect(await fetchJSON('https://sso/certs', options(fetch))).toEqual({ keys: [] })
  })
})
