/**
 * A/B of builds: the same cases with each build's `gate.check`, each build alone in processes of
 * its own (`--processes` per build, alternated). Within a process, each contender's figure is the
 * median over short rounds of its difference to the case's reference (the floor, or building the
 * request alone) in the same round, by this thread's CPU time (measure.ts `measurePaired`); across
 * processes, each build's mean with a 95% interval. One build alone prints its process's table.
 *
 *   tsx micro/ab.ts ../node_modules/.dist-old ../dist [--cases=hit,miss,adapters] [--processes=10] [--rounds=9] [--round-ms=100]
 *
 * hit: 1,000 cached RS256 tokens over 100 tenants, per-tenant memory limiter (the repeated and
 * realistic HTTP modes' common case). miss: the same gate over 2,048 tokens with its cache off, and
 * with a cache of 1,000 (every check misses, inserts and evicts), next to node:crypto's raw check of
 * the same tokens (crypto-limit.ts). Both cases also run the HTTP
 * suite's floor middleware (http/servers/floor.ts) in process: what tollgate costs beyond it is
 * tollgate's own, with no kernel or framework in the figure. adapters: each build's Koa and Express
 * middleware on a cached token, called in process on a fresh request and response per call (no
 * socket), down to an empty `next`, next to building that request and response alone: what the
 * adapter adds to `gate.check`, which HTTP rounds cannot resolve. A request is never reused: a
 * gate remembers its decision on the request object (src/gate/guards.ts), so every call after the
 * first on a reused one would be taken as decided and skip the gate.
 * forged: each build's Koa middleware refusing forged tokens, next to the floor refusing them.
 * hit-items: the first build's hit with each part the floor leaves out turned off in
 * turn (the RateLimit headers, the limiter, the tenant), next to the floor's hit. unknown-kid: each
 * build's `gate.check` refusing a rotation of 1,000 unknown kids (refetch backed off), next to the
 * floor refusing them. unknown-kid-koa: the same through each build's Koa middleware, a fresh
 * context per request, next to the Koa floor server's middleware (its documented 401 included).
 */

import { execFile } from 'node:child_process'
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import Koa from 'koa'
import { AUDIENCE, bearer, forge, mintPool, unknownKid } from '../fixtures.ts'
import { FLOOR_REFUSAL, floorVerifier } from '../http/servers/floor.ts'
import { startIssuer } from '../issuer.ts'
import { type CoreModule, type Gate, type GateOptions, gateOptions } from '../tollgate.ts'
import { rawVerifier } from './crypto-limit.ts'
import { type Contender, measurePaired as measureRows, type PairedRow } from './measure.ts'

const dists = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const cases = (arg('cases') ?? 'hit,miss').split(',')
const ROWS = 'ab-rows:'
const execute = promisify(execFile)
const signedUs = (ns: number) => `${ns >= 0 ? '+' : '−'}${(Math.abs(ns) / 1000).toFixed(2)} µs`
const rounds = { rounds: Number(arg('rounds') ?? 9), roundMs: Number(arg('round-ms') ?? 100) }

// Two or more builds: each runs alone in processes of its own, alternated, and the figures are
// compared across processes. Two builds in one process do not read alike: the first build loaded
// read slower on the miss with the cache on than the second (two, then three, copies of one build:
// +4.00/+1.37, +2.12/+1.41, +2.66/+1.34 µs over the floor; +3.18/+2.71/+1.87, +5.86/+2.94/+2.09).
if (dists.length > 1 && !process.argv.includes('--one')) {
  await compareInProcesses()
  process.exit(0)
}

interface CaseRows {
  case: string
  reference: string
  rows: PairedRow[]
}
const results: CaseRows[] = []
const measurePaired = async (...args: Parameters<typeof measureRows>) => {
  const rows = await measureRows(...args)
  const dist = dists[0]!
  // The build's name out of its rows, so that processes of different builds compare row by row.
  for (const row of rows) row.contender = row.contender.replace(`${dist} `, '')
  results.push({ case: args[0], reference: args[2], rows })
  return rows
}

const issuer = await startIssuer()
const gates: Gate[] = []
const cores = await Promise.all(
  dists.map(
    async (dist) =>
      [
        dist,
        (await import(pathToFileURL(join(resolve(dist), 'src/index.js')).href)) as CoreModule,
      ] as const,
  ),
)
const tokens = mintPool(issuer, 2048, 'RS256', 100)
const requests = tokens.map(bearer)

async function gateFor(core: CoreModule, cacheEntries: number | false, pool: number) {
  const gate = core.createGate(
    gateOptions(core, { authUrl: issuer.url, cacheEntries, limiter: 'memory' }),
  )
  gates.push(gate)
  await gate.ready()
  for (let i = 0; i < pool; i++) await gate.check(requests[i]!)
  let i = 0
  return () => gate.check(requests[i++ % pool]!)
}

