/**
 * In-process A/B of two builds (issue 14): the same cases with each build's `gate.check`, rounds
 * interleaved (measure.ts rotates the order), best round kept.
 *
 *   tsx micro/ab.ts ../node_modules/.dist-old ../dist [--cases=hit,miss,realistic]
 *
 * hit: 1,000 cached RS256 tokens over 100 tenants, per-tenant memory limiter (the repeated and
 * realistic HTTP modes' common case). miss: the same gate with its cache off over 2,048 tokens,
 * next to node:crypto's raw check of the same tokens (crypto-limit.ts). Both cases also run the HTTP
 * suite's floor middleware (http/servers/floor.ts) in process: what tollgate costs beyond it is
 * tollgate's own, with no kernel or framework in the figure. adapters: each build's Koa and Express
 * middleware on a cached token, called in process on one reused request and response (no socket),
 * down to an empty `next`: what the adapter adds to `gate.check`, which HTTP rounds cannot resolve.
 * forged: each build's Koa middleware refusing forged tokens, next to the floor refusing them.
 */
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { AUDIENCE, bearer, forge, mintPool } from '../fixtures.ts'
import { floorVerifier } from '../http/servers/floor.ts'
import { startIssuer } from '../issuer.ts'
import { type CoreModule, type Gate, gateOptions } from '../tollgate.ts'
import { rawVerifier } from './crypto-limit.ts'
import { type Contender, measureCase } from './measure.ts'

const dists = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const cases = (process.argv.find((a) => a.startsWith('--cases='))?.slice(8) ?? 'hit,miss').split(
  ',',
)
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

async function floorFor(cacheEntries: number, pool: number) {
  const check = await floorVerifier({
    authUrl: issuer.url,
    issuer: issuer.issuer,
    jwksUri: issuer.jwksUri,
    audience: AUDIENCE,
    cacheEntries,
    limiter: 'off',
  })
  const headers = requests.map((request) => request.headers.authorization as string)
  for (let i = 0; i < pool; i++) check(headers[i])
  let i = 0
  return () => check(headers[i++ % pool])
}

if (cases.includes('hit')) {
  const contenders: Contender[] = [['floor hit', await floorFor(10_000, 1000)]]
  for (const [dist, core] of cores)
    contenders.push([`${dist} hit`, await gateFor(core, 10_000, 1000)])
  await measureCase('gate.check, cache hit, memory limiter', contenders)
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
  await measureCase('gate.check, cache miss, memory limiter', contenders, 'node:crypto (limit)')
}
if (cases.includes('adapters')) {
  const { IncomingMessage, ServerResponse } = await import('node:http')
  const { Socket } = await import('node:net')
  const Koa = (await import('koa')).default
  const koaApp = new Koa()
  const koa: Contender[] = []
  const express: Contender[] = []
  const options = gateOptions(cores[0]![1], {
    authUrl: issuer.url,
    cacheEntries: 10_000,
    limiter: 'memory',
  })
  for (const dist of dists) {
    const root = pathToFileURL(join(resolve(dist), 'adapters')).href
    const koaModule = (await import(`${root}/koa/index.js`)) as {
      tollgate: (o: unknown) => unknown
    }
    const expressModule = (await import(`${root}/express/index.js`)) as {
      tollgate: (o: unknown) => unknown
    }
    const req = new IncomingMessage(new Socket())
    req.method = 'GET'
    req.url = '/hello'
    req.headers = { ...requests[0]!.headers }
    const res = new ServerResponse(req)
    const ctx = koaApp.createContext(req, res)
    const koaMiddleware = koaModule.tollgate(options) as (
      c: unknown,
      n: () => Promise<void>,
    ) => unknown
    const done = () => Promise.resolve()
    koa.push([`${dist} koa`, () => koaMiddleware(ctx, done)])
    const expressMiddleware = expressModule.tollgate(options) as (
      q: unknown,
      r: unknown,
      n: () => void,
    ) => void
    const expressReq = Object.assign(Object.create(req), { originalUrl: '/hello' })
    express.push([
      `${dist} express`,
      () => new Promise<void>((next) => expressMiddleware(expressReq, res, next)),
    ])
  }
  await measureCase('Koa middleware, cached token, memory limiter', koa)
  await measureCase('Express middleware, cached token, memory limiter', express)
}
if (cases.includes('forged')) {
  // A refusal through the Koa adapter (response headers and body included), a fresh context per
  // request, next to the floor middleware refusing the same tokens.
  const { IncomingMessage, ServerResponse } = await import('node:http')
  const { Socket } = await import('node:net')
  const Koa = (await import('koa')).default
  const koaApp = new Koa()
  const forged = forge(tokens).map((token) => `Bearer ${token}`)
  const contextFor = (authorization: string) => {
    const req = new IncomingMessage(new Socket())
    req.method = 'GET'
    req.url = '/hello'
    req.headers = { authorization }
    return koaApp.createContext(req, new ServerResponse(req))
  }
  const check = await floorVerifier({
    authUrl: issuer.url,
    issuer: issuer.issuer,
    jwksUri: issuer.jwksUri,
    audience: AUDIENCE,
    cacheEntries: 1000,
    limiter: 'off',
  })
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
    const root = pathToFileURL(join(resolve(dist), 'adapters')).href
    const { tollgate } = (await import(`${root}/koa/index.js`)) as {
      tollgate: (o: unknown) => (c: unknown, n: () => Promise<void>) => unknown
    }
    const middleware = tollgate(options)
    const done = () => Promise.resolve()
    let i = 0
    contenders.push([
      `${dist} koa`,
      () => middleware(contextFor(forged[i++ % forged.length]!), done),
    ])
  }
  await measureCase('Koa middleware, forged token (known kid, bad signature)', contenders)
}
for (const gate of gates) await gate.close?.()
await issuer.close()
process.exit(0)
