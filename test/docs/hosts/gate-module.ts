/**
 * Host of a sample that is a module building a gate's parts rather than a server: it exports a
 * `gate` (`createGate()`), the `rateLimit` options of one, or the `redis` client for the limiter.
 * Serves that gate on Node's HTTP server at `PORT`, as docs/gateway.md's framework-neutral core
 * does (`gate.check()`, `renderError()`), answering `{ user, tenant }` once admitted. Around
 * `rateLimit` or `redis` it builds the gate the guide describes: Keycloak realm `acme` at
 * `AUTH_URL`, audience `gateway`, the tenant from the `tenant` claim (with `redis`: two points a
 * minute, counted in that client's Redis; and a duplicate of it with `commandTimeout` is tried
 * first, printing `refused: <message>`).
 *
 * A name the sample only declares (`declare const store: SharedStore`) is what its guide says the
 * application provides: the module `SAMPLE_PROVIDES` (test/docs/hosts/provides/) exports it, and
 * it is set as a global before the sample is imported.
 */
import { createServer } from 'node:http'
import { pathToFileURL } from 'node:url'
import type { Redis } from 'ioredis'
import { createGate, type Gate, keycloak, type RateLimitOptions, renderError } from 'tollgate'

const provides = process.env['SAMPLE_PROVIDES']
if (provides !== undefined) {
  const names = (await import(pathToFileURL(provides).href)) as Record<string, unknown>
  Object.assign(globalThis, names)
}
const sample = (await import(pathToFileURL(process.env['SAMPLE_MODULE'] ?? '').href)) as {
  gate?: Gate
  rateLimit?: RateLimitOptions
  redis?: Redis
}

const around = (rateLimit: RateLimitOptions) =>
  createGate({
    issuers: keycloak({ authUrl: process.env['AUTH_URL'] ?? '', realms: ['acme'] }),
    audience: 'gateway',
    tenant: { claim: 'tenant' },
    rateLimit,
  })

let gate: Gate
if (sample.gate !== undefined) {
  gate = sample.gate
} else if (sample.rateLimit !== undefined) {
  gate = around(sample.rateLimit)
} else if (sample.redis !== undefined) {
  const windows = [{ points: 2, durationSeconds: 60 }]
  try {
    around({ windows, store: { redis: sample.redis.duplicate({ commandTimeout: 200 }) } })
  } catch (error) {
    console.log(`refused: ${(error as Error).message}`)
  }
  gate = around({ windows, store: { redis: sample.redis } })
} else {
  throw new TypeError('the sample exports no gate, rateLimit or redis')
}

createServer(async (req, res) => {
  try {
    const { auth, headers } = await gate.check({
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      method: req.method,
      url: req.url,
    })
    res.writeHead(200, { ...headers, 'content-type': 'application/json' })
    res.end(JSON.stringify({ user: auth?.subject, tenant: auth?.tenant }))
  } catch (error) {
    const { status, headers, body } = renderError(error)
    res.writeHead(status, headers).end(body)
  }
}).listen(Number(process.env['PORT']), '127.0.0.1')
