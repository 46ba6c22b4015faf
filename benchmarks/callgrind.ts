/**
 * Counting instructions from inside a process that valgrind's callgrind runs with
 * `--instr-atstart=no`: the process switches the counting on around the calls it wants counted,
 * dumps, and reads the total back. Used by `micro/count.ts` (A/B of builds on a busy machine) and
 * by the speed check (`regression.ts`: the cache hit in instructions, which a host's load and
 * model do not move the way they move its time).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const control = (...command: string[]) =>
  execFileSync('callgrind_control', [...command, String(process.pid)], { stdio: 'ignore' })

/**
 * The instructions `work()` ran, counted by the callgrind running this process, whose dumps go
 * to `outFile` (its `--callgrind-out-file`, `%p` for the process id): the counters are zeroed,
 * switched on for `work()`, dumped, and the newest dump of this process is read.
 */
export async function countInstructions(
  outFile: string,
  work: () => Promise<void>,
): Promise<number> {
  control('-z')
  control('-i', 'on')
  await work()
  control('-d')
  control('-i', 'off')
  const dir = dirname(outFile)
  // callgrind names each dump `<out-file>.<n>` (the process id in the out-file's name), or with
  // `--separate-threads=yes` one per thread, `<out-file>.<n>-<thread>`: the main thread's is `-01`.
  const dumpNumber = (file: string) => Number(/\.(\d+)(-01)?$/.exec(file)?.[1])
  const mine = readdirSync(dir)
    .filter((f) => f.includes(`.${process.pid}.`) && /\.\d+(-01)?$/.test(f))
    .sort((a, b) => dumpNumber(a) - dumpNumber(b))
  const text = readFileSync(join(dir, mine.at(-1) as string), 'utf8')
  return Number(/^totals:\s*(\d+)/m.exec(text)?.[1])
}

/** Whether valgrind can be run here. */
export function haveValgrind(): boolean {
  return spawnSync('valgrind', ['--version'], { stdio: 'ignore' }).status === 0
}

/**
 * Runs `node args…` (this process's Node) under callgrind with the counting off until the child
 * switches it on ({@link countInstructions}, given `--callgrind-out=<file>` among its arguments),
 * and resolves with its standard output. Only the main thread's instructions are read: V8's
 * compiler and collector threads would add what they happen to do meanwhile. Asynchronous, so
 * that a server of this process (the issuer whose keys the child fetches) keeps answering. Dumps
 * go to a temporary directory, removed afterwards.
 */
export async function runUnderCallgrind(args: readonly string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'))
  const outFile = join(dir, 'c')
  try {
    const child = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        '--instr-atstart=no',
        '--separate-threads=yes',
        `--callgrind-out-file=${outFile}.%p`,
        process.execPath,
        ...args,
        `--callgrind-out=${outFile}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text
    })
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text
    })
    const [code, signal] = (await once(child, 'close')) as [number | null, string | null]
    if (code !== 0) {
      const own = stderr
        .split('\n')
        .filter((line) => !line.startsWith('=='))
        .join('\n')
      throw new Error(
        `valgrind node ${args.join(' ')} ended with ${code ?? signal}:\n${stdout}${own}`,
      )
    }
    return stdout
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
