/**
 * Copies `results/latest.md` into RESULTS.md between the "latest results" markers, so the committed
 * table is exactly what a run printed: `npm --prefix benchmarks run readme`.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { benchDir, resultsDir } from './config.ts'

const BEGIN = '<!-- latest-results:begin -->'
const END = '<!-- latest-results:end -->'
const readmeFile = join(benchDir, 'RESULTS.md')
const readme = readFileSync(readmeFile, 'utf8')
const start = readme.indexOf(BEGIN)
const end = readme.indexOf(END)
if (start === -1 || end < start) {
  console.error(`readme: ${readmeFile} has no ${BEGIN} … ${END} section`)
  process.exit(1)
}
const table = readFileSync(join(resultsDir, 'latest.md'), 'utf8').trim()
writeFileSync(
  readmeFile,
  `${readme.slice(0, start + BEGIN.length)}\n\n${table}\n\n${readme.slice(end)}`,
)
console.log(`readme: ${readmeFile} updated from results/latest.md`)