const floorCheck = (cacheEntries: number) =>
  floorVerifier({
    authUrl: issuer.url,
    issuer: issuer.issuer,
    jwksUri: issuer.jwksUri,
    audience: AUDIENCE,
    cacheEntries,
    limiter: 'off',
  })

type KoaMiddleware = (ctx: unknown, next: () => Promise<void>) => unknown
type ExpressMiddleware = (req: unknown, res: unknown, next: () => void) => void

/** One build's adapter: its `tollgate(options)`. */
async function adapterOf<M>(dist: string, framework: 'koa' | 'express') {
  const url = pathToFileURL(join(resolve(dist), 'adapters', framework, 'index.js')).href
  return ((await import(url)) as { tollgate: (options: unknown) => M }).tollgate
}

/** A `GET /hello` request with `headers`, no socket behind it, and its response. */
function requestWith(headers: Record<string, string>) {
  const req = new IncomingMessage(new Socket())
  req.method = 'GET'
  req.url = '/hello'
  req.headers = headers
  return { req, res: new ServerResponse(req) }
}

const koaApp = new Koa()
const koaContext = (headers: Record<string, string>) => {
  const { req, res } = requestWith(headers)
  return koaApp.createContext(req, res)
}
const done = () => Promise.resolve()

async function floorFor(cacheEntries: number, pool: number) {
  const check = await floorCheck(cacheEntries)
  const headers = requests.map((request) => request.headers.authorization as string)
  for (let i = 0; i < pool; i++) check(headers[i])
  let i = 0
  return () => check(headers[i++ % pool])
}

