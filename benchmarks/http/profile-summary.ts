/**
 * Summarizes a `.cpuprofile`: self time per function (name, file:line) and per bucket (tollgate,
 * framework, node internals, GC, idle), as shares of the busy (non-idle) samples.
 *
 *   tsx http/profile-summary.ts results/profiles/koa-pool.cpuprofile [--top=30]
 */
import { readFileSync } from 'node:fs'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
}

const file = process.argv[2]
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [--top=N]')
const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 30)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map<number, number>()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
}

function bucket(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC'
  if (name === '(idle)') return 'idle'
  if (name === '(program)') return '(program: native, outside JS)'
  if (url.includes('/dist/') || url.includes('dist-')) return 'tollgate'
  if (url.includes('lru-cache')) return 'lru-cache'
  if (url.includes('rate-limiter-flexible')) return 'rate-limiter-flexible'
  if (
    /node_modules\/(koa|express|router|on-finished|statuses|fresh|type-is|content-type|vary|accepts|negotiator|mime|parseurl|finalhandler|send|encodeurl|escape-html|delegates|cookies|only|http-errors|depd|debug|ms|body-parser|qs|setprototypeof|etag|range-parser|content-disposition|koa-compose)/.test(
      url,
    )
  )
    return 'framework'
  if (url.startsWith('node:') || url === '') return 'node internals / native'
  if (url.includes('/benchmarks/')) return 'bench server'
  return 'other'
}

const fns = new Map<string, number>()
const buckets = new Map<string, number>()
let total = 0
let idle = 0
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame
  const b = bucket(url, functionName)
  if (b === 'idle') {
    idle += us
    continue
  }
  total += us
  buckets.set(b, (buckets.get(b) ?? 0) + us)
  const short = url.replace(/^.*\/(node_modules|dist[^/]*|benchmarks)\//, '$1/')
  const key = `${functionName || '(anonymous)'}  ${short}:${lineNumber + 1}`
  fns.set(key, (fns.get(key) ?? 0) + us)
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1)}%`.padStart(6)
console.log(`${file}: busy ${(total / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`)
console.log('\nby bucket (share of busy time)')
for (const [b, us] of [...buckets].sort((a, z) => z[1] - a[1])) console.log(`  ${pct(us)}  ${b}`)
console.log(`\ntop ${top} functions by self time`)
for (const [k, us] of [...fns].sort((a, z) => z[1] - a[1]).slice(0, top))
  console.log(`  ${pct(us)}  ${k}`)
