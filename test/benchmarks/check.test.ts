import { readFileSync } from 'node:fs'

import { describe, expect, it } from 'vitest'

import {
  type Baseline,
  baselineFrom,
  checkRun,
  isEnforced,
  type LatestRun,
  parseTolerance,
  renderCheck,
} from '../../benchmarks/check-logic.js'

const POOL = 'http.express-tollgate.pool.vs-floor-cpu'
const RS256 = 'micro.verify-rs256-cache-miss.tollgate-gate-check-cache-off.vs-crypto'

const baseline: Baseline = {
  mode: 'quick',
  tolerance: 0.15,
  ratios: { [POOL]: 0.9, [RS256]: 0.8 },
}

function run(ratios: Record<string, number>, mode = 'quick'): LatestRun {
  return {
    startedAt: '2026-11-25T00:00:00.000Z',
    mode,
    machine: { cpu: 'test cpu', cores: 2, node: 'v20' },
    ratios,
  }
}

const STRICT = { tolerance: 0.15, strict: true }

describe('bench:check --strict', () => {
  it('passes a run within the noise band, at its edge included', () => {
    // 0.9 × 0.85 = 0.765 and 0.8 × 0.85 = 0.68: the lowest ratios that pass.
    for (const ratios of [
      { [POOL]: 0.9, [RS256]: 0.8 },
      { [POOL]: 0.766, [RS256]: 0.681 },
      { [POOL]: 1.2, [RS256]: 0.95 },
    ]) {
      const report = checkRun(baseline, run(ratios), STRICT)
      expect(report.ok).toBe(true)
      expect(report.failures).toEqual([])
      expect(report.verdicts.map((v) => v.status)).toEqual(['ok', 'ok'])
    }
  })

  it('fails a ratio that regressed beyond the band', () => {
    const report = checkRun(baseline, run({ [POOL]: 0.76, [RS256]: 0.8 }), STRICT)
    expect(report.ok).toBe(false)
    expect(report.verdicts.find((v) => v.key === POOL)).toMatchObject({
      status: 'regression',
      actual: 0.76,
    })
    expect(report.failures).toEqual(['1 ratio(s) more than 15% below the baseline (regression)'])
  })

  it('fails a ratio missing from the run', () => {
    const report = checkRun(baseline, run({ [POOL]: 0.9 }), STRICT)
    expect(report.ok).toBe(false)
    expect(report.verdicts.find((v) => v.key === RS256)).toMatchObject({
      status: 'missing',
      actual: undefined,
    })
    expect(report.failures).toEqual(['1 baseline ratio(s) missing from this run'])
  })

  it('fails a run of another mode than the baseline, however good its ratios', () => {
    const report = checkRun(baseline, run({ [POOL]: 1, [RS256]: 1 }, 'full'), STRICT)
    expect(report.ok).toBe(false)
    expect(report.failures).toEqual(['this is a full run, the baseline is from a quick run'])
  })

  it('fails on a baseline that enforces nothing', () => {
    const report = checkRun({ ...baseline, ratios: {} }, run({ [POOL]: 1 }), STRICT)
    expect(report.ok).toBe(false)
    expect(report.failures).toEqual(['the baseline has no ratios: nothing is enforced'])
  })

  it('judges with the band it is given', () => {
    const ratios = { [POOL]: 0.8, [RS256]: 0.8 }
    expect(checkRun(baseline, run(ratios), { tolerance: 0.15, strict: true }).ok).toBe(true)
    expect(checkRun(baseline, run(ratios), { tolerance: 0.1, strict: true }).ok).toBe(false)
  })

  it('prints every ratio and the verdict last', () => {
    const lines = renderCheck(checkRun(baseline, run({ [POOL]: 0.5 }), STRICT))
    expect(lines[0]).toMatch(
      new RegExp(`^  ${POOL} +baseline 0\\.900  now 0\\.500  \\(-44\\.4%\\)  REGRESSION`),
    )
    expect(lines[1]).toMatch(new RegExp(`^  ${RS256} +baseline 0\\.800  MISSING from this run$`))
    expect(lines.at(-1)).toBe(
      'bench:check: FAILED: 1 ratio(s) more than 15% below the baseline (regression); 1 baseline ratio(s) missing from this run',
    )
  })
})

describe('bench:check without --strict (a partial local run)', () => {
  it('notes a missing ratio or another mode without failing, and still fails a regression', () => {
    const lenient = { tolerance: 0.15, strict: false }
    const partial = checkRun(baseline, run({ [RS256]: 0.8 }, 'full'), lenient)
    expect(partial.ok).toBe(true)
    expect(partial.notes).toHaveLength(2)
    expect(checkRun(baseline, run({ [POOL]: 0.1 }), lenient).ok).toBe(false)
  })
})