if (cases.includes('hit')) {
  const contenders: Contender[] = [['floor hit', await floorFor(10_000, 1000)]]
  for (const [dist, core] of cores)
    contenders.push([`${dist} hit`, await gateFor(core, 10_000, 1000)])
  await measurePaired('gate.check, cache hit, memory limiter', contenders, 'floor hit', rounds)
}
if (cases.includes('miss')) {
  const raw = rawVerifier('RS256', issuer.keys.RS256.publicKey)
  let n = 0
  const contenders: Contender[] = [
    ['node:crypto (limit)', () => raw(tokens[n++ % tokens.length]!)],
    ['floor miss, cache on', await floorFor(1000, 2048)],
  ]
  for (const [dist, core] of cores) {
    contenders.push([`${dist} miss, cache off`, await gateFor(core, false, 2048)])
    // 1,000 entries under a rotation of 2,048: every check misses, and inserts and evicts.
    contenders.push([`${dist} miss, cache on`, await gateFor(core, 1000, 2048)])
  }
  await measurePaired(
    'gate.check, cache miss, memory limiter',
    contenders,
    'floor miss, cache on',
    rounds,
  )
}
if (cases.includes('adapters')) {
  const koa: Contender[] = []
  const express: Contender[] = []
  const options = gateOptions(cores[0]![1], {
    authUrl: issuer.url,
    cacheEntries: 10_000,
    limiter: 'memory',
  })
  // A fresh request per call, as a server hands over: the gate's decision is remembered on the
  // request object, so a reused one would skip the gate from its second call on.
  const headers = requests[0]!.headers
  const newContext = () => koaContext({ ...headers })
  const newExpressRequest = () => {
    const { req, res } = requestWith({ ...headers })
    return { req: Object.assign(req, { originalUrl: '/hello' }), res }
  }
  // What building the request costs on its own, to subtract from the middleware's figure.
  const KOA_REQUEST = 'fresh Koa context alone'
  const EXPRESS_REQUEST = 'fresh Express request alone'
  koa.push([
    KOA_REQUEST,
    () => {
      newContext()
      return done()
    },
  ])
  express.push([
    EXPRESS_REQUEST,
    () =>
      new Promise<void>((next) => {
        newExpressRequest()
        next()
      }),
  ])
  for (const dist of dists) {
    const koaMiddleware = (await adapterOf<KoaMiddleware>(dist, 'koa'))(options)
    const expressMiddleware = (await adapterOf<ExpressMiddleware>(dist, 'express'))(options)
    // The case times admissions: make sure each build admits the token before timing it.
    const ctx = newContext()
    await koaMiddleware(ctx, done)
    const { req, res } = newExpressRequest()
    await new Promise<void>((next) => expressMiddleware(req, res, next))
    if (ctx.state.auth === undefined || (req as { auth?: unknown }).auth === undefined) {
      throw new Error(`${dist}: the adapters did not admit the benchmark's token`)
    }
    koa.push([`${dist} koa`, () => koaMiddleware(newContext(), done)])
    express.push([
      `${dist} express`,
      () =>
        new Promise<void>((next) => {
          const { req, res } = newExpressRequest()
          expressMiddleware(req, res, next)
        }),
    ])
  }
  await measurePaired('Koa middleware, cached token, memory limiter', koa, KOA_REQUEST, rounds)
  await measurePaired(
    'Express middleware, cached token, memory limiter',
    express,
    EXPRESS_REQUEST,
    rounds,
  )
}
if (cases.includes('forged')) {
  // A refusal through the Koa adapter (response headers and body included), a fresh context per
  // request, next to the floor middleware refusing the same tokens.
  const forged = forge(tokens).map((token) => `Bearer ${token}`)
  const contextFor = (authorization: string) => koaContext({ authorization })
  const check = await floorCheck(1000)
  let f = 0
  const contenders: Contender[] = [
    [
      'floor koa',
      () => {
        const ctx = contextFor(forged[f++ % forged.length]!)
        if (check(ctx.headers.authorization) === undefined) ctx.status = 401
      },
    ],
  ]
  const options = gateOptions(cores[0]![1], {
    authUrl: issuer.url,
    cacheEntries: 1000,
    limiter: 'memory',
  })
  for (const dist of dists) {
    const middleware = (await adapterOf<KoaMiddleware>(dist, 'koa'))(options)
    let i = 0
    contenders.push([
      `${dist} koa`,
      () => middleware(contextFor(forged[i++ % forged.length]!), done),
    ])
  }
  await measurePaired(
    'Koa middleware, forged token (known kid, bad signature)',
    contenders,
    'floor koa',
    rounds,
  )
}
if (cases.includes('hit-items')) {
  // What the floor's hit leaves out, measured by turning each part off in tollgate.
  const core = cores[0]![1]
  const variant = async (change: (options: GateOptions) => GateOptions) => {
    const gate = core.createGate(
      change(gateOptions(core, { authUrl: issuer.url, cacheEntries: 10_000, limiter: 'memory' })),
    )
    gates.push(gate)
    await gate.ready()
    for (let i = 0; i < 1000; i++) await gate.check(requests[i]!)
    let i = 0
    return () => gate.check(requests[i++ % 1000]!)
  }
  const withHeaders = (headers: unknown) => (o: GateOptions) =>
    ({ ...o, rateLimit: { ...(o.rateLimit as object), headers } }) as unknown as GateOptions
  const contenders: Contender[] = [
    ['floor hit', await floorFor(10_000, 1000)],
    ['tollgate hit: tenant, limiter, draft-10 headers', await variant((o) => o)],
    ['… RateLimit headers off', await variant(withHeaders(false))],
    ['… legacy X-RateLimit headers instead', await variant(withHeaders('legacy'))],
    [
      '… limiter off (tenant kept)',
      await variant((o) => {
        const { rateLimit: _, ...rest } = o as GateOptions & { rateLimit?: unknown }
        return rest as GateOptions
      }),
    ],
    [
      '… limiter and tenant off',
      await variant((o) => {
        const {
          rateLimit: _,
          tenant: __,
          ...rest
        } = o as GateOptions & {
          rateLimit?: unknown
          tenant?: unknown
        }
        return rest as GateOptions
      }),
    ],
  ]
  await measurePaired('gate.check, cache hit, parts turned off', contenders, 'floor hit', rounds)
}
if (cases.includes('unknown-kid')) {
  const strangers = unknownKid(issuer, 1000).map(bearer)
  const check = await floorCheck(1000)
  const authorizations = strangers.map((request) => request.headers.authorization)
  let f = 0
  const contenders: Contender[] = [
    ['floor unknown kid', () => check(authorizations[f++ % authorizations.length])],
  ]
  const refused = () => undefined
  for (const [dist, core] of cores) {
    // A short first refetch interval, so the warm-up below reaches the backed-off state (one
    // refetch per cooldown) in a few hundred milliseconds instead of seconds.
    const gate = core.createGate({
      ...gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'memory' }),
      jwks: { cooldownMs: 30_000, minCooldownMs: 1 },
    } as GateOptions)
    gates.push(gate)
    await gate.ready()
    const warmUntil = Date.now() + 1500
    for (let w = 0; Date.now() < warmUntil; w++)
      await gate.check(strangers[w % strangers.length]!).catch(refused)
    let i = 0
    contenders.push([
      `${dist} unknown kid`,
      () => gate.check(strangers[i++ % strangers.length]!).catch(refused),
    ])
  }
  await measurePaired(
    'gate.check, unknown kid (refetch backed off)',
    contenders,
    'floor unknown kid',
    rounds,
  )
}
if (cases.includes('unknown-kid-koa')) {
  // What the Koa servers of the HTTP unknown-kid mode run, without the socket: the floor's
  // middleware as koa-floor.ts has it, and each build's Koa middleware.
  const authorizations = unknownKid(issuer, 1000).map((token) => `Bearer ${token}`)
  const check = await floorCheck(1000)
  let f = 0
  const contenders: Contender[] = [
    [
      'floor koa',
      () => {
        const ctx = koaContext({ authorization: authorizations[f++ % authorizations.length]! })
        if (check(ctx.headers.authorization) === undefined) {
          ctx.status = 401
          ctx.set(FLOOR_REFUSAL.headers)
          ctx.body = FLOOR_REFUSAL.body
        }
      },
    ],
  ]
  for (const [dist, core] of cores) {
    const middleware = (await adapterOf<KoaMiddleware>(dist, 'koa'))({
      ...gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'memory' }),
      jwks: { cooldownMs: 30_000, minCooldownMs: 1 },
    })
    const warmUntil = Date.now() + 1500
    for (let w = 0; Date.now() < warmUntil; w++)
      await middleware(koaContext({ authorization: authorizations[w % 1000]! }), done)
    let i = 0
    contenders.push([
      `${dist} koa`,
      () => middleware(koaContext({ authorization: authorizations[i++ % 1000]! }), done),
    ])
  }
  await measurePaired(
    'Koa middleware, unknown kid (refetch backed off)',
    contenders,
    'floor koa',
    rounds,
  )
}
for (const gate of gates) await gate.close?.()
await issuer.close()
if (process.argv.includes('--one')) console.log(`${ROWS}${JSON.stringify(results)}`)
process.exit(0)

