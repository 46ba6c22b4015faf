/**
 * Loaded before every sample program the runner starts (`tsx --import`): the substitution table of
 * docs/testing.md ("How the samples run"), applied to `fetch`. A sample names real providers and
 * services (`https://acme.eu.auth0.com/`, `https://office.example.com`); this sends a request for
 * one of the origins of `TOLLGATE_SAMPLE_HOSTS` (a JSON object, origin → loopback base URL) to that
 * base on loopback, path and query kept, and refuses any other address off loopback, so that no
 * sample reaches the network and a URL missing from the table fails its sample with this message.
 * The sample's code is run as printed: nothing in it is rewritten.
 *
 * @module
 */

const table: Readonly<Record<string, string>> = JSON.parse(
  process.env['TOLLGATE_SAMPLE_HOSTS'] ?? '{}',
)
const send = globalThis.fetch
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

function substitute(url: URL): string | undefined {
  const base = table[url.origin]
  if (base !== undefined) return `${base}${url.pathname}${url.search}`
  if (LOOPBACK.has(url.hostname)) return url.href
  return undefined
}

globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const requested = input instanceof Request ? input.url : String(input)
  const target = substitute(new URL(requested))
  if (target === undefined) {
    const message = `samples runner: ${requested} is not in the substitution table (test/docs/world.ts, docs/testing.md)`
    console.error(message)
    throw new TypeError('fetch failed', { cause: new Error(message) })
  }
  if (!(input instanceof Request)) return send(target, init)
  // A Request keeps its method, headers and body; only its URL changes.
  const copy = {
    method: input.method,
    headers: input.headers,
    body: input.body,
    redirect: input.redirect,
    signal: input.signal,
    duplex: 'half',
  } as RequestInit
  return send(new Request(target, copy), init)
}
