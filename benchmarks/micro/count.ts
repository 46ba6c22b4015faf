/**
 * Instructions per call in process, for quick A/B of builds on a busy
 * machine: one build's Koa middleware (a fresh context per request, no socket) or the floor's,
 * on one kind of token, counted by callgrind while `--calls` calls run after `--warmup` uncounted
 * ones. Run it through valgrind; it switches the counting on and off itself:
 *
 *   valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/c.%p \
 *     node --import tsx micro/count.ts ../dist --case=unknown-kid
 *
 * Cases: `miss` (`gate.check` itself, not the middleware, with its cache off on one valid token
 * repeated: every call verifies the signature, and what is beyond node:crypto's verify is
 * tollgate's own), `hit` (one cached token, memory limiter), `forged` (the pool's tokens with swapped
 * signatures), `unknown-kid` (1,000 unknown kids, refetch backed off), `miss-cached` (`gate.check`,
 * or the floor's check, with a cache of 64 over 128 tokens: every call misses, inserts and evicts;
 * the floor's instructions are what any caching verifier spends). `floor` as the build
 * runs the floor middleware (http/servers/floor.ts) with the same response the Koa floor server
 * sends. Prints `instructions/call` read from the dump.
 */
import { randomBytes } from 'node:crypto'
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import Koa from 'koa'
import { countInstructions } from '../callgrind.ts'
import { AUDIENCE, accessClaims } from '../fixtures.ts'
import { FLOOR_REFUSAL, floorVerifier } from '../http/servers/floor.ts'
import { startIssuer } from '../issuer.ts'
import { type CoreModule, type GateOptions, gateOptions } from '../tollgate.ts'

const dist = process.argv[2] ?? '../dist'
const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const kind = arg('case', 'unknown-kid')
const warmup = Number(arg('warmup', '20000'))
const calls = Number(arg('calls', '2000'))
const rounds = Number(arg('rounds', '3'))

const issuer = await startIssuer()
// Never-valid tokens are built, not signed (signing thousands under valgrind takes minutes): a
// Keycloak-shaped header and payload of this issuer and 256 random bytes as the RS256 signature,
// the shape of the HTTP suite's forgeries (known kid) and unknown kids.
const valid = issuer.mint({ tenant: 't0' }, 'RS256')
const knownKid = (
  JSON.parse(Buffer.from(valid.split('.')[0]!, 'base64url').toString()) as {
    kid: string
  }
).kid
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const unsigned = (kid: string, i: number) =>
  `${b64({ alg: 'RS256', typ: 'JWT', kid })}.${b64(accessClaims(issuer.issuer, { tenant: `t${i % 100}` }))}.${randomBytes(256).toString('base64url')}`
let tokens: string[]
// The cached miss: a rotation of 128 signed tokens over caches of 64, so every call misses,
// inserts and evicts (the floor's cache and the gate's alike).
const CACHED_MISS_POOL = 128
if (kind === 'hit' || kind === 'miss') tokens = [valid]
else if (kind === 'miss-cached')
  tokens = Array.from({ length: CACHED_MISS_POOL }, (_, i) =>
    issuer.mint({ tenant: `t${i % 100}` }, 'RS256'),
  )
else if (kind === 'forged') tokens = Array.from({ length: 2000 }, (_, i) => unsigned(knownKid, i))
else if (kind === 'unknown-kid')
  tokens = Array.from({ length: 1000 }, (_, i) => unsigned(`unknown-${i}`, i))
else throw new Error(`unknown case ${kind}`)
const authorizations = tokens.map((token) => `Bearer ${token}`)

const app = new Koa()
function contextFor(authorization: string) {
  const req = new IncomingMessage(new Socket())
  req.method = 'GET'
  req.url = '/hello'
  req.headers = { authorization }
  req.rawHeaders = ['authorization', authorization]
  return app.createContext(req, new ServerResponse(req))
}
type Ctx = ReturnType<typeof contextFor>
const next = () => Promise.resolve()

