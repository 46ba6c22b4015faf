/**
 * Timing by this thread's CPU time, for the checks that compare contenders in one process
 * (`regression.ts`, `measurePaired` in `micro/measure.ts`): on a machine shared with other work,
 * time the scheduler gave to other processes is counted against neither side (wall time was
 * tried: under load, rounds took ten times as long and no round was quiet).
 */

/** One call of a contender; `i` counts its calls, to rotate over a pool of tokens. */
export type TimedCall = (i: number) => unknown

const threadCpuUsage =
  (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.bind(process) ??
  (() => process.cpuUsage())

/** This thread's CPU time in µs. */
export function cpuMicros(): number {
  const { user, system } = threadCpuUsage()
  return user + system
}

/** Nanoseconds of CPU per call of `fn` over about `roundMs` of CPU, in batches of 64. */
export async function timeRound(fn: TimedCall, roundMs: number): Promise<number> {
  let calls = 0
  const started = cpuMicros()
  const until = started + roundMs * 1000
  let now = started
  while (now < until) {
    for (let b = 0; b < 64; b++) await fn(calls++)
    now = cpuMicros()
  }
  return ((now - started) * 1000) / calls
}
