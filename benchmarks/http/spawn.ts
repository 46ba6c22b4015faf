/**
 * Starts bench children (servers, the load generator) as Node processes running TypeScript through
 * tsx, pinned to one CPU with `taskset` when the machine allows it, talking over IPC. Every child is
 * tracked and killed when the run ends, normally or not.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const tsx = import.meta.resolve('tsx')
const children = new Set<ChildProcess>()

export interface Child<In, Out> {
  process: ChildProcess
  /** First message matching `type` (with the `id` of `send`'s message when it has one). */
  request(message: In & { id: number }, timeoutMs: number): Promise<Out>
  stop(): Promise<void>
}

let nextId = 1
export const newId = (): number => nextId++

export async function startChild<In extends object, Out extends { type: string }>(options: {
  file: string
  cpu: number | undefined
  env?: Record<string, string>
  /** Extra Node flags (`--cpu-prof`, `--trace-gc`…), for profiling runs. */
  nodeArgs?: readonly string[]
  /** A command the process runs under (`valgrind --tool=callgrind …`), for instruction counts. */
  wrapper?: readonly string[]
  readyTimeoutMs?: number
}): Promise<{ child: Child<In, Out>; ready: Out }> {
  const script = fileURLToPath(new URL(options.file, import.meta.url))
  const node = [
    ...(options.wrapper ?? []),
    process.execPath,
    ...(options.nodeArgs ?? []),
    '--import',
    tsx,
    script,
  ]
  const [command, ...args] =
    options.cpu === undefined ? node : ['taskset', '-c', String(options.cpu), ...node]
  const proc = spawn(command!, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...options.env },
  })
  children.add(proc)
  proc.once('exit', () => children.delete(proc))

  const child: Child<In, Out> = {
    process: proc,
    request: (message, timeoutMs) =>
      new Promise<Out>((resolve, reject) => {
        const timer = setTimeout(
          () => done(new Error(`${options.file}: no answer in ${timeoutMs} ms`)),
          timeoutMs,
        )
        const onMessage = (reply: Out & { id?: number }) => {
          if (reply.id === message.id) done(undefined, reply)
        }
        const onExit = (code: number | null) =>
          done(new Error(`${options.file} exited (${code}) mid-request`))
        const done = (error?: Error, reply?: Out) => {
          clearTimeout(timer)
          proc.off('message', onMessage)
          proc.off('exit', onExit)
          if (error) reject(error)
          else resolve(reply!)
        }
        proc.on('message', onMessage)
        proc.once('exit', onExit)
        proc.send(message)
      }),
    stop: () => stopChild(proc),
  }

  const ready = await new Promise<Out>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`${options.file} not ready in ${options.readyTimeoutMs ?? 30_000} ms`)),
      options.readyTimeoutMs ?? 30_000,
    )
    const onMessage = (message: Out) => {
      if (message.type === 'ready') finish(message)
      else if (message.type === 'fatal')
        fail(
          new Error(
            `${options.file} failed to start:\n${(message as { message?: string }).message}`,
          ),
        )
    }
    const onExit = (code: number | null) =>
      fail(new Error(`${options.file} exited (${code}) before it was ready`))
    const cleanup = () => {
      clearTimeout(timer)
      proc.off('message', onMessage)
      proc.off('exit', onExit)
    }
    const finish = (message: Out) => {
      cleanup()
      resolve(message)
    }
    const fail = (error: Error) => {
      cleanup()
      void stopChild(proc)
      reject(error)
    }
    proc.on('message', onMessage)
    proc.once('exit', onExit)
    proc.once('error', (error) => fail(error))
  })
  return { child, ready }
}

/** SIGTERM, then SIGKILL after 3 s; resolves once the process is gone. */
export function stopChild(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const killer = setTimeout(() => proc.kill('SIGKILL'), 3000)
    proc.once('exit', () => {
      clearTimeout(killer)
      resolve()
    })
    proc.kill('SIGTERM')
  })
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map(stopChild))
}

// Last resort: synchronous kill on exit (normal end, error, Ctrl-C).
process.once('exit', () => {
  for (const proc of children) proc.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const proc of children) proc.kill('SIGKILL')
    process.exit(130)
  })
}
