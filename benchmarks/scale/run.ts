/**
 * Issue 30's scale benchmark (`npm run bench:scale`): tollgate's costs at production sizes, from
 * 1k to 1M (revocation entries, tenants, issuers). Runs every scale suite present beside this file
 * (`revocation.ts`, `limits.ts`, `issuers.ts`, `replay.ts`), each exporting `run(): Promise<string>` that
 * returns a Markdown table, and prints every table. Not a timed unit test: the numbers live here
 * and in benchmarks/README.md ("Scale").
 */
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const SUITES = ['revocation.ts', 'limits.ts', 'issuers.ts', 'replay.ts']
const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length)

const tables: string[] = []
for (const file of SUITES) {
  const path = join(here, file)
  if (!existsSync(path)) continue
  if (only !== undefined && !only.split(',').includes(file.replace(/\.ts$/, ''))) continue
  const suite = (await import(pathToFileURL(path).href)) as { run(): Promise<string> }
  console.error(`scale: ${file}…`)
  tables.push(await suite.run())
}
console.log(`\n## Scale (${new Date().toISOString()}, Node ${process.version})\n`)
console.log(tables.join('\n\n'))
process.exit(0)
