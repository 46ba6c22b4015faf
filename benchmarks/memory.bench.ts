/**
 * Memory under churn: 100,000 distinct tokens from 10,000 tenants through one gate (verified-token
 * cache and per-tenant memory limiter on). Heap and RSS are read after a forced GC before, once
 * every tenant and cache slot has been seen, and at the end: a bounded gate stops growing there.
 */
import v8 from 'node:v8'
import vm from 'node:vm'
import { isMain, settings } from './config.ts'
import { bearer } from './fixtures.ts'
import { startIssuer } from './issuer.ts'
import { type MemoryRow, newResult, type SuiteResult, writeResult } from './results.ts'
import { closeGate, type Gate, gateOptions, isBuilt, loadCore } from './tollgate.ts'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

const MB = 2 ** 20

function snapshot(stage: string, tokens: number): MemoryRow {
  for (let i = 0; i < 3; i++) gc()
  const { rss, heapUsed } = process.memoryUsage()
  return { stage, tokens, rssMb: rss / MB, heapUsedMb: heapUsed / MB }
}

export async function runSuite(): Promise<SuiteResult<MemoryRow>> {
  const result = newResult<MemoryRow>('memory')
  if (!isBuilt()) {
    result.skipped.push({ what: 'memory', why: 'dist/ is not built' })
    console.log('\nmemory: not measured (dist/ is not built)')
    return result
  }
  const issuer = await startIssuer()
  let gate: Gate | undefined
  try {
    const core = await loadCore()
    const options = gateOptions(core, {
      authUrl: issuer.url,
      cacheEntries: settings.memoryCacheEntries,
      limiter: 'memory',
    })
    gate = core.createGate(options)
    await gate.ready()
    const total = settings.memoryTokens
    const tenants = settings.memoryTenants
    // Past this point every tenant has a limiter entry and the cache is full.
    const saturated = Math.min(total, Math.max(tenants, settings.memoryCacheEntries) * 2.5)
    const checkpoints = new Map([
      [saturated, 'cache and tenants saturated'],
      [Math.round((saturated + total) / 2), 'halfway'],
      [total, 'end'],
    ])
    console.log(
      `\nmemory: ${total.toLocaleString('en-US')} distinct ES256 tokens, ${tenants.toLocaleString('en-US')} tenants, cache ${settings.memoryCacheEntries.toLocaleString('en-US')} entries`,
    )
    result.rows.push(snapshot('before', 0))
    const started = performance.now()
    for (let i = 1; i <= total; i++) {
      // Minted on the fly: holding 100,000 tokens here would hide the gate's own footprint.
      await gate.check(bearer(issuer.mint({ tenant: `t${i % tenants}` }, 'ES256')))
      const stage = checkpoints.get(i)
      if (stage) result.rows.push(snapshot(stage, i))
    }
    const seconds = (performance.now() - started) / 1000
    for (const row of result.rows) {
      console.log(
        `  ${row.stage.padEnd(28)} ${row.tokens.toLocaleString('en-US').padStart(8)} tokens  heap ${row.heapUsedMb.toFixed(1).padStart(6)} MB  rss ${row.rssMb.toFixed(1).padStart(6)} MB`,
      )
    }
    result.notes.push(
      `${total} tokens in ${seconds.toFixed(1)} s (mint + check); cache ${settings.memoryCacheEntries} entries, ${tenants} tenants, memory limiter`,
    )
  } finally {
    await closeGate(gate)
    await issuer.close()
  }
  return result
}

if (isMain(import.meta.url)) {
  const result = await runSuite()
  console.log(`\nwritten ${writeResult(result)}`)
  process.exit(0)
}