/**
 * Runs `--processes` processes per build (default 10), one build each, alternated (A B B A A B…),
 * and prints, per case and row, each build's mean over its processes of the row's difference to
 * the case's reference, with a 95% interval of that mean and the lowest and highest process. The
 * processes differ more than the rounds within one: two processes of one build read the miss up
 * to 4 µs apart (where code and data happen to be laid out in memory moves a 25 µs RSA check by
 * several percent), so a figure is an average over many processes, never one process's.
 */
async function compareInProcesses(): Promise<void> {
  const processes = Number(arg('processes') ?? 10)
  const passed = process.argv.slice(2).filter((a) => a.startsWith('--'))
  const byBuild = new Map<string, CaseRows[][]>(dists.map((dist) => [dist, []]))
  for (let p = 0; p < processes; p++) {
    const order = p % 2 === 0 ? dists : [...dists].reverse()
    for (const dist of order) {
      const { stdout } = await execute(process.execPath, [
        '--import',
        import.meta.resolve('tsx'),
        fileURLToPath(import.meta.url),
        dist,
        ...passed,
        '--one',
      ])
      const line = stdout.split('\n').find((l) => l.startsWith(ROWS))
      if (line === undefined) throw new Error(`${dist}: the process printed no rows:\n${stdout}`)
      const measured = JSON.parse(line.slice(ROWS.length)) as CaseRows[]
      byBuild.get(dist)!.push(measured)
      const summary = measured
        .flatMap((c) => c.rows.filter((r) => r.contender !== c.reference))
        .map((r) => `${r.contender} ${signedUs(r.vsReference.median)}`)
        .join(', ')
      console.log(`process ${p + 1}, ${dist}: ${summary}`)
    }
  }
  const first = byBuild.get(dists[0]!)![0]!
  for (const { case: caseName, reference, rows } of first) {
    console.log(
      `\n${caseName}: each build's mean over ${processes} processes of the row's difference to ${reference}, ± its 95% interval (lowest … highest process)`,
    )
    const width = Math.max(...rows.map((r) => r.contender.length))
    for (const { contender } of rows) {
      if (contender === reference) continue
      const cells = dists.map((dist) => {
        const figures = byBuild
          .get(dist)!
          .map(
            (runs) =>
              runs.find((c) => c.case === caseName)!.rows.find((r) => r.contender === contender)!,
          )
          .map((r) => r.vsReference.median)
          .sort((a, b) => a - b)
        const mean = figures.reduce((a, b) => a + b, 0) / figures.length
        const variance =
          figures.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, figures.length - 1)
        const interval = (1.96 * Math.sqrt(variance)) / Math.sqrt(figures.length)
        return `${signedUs(mean).padStart(9)} ± ${(interval / 1000).toFixed(2)} (${signedUs(figures[0]!)} … ${signedUs(figures.at(-1)!)})`
      })
      console.log(`  ${contender.padEnd(width)}  ${cells.join('   ')}`)
    }
  }
  console.log(`\ncolumns: ${dists.join(', ')}`)
}
