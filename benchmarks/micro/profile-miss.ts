/**
 * The miss path under a profiler: one build's `gate.check` on a rotation of 2,048 distinct RS256
 * tokens with its cache off (every check verifies a signature), for `--seconds` (default 10).
 *
 *   tsx micro/profile-miss.ts ../dist [--seconds=10] [--limiter=off] [--out=miss.cpuprofile]
 *
 * Only the timed loop is profiled (node:inspector, started after the tokens are minted and the
 * gate warmed). The profile (Chrome DevTools, or `tsx http/profile-summary.ts <file>`) shows what
 * tollgate spends beyond node:crypto's verify, which is the same for every build.
 */
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { bearer, mintPool } from '../fixtures.ts'
import { startIssuer } from '../issuer.ts'
import { type CoreModule, gateOptions } from '../tollgate.ts'

const dist = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? '../dist'
const seconds = Number(process.argv.find((a) => a.startsWith('--seconds='))?.slice(10) ?? 10)
const out = process.argv.find((a) => a.startsWith('--out='))?.slice(6) ?? 'miss.cpuprofile'
const limiter = process.argv.includes('--limiter=off') ? 'off' : 'memory'
const core = (await import(pathToFileURL(join(resolve(dist), 'src/index.js')).href)) as CoreModule
const issuer = await startIssuer()
const requests = mintPool(issuer, 2048, 'RS256', 100).map(bearer)
const gate = core.createGate(
  gateOptions(core, { authUrl: issuer.url, cacheEntries: false, limiter }),
)
await gate.ready()
for (let i = 0; i < requests.length; i++) await gate.check(requests[i]!)
const session = new Session()
session.connect()
await session.post('Profiler.enable')
await session.post('Profiler.start')
const until = Date.now() + seconds * 1000
let checks = 0
while (Date.now() < until) {
  for (let i = 0; i < 1000; i++) await gate.check(requests[checks++ % requests.length]!)
}
const { profile } = await session.post('Profiler.stop')
writeFileSync(out, JSON.stringify(profile))
console.log(`${checks} checks in ${seconds} s: ${((seconds * 1e6) / checks).toFixed(2)} µs each`)
await gate.close?.()
await issuer.close()
process.exit(0)
