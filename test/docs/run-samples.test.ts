/**
 * The samples runner: every ```ts block of README.md and docs/ that is not marked `fragment` runs,
 * as a user would run it (tsx, the package's public names), against the testing kit on loopback
 * (test/docs/world.ts), and answers what its guide promises (test/docs/scenarios/). A block
 * without a scenario fails here with its file and line. The count of samples run is written to
 * `test-artifacts/samples.json`, which CI's closing line reads (scripts/test-summary.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { allSamples, extractSamples, startSample } from '../helpers/doc-samples.js'
import { pairScenarios, sampleEnvironment, scenarioContext } from './scenario.js'
import { SCENARIOS } from './scenarios/index.js'
import { type SampleWorld, SUBSTITUTIONS, startWorld } from './world.js'

const samples = allSamples()
const runnable = samples.filter(({ fragment }) => !fragment)
const { pairs, missing, unused } = pairScenarios(runnable, SCENARIOS)
/** `file:line` of each sample whose scenario passed. */
const ran: string[] = []
const failed: string[] = []

/** Where CI's closing line reads the count (scripts/test-summary.ts; test-artifacts/ is git-ignored). */
const SAMPLES_RESULTS = 'test-artifacts/samples.json'

describe('every sample of README.md and docs/', () => {
  it('has a scenario that runs it, and every scenario has its sample', () => {
    expect(missing).toEqual([])
    expect(unused).toEqual([])
  })

  it('a block added to a guide without a scenario is reported by its file and line', () => {
    const heading = 'Quick start: any other OpenID provider'
    const added = extractSamples(
      'README.md',
      ['# tollgate', '', `## ${heading}`, '', '```ts', 'a', '```', '', '```ts', 'b', '```'].join(
        '\n',
      ),
    )
    const { missing: reported } = pairScenarios(added, SCENARIOS)
    expect(reported).toEqual([
      `README.md:10 (${heading}): no scenario in test/docs/scenarios/ runs this sample`,
    ])
    expect(
      pairScenarios(extractSamples('docs/new.md', '## New\n\n  ```ts\n  x\n  ```\n'), SCENARIOS)
        .missing,
    ).toEqual(['docs/new.md:4 (New): no scenario in test/docs/scenarios/ runs this sample'])
  })
})

describe('docs/testing.md "How the samples run"', () => {
  const guide = readFileSync('docs/testing.md', 'utf8')
  const section = guide.slice(guide.indexOf('### How the samples run'))

  it('prints the substitution table the runner applies, row for row', () => {
    const printed = section.split('\n').filter((line) => /^\| `https:\/\//.test(line))
    expect(printed).toEqual(
      SUBSTITUTIONS.map((row) => {
        const to =
          row.to === 'office'
            ? "the runner's office API stub"
            : `the test issuer, under \`${row.prefix}\``
        return `| \`${row.origin}\` | ${to} | ${row.answers} |`
      }),
    )
  })

  it('sends a listed origin to loopback, path and query kept, and refuses any other address', async () => {
    const seen: string[] = []
    const server = createServer((request, response) => {
      seen.push(request.url ?? '')
      response.end('ok')
    })
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prefix`
    const sample = extractSamples(
      'docs/example.md',
      [
        '```ts',
        "console.log(await (await fetch('https://provider.example/keys?x=1')).text())",
        "await fetch('https://elsewhere.example/')",
        '```',
      ].join('\n'),
    )[0]!
    const program = startSample(sample, {
      imports: [fileURLToPath(new URL('./fetch-hosts.ts', import.meta.url))],
      env: { TOLLGATE_SAMPLE_HOSTS: JSON.stringify({ 'https://provider.example': base }) },
    })
    try {
      expect(await program.exited).toBe(1)
      expect(seen).toEqual(['/prefix/keys?x=1'])
      expect(program.output()).toMatch(/^ok\n/)
      expect(program.output()).toContain(
        'samples runner: https://elsewhere.example/ is not in the substitution table',
      )
    } finally {
      await program.stop()
      server.close()
    }
  }, 60_000)

  it('names every variable a sample program is given', () => {
    const world = { kit: { url: 'x' }, hosts: {} } as unknown as SampleWorld
    const names = [...Object.keys(sampleEnvironment(world)), 'PORT', 'REDIS_URL']
    for (const name of names.filter((name) => name !== 'TOLLGATE_SAMPLE_HOSTS')) {
      expect(section).toContain(`\`${name}\``)
    }
    expect(section).toContain('test/docs/fetch-hosts.ts')
  })
})

let world: SampleWorld

beforeAll(async () => {
  world = await startWorld()
}, 60_000)

afterAll(async () => {
  await world?.close()
  mkdirSync(dirname(SAMPLES_RESULTS), { recursive: true })
  writeFileSync(
    SAMPLES_RESULTS,
    `${JSON.stringify(
      {
        found: samples.length,
        fragments: samples.length - runnable.length,
        runnable: runnable.length,
        run: ran.length,
        failed,
      },
      null,
      2,
    )}\n`,
  )
}, 60_000)

describe.concurrent('the samples, run against the testing kit', () => {
  for (const { sample, scenario } of pairs) {
    const where = `${sample.file}:${sample.line}`
    it(`${where} (${sample.heading}): ${scenario.promises}`, async () => {
      const context = scenarioContext(sample, world)
      try {
        await scenario.run(context)
        ran.push(where)
      } catch (error) {
        failed.push(where)
        throw error
      } finally {
        await context.cleanup()
      }
    }, 180_000)
  }
})