let call: (ctx: Ctx) => unknown
if (kind === 'miss-cached') {
  let check: (authorization: string | undefined) => unknown
  if (dist === 'floor') {
    check = await floorVerifier({
      authUrl: issuer.url,
      issuer: issuer.issuer,
      jwksUri: issuer.jwksUri,
      audience: AUDIENCE,
      cacheEntries: CACHED_MISS_POOL / 2,
      limiter: 'memory',
    })
  } else {
    const core = (await import(
      pathToFileURL(join(resolve(dist), 'src/index.js')).href
    )) as CoreModule
    const gate = core.createGate(
      gateOptions(core, {
        authUrl: issuer.url,
        // `--cache=off`: the same rotation with the gate's cache off, to tell the cache's part.
        cacheEntries: arg('cache', 'on') === 'off' ? false : CACHED_MISS_POOL / 2,
        limiter: 'memory',
      }),
    )
    await gate.ready()
    check = (authorization) => gate.check({ headers: { authorization: authorization as string } })
  }
  call = (ctx) => check(ctx.headers.authorization)
} else if (kind === 'miss') {
  // The floor's cache cannot be turned off (a repeated token would hit it): builds only.
  if (dist === 'floor') throw new Error('the miss case compares builds, not the floor')
  let check: (authorization: string | undefined) => unknown
  {
    const core = (await import(
      pathToFileURL(join(resolve(dist), 'src/index.js')).href
    )) as CoreModule
    const gate = core.createGate(
      gateOptions(core, { authUrl: issuer.url, cacheEntries: false, limiter: 'memory' }),
    )
    await gate.ready()
    check = (authorization) => gate.check({ headers: { authorization: authorization as string } })
  }
  call = (ctx) => check(ctx.headers.authorization)
} else if (dist === 'floor') {
  const check = await floorVerifier({
    authUrl: issuer.url,
    issuer: issuer.issuer,
    jwksUri: issuer.jwksUri,
    audience: AUDIENCE,
    cacheEntries: 1000,
    limiter: 'memory',
  })
  call = (ctx) => {
    const admitted = check(ctx.headers.authorization)
    if (admitted === undefined) {
      ctx.status = 401
      ctx.set(FLOOR_REFUSAL.headers)
      ctx.body = FLOOR_REFUSAL.body
      return
    }
    if (admitted.headers !== undefined) ctx.set(admitted.headers)
    ctx.state.user = admitted.claims
    return next()
  }
} else {
  const root = resolve(dist)
  const core = (await import(pathToFileURL(join(root, 'src/index.js')).href)) as CoreModule
  const { tollgate } = (await import(pathToFileURL(join(root, 'adapters/koa/index.js')).href)) as {
    tollgate: (options: GateOptions) => (ctx: Ctx, next: () => Promise<void>) => unknown
  }
  // A short first refetch interval: the warm-up reaches the backed-off state (one refetch per
  // cooldown) in a moment, as the HTTP runs do in their warm-up.
  const middleware = tollgate({
    ...gateOptions(core, { authUrl: issuer.url, cacheEntries: 1000, limiter: 'memory' }),
    jwks: { cooldownMs: 30_000, minCooldownMs: 1 },
  } as GateOptions)
  await (middleware as unknown as { gate: { ready(): Promise<unknown> } }).gate.ready()
  call = (ctx) => middleware(ctx, next)
}

const startedAt = Date.now()
let n = 0
const statuses: Record<number, number> = {}
async function run(count: number) {
  for (let i = 0; i < count; i++) {
    const ctx = contextFor(authorizations[n++ % authorizations.length]!)
    await call(ctx)
    statuses[ctx.status] = (statuses[ctx.status] ?? 0) + 1
  }
}

