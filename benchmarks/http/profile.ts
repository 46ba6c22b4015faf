/**
 * Profiling and A/B runs of one framework's tollgate server, outside the suite:
 *
 *   tsx http/profile.ts --framework=koa --modes=pool,repeated --seconds=8 --prof
 *     one server per mode under `--cpu-prof` (and `--trace-gc` with --gc), profiles in
 *     results/profiles/, summarized by http/profile-summary.ts
 *   tsx http/profile.ts --framework=koa --modes=repeated --dists=results/dist-old,../dist --rounds=6
 *     the same server built from each dist, plus the bare framework, measured in interleaved
 *     (ABBA) rounds: server CPU µs per request and req/s per round, medians and spread;
 *     `--floor` adds the framework's floor server (servers/<framework>-floor.ts) beside them, and
 *     each build's added CPU (over the bare framework) as a multiple of the floor's, per round
 *
 * Same issuer, tokens, pinning and load generator as the suite.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { resultsDir, settings } from '../config.ts'
import { AUDIENCE, forge, mintPool, unknownKid } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type HttpMode, taskset } from '../results.ts'
import type { FromLoad, FromServer, LoadJob, ServerConfig, ToServer } from './protocol.ts'
import { REALISTIC_CLIENTS, realisticSchedule } from './realistic.ts'
import { type Child, newId, startChild, stopAll } from './spawn.ts'

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const flag = (name: string) => process.argv.includes(`--${name}`)

const framework = arg('framework', 'koa') as 'koa' | 'express' | 'fastify' | 'hono'
const modes = arg('modes', 'pool,repeated').split(',') as HttpMode[]
const seconds = Number(arg('seconds', '5'))
const rounds = Number(arg('rounds', '4'))
const warmup = Number(arg('warmup', '1'))
const dists = arg('dists', '../dist')
  .split(',')
  .map((d) => resolve(d))
const profiling = flag('prof')
const pinned = taskset()

type Server = Child<ToServer, FromServer>
type Load = Child<LoadJob, FromLoad>

const issuer = await startIssuer()
const dir = mkdtempSync(join(tmpdir(), 'tollgate-profile-'))
const files: Partial<Record<HttpMode, string>> = {}
const pool = mintPool(issuer, settings.httpPool, 'RS256', 100)
for (const mode of modes) {
  let tokens: unknown
  if (mode === 'repeated') tokens = [pool[0]]
  else if (mode === 'pool') tokens = pool
  else if (mode === 'forged') tokens = forge(pool)
  else if (mode === 'forged-repeated') tokens = forge(pool).slice(0, settings.repeatedForgeries)
  else if (mode === 'unknown-kid') tokens = unknownKid(issuer, settings.unknownKids)
  else if (mode === 'realistic') {
    const { schedule, generations, renewalRate } = realisticSchedule(settings.realisticRequests)
    const list: string[] = []
    for (let c = 0; c < REALISTIC_CLIENTS; c++)
      for (let g = 0; g < generations; g++)
        list.push(issuer.mint({ tenant: `t${c % 100}` }, 'RS256'))
    console.log(`realistic: ${list.length} tokens, ${(renewalRate * 100).toFixed(2)}% renewals`)
    tokens = { tokens: list, schedule }
  } else throw new Error(`mode ${mode} not supported here`)
  files[mode] = join(dir, `${mode}.json`)
  writeFileSync(files[mode]!, JSON.stringify(tokens))
}

const serverConfig: ServerConfig = {
  authUrl: issuer.url,
  issuer: issuer.issuer,
  jwksUri: issuer.jwksUri,
  audience: AUDIENCE,
  cacheEntries: settings.tollgateCacheEntries,
  limiter: (process.env.BENCH_LIMITER as 'memory' | 'off' | undefined) ?? 'memory',
}

async function startServer(file: string, dist: string | undefined, nodeArgs: string[] = []) {
  const env: Record<string, string> = { BENCH_SERVER: JSON.stringify(serverConfig) }
  if (dist) env.BENCH_DIST = dist
  const { child, ready } = await startChild<ToServer, FromServer>({
    file,
    cpu: pinned ? 0 : undefined,
    env,
    nodeArgs,
  })
  if (ready.type !== 'ready') throw new Error('bad ready')
  return { server: child, port: ready.port }
}

async function cpu(server: Server): Promise<number> {
  const reply = await server.request({ id: newId(), type: 'cpu' }, 10_000)
  if (reply.type !== 'cpu') throw new Error('bad cpu reply')
  return reply.user + reply.system
}

async function run(load: Load, port: number, mode: HttpMode, s: number) {
  const reply = await load.request(
    {
      id: newId(),
      type: 'run',
      url: `http://127.0.0.1:${port}/hello`,
      seconds: s,
      connections: settings.connections,
      mode,
      tokensFile: files[mode]!,
    },
    (s + 60) * 1000,
  )
  if (reply.type !== 'done') throw new Error(`load: ${JSON.stringify(reply)}`)
  return reply.outcome
}

const { child: load } = await startChild<LoadJob, FromLoad>({
  file: './load.ts',
  cpu: pinned ? 1 : undefined,
})
// Profiled: tollgate's server, or with --bare / --floor (profiling only) the bare framework's or the floor's.
const serverKind = flag('bare') ? 'bare' : profiling && flag('floor') ? 'floor' : 'tollgate'
const serverFile = `./servers/${framework}-${serverKind}.ts`
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

try {
  if (profiling) {
    const out = join(resultsDir, 'profiles')
    mkdirSync(out, { recursive: true })
    for (const mode of modes) {
      const name = `${framework}${serverKind === 'tollgate' ? '' : `-${serverKind}`}-${mode}-${dists[0]!.split('/').pop()}`
      const nodeArgs = [
        '--cpu-prof',
        // One file per thread (tsx's loader runs in a worker): the main thread's ends in `.0.N`.
        `--cpu-prof-dir=${join(out, name)}`,
        '--cpu-prof-interval=200',
      ]
      if (flag('gc')) nodeArgs.push('--trace-gc')
      const { server, port } = await startServer(serverFile, dists[0], nodeArgs)
      await run(load, port, mode, 1)
      const before = await cpu(server)
      const outcome = await run(load, port, mode, seconds)
      const spent = (await cpu(server)) - before
      console.log(
        `${name}: ${Math.round(outcome.rps)} req/s, ${(spent / outcome.requests).toFixed(1)} µs CPU/req, statuses ${JSON.stringify(outcome.statuses)}`,
      )
      await new Promise<void>((done) => {
        server.process.once('exit', () => done())
        server.process.disconnect()
      })
      console.log(`  profiles: ${join(out, name)}/ (main thread: CPU.*.0.*.cpuprofile)`)
    }
  } else {
    const contenders = [
      {
        label: `${framework} (bare)`,
        ...(await startServer(`./servers/${framework}-bare.ts`, undefined)),
      },
    ]
    if (flag('floor'))
      contenders.push({
        label: `${framework} floor`,
        ...(await startServer(`./servers/${framework}-floor.ts`, undefined)),
      })
    for (const dist of dists)
      contenders.push({ label: dist, ...(await startServer(serverFile, dist)) })
    for (const mode of modes) {
      const perRound = new Map(
        contenders.map((c) => [c.label, { cpu: [] as number[], rps: [] as number[] }]),
      )
      for (const c of contenders)
        await run(load, c.port, mode === 'repeated' ? 'repeated' : mode, warmup)
      for (let r = 0; r < rounds; r++) {
        for (const c of r % 2 === 0 ? contenders : [...contenders].reverse()) {
          const before = await cpu(c.server)
          const outcome = await run(load, c.port, mode, seconds)
          const spent = (await cpu(c.server)) - before
          perRound.get(c.label)!.cpu.push(spent / outcome.requests)
          perRound.get(c.label)!.rps.push(outcome.rps)
        }
      }
      const bare = perRound.get(contenders[0]!.label)!
      const floor = perRound.get(`${framework} floor`)
      console.log(`\n${framework} ${mode}: ${rounds} ABBA rounds of ${seconds} s`)
      for (const c of contenders) {
        const t = perRound.get(c.label)!
        const added = t.cpu.map((x, i) => x - bare.cpu[i]!)
        console.log(
          `  ${c.label.padEnd(50)} cpu µs/req median ${median(t.cpu).toFixed(1)} [${t.cpu.map((x) => x.toFixed(1)).join(' ')}]  added over bare median ${median(added).toFixed(1)} [${added.map((x) => x.toFixed(1)).join(' ')}]  req/s median ${Math.round(median(t.rps))}, × bare ${(median(t.rps) / median(bare.rps)).toFixed(3)}`,
        )
      }
      // The goal's own terms: what a build adds over the bare framework, as a multiple of what the
      // floor adds, round by round (the three servers measured moments apart, under the same
      // neighbours), then the median and quartiles of those ratios.
      if (floor !== undefined) {
        const floorAdded = floor.cpu.map((x, i) => x - bare.cpu[i]!)
        for (const dist of dists) {
          const ratios = perRound
            .get(dist)!
            .cpu.map((x, i) => (x - bare.cpu[i]!) / floorAdded[i]!)
            .sort((a, b) => a - b)
          const at = (q: number) =>
            ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))]!
          console.log(
            `  ${dist}: added CPU ÷ the floor's added CPU, per round: median ${at(0.5).toFixed(3)}× (quartiles ${at(0.25).toFixed(3)}× … ${at(0.75).toFixed(3)}×)`,
          )
        }
      }
    }
  }
} finally {
  await stopAll()
  await issuer.close()
  rmSync(dir, { recursive: true, force: true })
}
process.exit(0)