describe('the enforced ratios', () => {
  it('are tollgate against the floor, node:crypto and its memory limiter, not against bare', () => {
    expect(
      [
        POOL,
        'http.koa-tollgate.realistic.vs-floor-cpu',
        RS256,
        'http.tollgate-redis-vs-memory.pool',
        'http.express-tollgate.pool.vs-bare',
        'http.express-floor-inline-node-crypto-map.pool.vs-bare',
        'micro.verify-rs256-cache-miss.fast-jwt-no-cache.vs-crypto',
      ].filter(isEnforced),
    ).toEqual([
      POOL,
      'http.koa-tollgate.realistic.vs-floor-cpu',
      RS256,
      'http.tollgate-redis-vs-memory.pool',
    ])
  })

  it('make the baseline written by --update, with the run mode and the band', () => {
    const written = baselineFrom(
      run({ [RS256]: 0.81234, [POOL]: 0.9, 'http.express-tollgate.pool.vs-bare': 0.5 }),
      0.15,
      'note',
    )
    expect(written).toEqual({
      note: 'note',
      mode: 'quick',
      tolerance: 0.15,
      measuredOn: 'quick run 2026-11-25T00:00:00.000Z, test cpu, 2 cores, Node v20',
      ratios: { [POOL]: 0.9, [RS256]: 0.812 },
    })
    // A run judged against the baseline made from it passes.
    expect(checkRun(written, run(written.ratios), STRICT).ok).toBe(true)
  })

  it.each(['', 'abc', '-0.1', '1', '1.5'])('refuses the tolerance %j', (raw) => {
    expect(() => parseTolerance(raw, 0.15)).toThrow(RangeError)
  })

  it('takes a tolerance in [0, 1), or the fallback', () => {
    expect(parseTolerance('0.2', 0.15)).toBe(0.2)
    expect(parseTolerance(undefined, 0.15)).toBe(0.15)
  })
})

describe('the committed baseline', () => {
  const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
  const committed = JSON.parse(read('benchmarks/baseline.json')) as Baseline

  it('comes from the mode CI runs, which checks it with --strict', () => {
    const workflow = read('.github/workflows/bench.yml')
    const runs = [...workflow.matchAll(/^\s*- run: npm run (bench(?::quick)?)\s*$/gm)].map(
      (match) => match[1],
    )
    expect(runs).toHaveLength(1)
    expect(committed.mode).toBe(runs[0] === 'bench:quick' ? 'quick' : 'full')
    expect(workflow).toMatch(/^\s*- run: npm run bench:check\s*$/m)
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>
    expect(scripts['bench:check']).toMatch(/ --strict$/)
  })

  it('states its noise band and holds only enforced ratios', () => {
    expect(committed.tolerance).toBeGreaterThan(0)
    expect(committed.tolerance).toBeLessThan(1)
    expect(Object.keys(committed.ratios).length).toBeGreaterThan(0)
    expect(Object.keys(committed.ratios).filter((key) => !isEnforced(key))).toEqual([])
  })

  it('passes the committed results table of benchmarks/RESULTS.md, the run it was taken from', () => {
    const readme = read('benchmarks/RESULTS.md')
    const section = readme.slice(
      readme.indexOf('<!-- latest-results:begin -->'),
      readme.indexOf('<!-- latest-results:end -->'),
    )
    const cells = (line: string) => line.split('|').map((cell) => cell.trim())
    const number = (text: string | undefined) => Number(String(text).replace(/[×,]/g, ''))
    const ratios: Record<string, number> = {}
    // HTTP tables: | mode | contender | req/s | × bare | × bare (cpu) | p50 | p99 | server CPU µs/req | …
    const cpu = new Map<string, number>()
    for (const line of section
      .split('\n')
      .filter((l) => /^\| [a-z-]+ +\| (express|koa|fastify|hono) /.test(l))) {
      const [, mode, contender, , , , , , cpuUs] = cells(line)
      cpu.set(`${contender} ${mode}`, number(cpuUs))
    }
    for (const [key, cpuUs] of cpu) {
      const match = /^(express|koa|fastify|hono) \+ tollgate ([a-z-]+)$/.exec(key)
      const floor = match && cpu.get(`${match[1]} + floor (inline node:crypto + Map) ${match[2]}`)
      if (match && floor) {
        ratios[`http.${match[1]}-tollgate.${match[2]}.vs-floor-cpu`] = floor / cpuUs
      }
    }
    // Targets: | Cache-miss RS256 vs node:crypto | ≥ 0.85× | 0.799× (44.7 µs) | pass |
    for (const line of section.split('\n')) {
      const [, label, , measured] = cells(line)
      const verify = /^Cache-miss (RS256|ES256|EdDSA) vs node:crypto$/.exec(label ?? '')
      if (verify?.[1]) {
        ratios[
          `micro.verify-${verify[1].toLowerCase()}-cache-miss.tollgate-gate-check-cache-off.vs-crypto`
        ] = number(measured?.split(' ')[0])
      }
      const limiter = /^Redis limiter vs memory limiter \(Express, (repeated|pool)\)$/.exec(
        label ?? '',
      )
      if (limiter) ratios[`http.tollgate-redis-vs-memory.${limiter[1]}`] = number(measured)
    }
    const mode = /^(quick|full) run, /m.exec(section)?.[1] ?? 'unknown'
    const table = { ...run(ratios, mode), startedAt: 'the committed table' }
    const report = checkRun(committed, table, {
      tolerance: committed.tolerance,
      strict: true,
    })
    expect(report.verdicts.filter((verdict) => verdict.status !== 'ok')).toEqual([])
    expect(report.failures).toEqual([])
  })
})
