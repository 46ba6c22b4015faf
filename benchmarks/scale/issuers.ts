/**
 * The token side at production sizes (issue 30): what `gate.ready()` fetches and how long it takes
 * with 1 to 1,000 issuers (each with its own JWKS, and 1,000 sharing one), the size of the
 * `rejected` event of a token whose issuer is not configured, and the verified-token cache at 5k
 * and 100k entries (1M with `BENCH_SCALE_CACHE=1000000`): the heap it holds per token, and a hit. Gates are built from `dist/` (`BENCH_DIST` for another build) and fetch from
 * a loopback JWKS server that counts its fetches.
 *
 * `node --expose-gc --import tsx benchmarks/scale/issuers.ts`; `BENCH_SCALE_CACHE=5000` leaves out
 * the 100k cache rows, `BENCH_SCALE_CACHE=1000000` adds the 1M ones (about 4 GB of heap).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { distDir, isMain } from '../config.ts'
import { accessClaims, generateKey, signJws } from '../fixtures.ts'

interface Gate {
  ready(): Promise<{ ready: boolean }>
  check(request: { headers: Record<string, string> }): Promise<unknown>
  close(): Promise<void>
}
interface CoreModule {
  createGate(options: Record<string, unknown>): Gate
}

const AUDIENCE = 'gateway'
const MAX_CACHE = Number(process.env.BENCH_SCALE_CACHE ?? 100_000)

/** Heap in use after a full collection (the scale suites run with `--expose-gc`). */
function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with node --expose-gc (npm run bench:scale does)')
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** A JWKS server answering the same key set at every path, counting fetches. */
async function startJwksServer(jwks: string) {
  let fetches = 0
  const server: Server = createServer((_req, res) => {
    fetches++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(jwks)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    fetches: () => fetches,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const ms = (ns: number) => (ns / 1e6).toFixed(ns < 1e7 ? 2 : 0)
const count = (n: number) =>
  n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n)

export async function run(): Promise<string> {
  const core = (await import(pathToFileURL(join(distDir, 'src/index.js')).href)) as CoreModule
  const key = generateKey('ES256', 'scale-1')
  const server = await startJwksServer(JSON.stringify({ keys: [key.jwk] }))
  const rows: string[] = []
  const issuerOf = (index: number) => `${server.url}/tenants/t${index}`
  try {
    // ready(), twice: each issuer with its own JWKS, then 1,000 issuers behind one jwks_uri.
    const cases: Array<[string, number, (index: number) => string]> = [
      ['own jwks_uri', 1, (index) => `${issuerOf(index)}/jwks`],
      ['own jwks_uri', 100, (index) => `${issuerOf(index)}/jwks`],
      ['own jwks_uri', 1000, (index) => `${issuerOf(index)}/jwks`],
      ['one shared jwks_uri', 1000, () => `${server.url}/common/jwks`],
    ]
    for (const [kind, size, jwksUri] of cases) {
      const gate = core.createGate({
        issuers: Array.from({ length: size }, (_, index) => ({
          issuer: issuerOf(index),
          jwksUri: jwksUri(index),
        })),
        audience: AUDIENCE,
        // A loaded machine serving 1,000 fetches at once must not time them out: counts matter here.
        jwks: { timeoutMs: 10_000 },
      })
      const calls: string[] = []
      for (let call = 0; call < 2; call++) {
        const before = server.fetches()
        const started = process.hrtime.bigint()
        const report = await gate.ready()
        const elapsed = Number(process.hrtime.bigint() - started)
        const unready = report.ready ? '' : ' (not ready)'
        calls.push(`${server.fetches() - before} fetches, ${ms(elapsed)} ms${unready}`)
      }
      await gate.close()
      rows.push(
        `| \`gate.ready()\`, ${kind} | ${count(size)} issuers | first: ${calls[0]} | second: ${calls[1]} |`,
      )
    }

    // The rejected event of a token naming an issuer that is not configured, at 1,000 issuers.
    {
      let event: unknown
      const gate = core.createGate({
        issuers: Array.from({ length: 1000 }, (_, index) => ({
          issuer: issuerOf(index),
          jwksUri: `${issuerOf(index)}/jwks`,
        })),
        audience: AUDIENCE,
        onEvent: (e: { type: string }) => {
          if (e.type === 'rejected') event = e
        },
      })
      const stranger = `${server.url}/tenants/t5000`
      const token = signJws(
        { alg: 'ES256', typ: 'JWT', kid: key.kid },
        accessClaims(stranger),
        key.privateKey,
        'ES256',
      )
      await gate.check({ headers: { authorization: `Bearer ${token}` } }).catch(() => {})
      await gate.close()
      const bytes = Buffer.byteLength(JSON.stringify(event))
      rows.push(`| \`unknown_issuer\` rejected event (JSON) | 1k issuers | ${bytes} B | |`)
    }

    // A verified-token cache as large as the pool of tokens, one issuer: the heap it holds per
    // token, then a hit.
    for (const size of [5_000, 100_000, 1_000_000].filter((n) => n <= MAX_CACHE)) {
      const issuer = issuerOf(0)
      const gate = core.createGate({
        issuers: [{ issuer, jwksUri: `${issuer}/jwks` }],
        audience: AUDIENCE,
        cache: { maxEntries: size },
      })
      await gate.ready()
      const tokens = Array.from({ length: size }, () =>
        signJws(
          { alg: 'ES256', typ: 'JWT', kid: key.kid },
          accessClaims(issuer),
          key.privateKey,
          'ES256',
        ),
      )
      // Each request brings its own header string, as one parsed from a socket does: what the
      // cache holds per token includes the token's own copy.
      const before = heapUsed()
      for (const token of tokens)
        await gate.check({ headers: { authorization: `Bearer ${token}` } })
      const perEntry = (heapUsed() - before) / size
      const length = (tokens[0] as string).length
      rows.push(
        `| heap per cached token (${length}-character ES256 tokens, Keycloak claims) | ${count(size)} entries | ${perEntry.toFixed(0)} B (${(perEntry - length).toFixed(0)} B beyond the token's characters) | |`,
      )
      const requests = tokens.map((token) => ({ headers: { authorization: `Bearer ${token}` } }))
      // CPU time of this process: the machine is shared, and wall time counts others' turns.
      let best = Number.POSITIVE_INFINITY
      const ops = 200_000
      for (let round = 0; round < 5; round++) {
        const started = process.cpuUsage()
        for (let index = 0; index < ops; index++) {
          await gate.check(requests[(index * 7919) % size] as (typeof requests)[number])
        }
        const { user, system } = process.cpuUsage(started)
        best = Math.min(best, ((user + system) * 1000) / ops)
      }
      await gate.close()
      rows.push(
        `| verified-token cache hit (\`gate.check\`) | ${count(size)} entries | ${(best / 1000).toFixed(2)} µs | |`,
      )
    }
  } finally {
    await server.close()
  }
  return ['| issuers and tokens | size | measured | |', '|---|---|---|---|', ...rows].join('\n')
}

if (isMain(import.meta.url)) {
  console.log(`build: ${distDir}`)
  console.log(await run())
  process.exit(0)
}