const out = process.argv.find((a) => a.startsWith('--callgrind-out='))?.slice(16)
await run(warmup)
// Unknown kids: the refetch interval doubles from 1 ms up to the 30 s cooldown, so after ~60 s
// of warm-up a counted round of a few seconds sees at most one refetch (and is then left out).
const warmUntil = startedAt + (kind === 'unknown-kid' ? 70_000 : 0)
while (Date.now() < warmUntil) await run(500)
if (process.argv.includes('--alloc')) {
  // Bytes allocated per call on the V8 heap: run with a young generation large enough that no
  // GC runs during a round (`--min-semi-space-size=256 --max-semi-space-size=256`), so the growth
  // of the spaces' used size is what the calls allocated. A round in which a GC ran is left out.
  const { getHeapSpaceStatistics } = await import('node:v8')
  const { PerformanceObserver } = await import('node:perf_hooks')
  let gcs = 0
  new PerformanceObserver((list) => {
    gcs += list.getEntries().length
  }).observe({ entryTypes: ['gc'] })
  const used = () => getHeapSpaceStatistics().reduce((sum, s) => sum + s.space_used_size, 0)
  const perRound: string[] = []
  let least = Number.POSITIVE_INFINITY
  for (let r = 0; r < rounds; r++) {
    ;(globalThis as { gc?: () => void }).gc?.()
    // The observer hears of a GC a turn or two later.
    for (let t = 0; t < 3; t++) await new Promise((done) => setTimeout(done, 5))
    const gcsBefore = gcs
    const before = used()
    await run(calls)
    const each = (used() - before) / calls
    for (let t = 0; t < 3; t++) await new Promise((done) => setTimeout(done, 5))
    const clean = gcs === gcsBefore
    perRound.push(`${Math.round(each)}${clean ? '' : ' (GC)'}`)
    if (clean) least = Math.min(least, each)
  }
  if (process.argv.includes('--alloc-sites')) {
    // Where the bytes go: V8's sampling heap profiler, keeping what minor and major GCs collected.
    const { Session } = await import('node:inspector/promises')
    const session = new Session()
    session.connect()
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 128,
      includeObjectsCollectedByMinorGC: true,
      includeObjectsCollectedByMajorGC: true,
    })
    await run(calls * 10)
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
      profile: { head: SamplingNode }
    }
    interface SamplingNode {
      callFrame: { functionName: string; url: string; lineNumber: number }
      selfSize: number
      children: SamplingNode[]
    }
    const bySite = new Map<string, number>()
    const walk = (node: SamplingNode, stack: string[]) => {
      const { functionName, url, lineNumber } = node.callFrame
      const here = `${functionName || '(anon)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`
      const path = [...stack, here].slice(-3)
      if (node.selfSize > 0) {
        const key = path.join(' < ')
        bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize)
      }
      for (const child of node.children) walk(child, path)
    }
    walk(profile.head, [])
    const total = [...bySite.values()].reduce((a, b) => a + b, 0)
    console.log(`sampled ${Math.round(total / (calls * 10))} bytes/call; sites over 1%:`)
    for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1])) {
      if (bytes < total / 100) break
      console.log(
        `  ${Math.round(bytes / (calls * 10))
          .toString()
          .padStart(6)}  ${site.split(' < ').reverse().join(' < ')}`,
      )
    }
  }
  console.log(
    `${dist} ${kind}: ${Math.round(least)} bytes/call [${perRound.join(', ')}], statuses ${JSON.stringify(statuses)}`,
  )
  await issuer.close()
  process.exit(0)
}
if (process.argv.includes('--no-count')) {
  // For `node --cpu-prof`: the same calls, no valgrind.
  await run(calls * rounds)
  await issuer.close()
  process.exit(0)
}
// Rounds, each its own dump: a JWKS refetch (one per cooldown in the unknown-kid case) lands in
// some only, and the round with the fewest instructions is the figure.
const outFile = out ?? join(process.cwd(), 'callgrind.out')
const perCall: string[] = []
const all: number[] = []
let best = Number.POSITIVE_INFINITY
for (let r = 0; r < rounds; r++) {
  const fetched = issuer.fetchCount()
  const each = (await countInstructions(outFile, () => run(calls))) / calls
  const refetches = issuer.fetchCount() - fetched
  perCall.push(
    `${Math.round(each).toLocaleString('en-US')}${refetches ? ` (${refetches} JWKS fetch)` : ''}`,
  )
  if (refetches === 0) {
    best = Math.min(best, each)
    all.push(each)
  }
}
console.log(
  `${dist} ${kind}: ${Math.round(best).toLocaleString('en-US')} instructions/call, mean ${Math.round(all.reduce((a, b) => a + b, 0) / all.length).toLocaleString('en-US')} (garbage collections land in some rounds) [${perCall.join(', ')}], statuses ${JSON.stringify(statuses)}`,
)
await issuer.close()
process.exit(0)
