/**
 * A scenario is what the runner does with one sample of the docs: start it (a program, or a host
 * program that imports it), send it the requests its guide describes and check the answers the
 * guide promises. Scenarios are keyed by the sample's Markdown file and the heading it stands
 * under; a heading with several samples has a list, in the order of the page. A sample without a
 * scenario, or a scenario without its sample, fails the runner with the file and line.
 *
 * @module
 */
import { fileURLToPath } from 'node:url'

import { expect } from 'vitest'

import {
  allSamples,
  companionsOf,
  type DocSample,
  type RunningSample,
  startSample,
} from '../helpers/doc-samples.js'
import { freePort } from '../helpers/redis.js'
import { type SampleWorld, SECRETS } from './world.js'

/** What a sample's guide promises, and how to check it. */
export interface Scenario {
  /** The requests and answers, as the test's name says them. */
  readonly promises: string
  run(context: ScenarioContext): Promise<void>
}

/** `file` → heading → the scenario of the sample under it (a list when there are several). */
export type ScenarioTable = Readonly<
  Record<string, Readonly<Record<string, Scenario | readonly Scenario[]>>>
>

export interface StartOptions {
  /** Added to (and over) the world's environment. */
  readonly env?: Readonly<Record<string, string>>
  /** A host program of test/docs/hosts/ (by file name) that imports the sample. */
  readonly host?: string
  /** Files written beside the sample (samples it imports, by the name it imports them under). */
  readonly files?: Readonly<Record<string, string>>
  /**
   * `'http'` (default): resolve once `PORT` answers HTTP. `'none'`: resolve at once (a program
   * that ends, or that a scenario watches otherwise).
   */
  readonly until?: 'http' | 'none'
  /** The port, for a sample that names its own (default: a free one, in `PORT`). */
  readonly port?: number
  /** `'bun'` for a sample written for Bun (`Bun.serve`); default Node (tsx). */
  readonly runtime?: 'node' | 'bun'
}

/** A sample running as a program. */
export interface SampleProgram {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  readonly running: RunningSample
  /** `fetch(url + path, init)`. */
  fetch(path: string, init?: RequestInit): Promise<Response>
  output(): string
  /** Waits for the program to end and expects exit code 0; resolves with its output. */
  finished(): Promise<string>
  stop(graceMs?: number): Promise<void>
}

export interface ScenarioContext {
  readonly sample: DocSample
  readonly world: SampleWorld
  /** The environment every sample gets (docs/testing.md "How the samples run"), `PORT` aside. */
  readonly env: Readonly<Record<string, string>>
  /** Starts the sample; it is stopped when the scenario ends. */
  start(options?: StartOptions): Promise<SampleProgram>
}

/** A sample and the scenario that runs it. */
export interface Pairing {
  readonly sample: DocSample
  readonly scenario: Scenario
}

/**
 * Pairs every sample with its scenario. `missing` lists the samples without one
 * (`docs/x.md:12 (Heading)`), `unused` the scenarios whose sample is gone.
 */
export function pairScenarios(
  samples: readonly DocSample[],
  table: ScenarioTable,
): { pairs: Pairing[]; missing: string[]; unused: string[] } {
  const pairs: Pairing[] = []
  const missing: string[] = []
  const seen = new Map<string, number>()
  for (const sample of samples) {
    const key = `${sample.file}\u0000${sample.heading}`
    const index = seen.get(key) ?? 0
    seen.set(key, index + 1)
    const entry = table[sample.file]?.[sample.heading]
    const list: readonly Scenario[] =
      entry === undefined ? [] : Array.isArray(entry) ? entry : [entry as Scenario]
    const scenario = list[index]
    if (scenario === undefined) {
      missing.push(
        `${sample.file}:${sample.line} (${sample.heading}): no scenario in test/docs/scenarios/ runs this sample`,
      )
    } else {
      pairs.push({ sample, scenario })
    }
  }
  const unused: string[] = []
  for (const [file, headings] of Object.entries(table)) {
    for (const [heading, entry] of Object.entries(headings)) {
      const count = Array.isArray(entry) ? entry.length : 1
      const found = seen.get(`${file}\u0000${heading}`) ?? 0
      for (let index = found; index < count; index++) {
        unused.push(
          `${file} "${heading}" #${index + 1}: a scenario whose sample is not in the guide`,
        )
      }
    }
  }
  return { pairs, missing, unused }
}

const FETCH_HOSTS = fileURLToPath(new URL('./fetch-hosts.ts', import.meta.url))
const HOSTS = fileURLToPath(new URL('./hosts/', import.meta.url))
/** How long a sample may take to answer its first request (a start under load, not a measure). */
const START_DEADLINE_MS = 60_000

/** The environment of every sample program, `PORT` and `REDIS_URL` aside. */
export function sampleEnvironment(world: SampleWorld): Record<string, string> {
  return {
    AUTH_URL: world.kit.url,
    KEYCLOAK_URL: world.kit.url,
    TOLLGATE_SAMPLE_HOSTS: JSON.stringify(world.hosts),
    ...SECRETS,
  }
}

/** A context for one scenario; `cleanup()` stops what it started. */
export function scenarioContext(
  sample: DocSample,
  world: SampleWorld,
): ScenarioContext & { cleanup(): Promise<void> } {
  const started: SampleProgram[] = []
  const env = sampleEnvironment(world)
  return {
    sample,
    world,
    env,
    async start(options = {}) {
      const port = options.port ?? (await freePort())
      const running = startSample(sample, {
        env: { ...env, PORT: String(port), REDIS_URL: world.redisUrl(), ...options.env },
        imports: [FETCH_HOSTS],
        ...(options.host === undefined ? {} : { host: `${HOSTS}${options.host}` }),
        // The samples it imports (`./app.module.js`: the module above it), and any others.
        files: { ...companionsOf(sample, allSamples()), ...options.files },
        ...(options.runtime === undefined ? {} : { runtime: options.runtime }),
      })
      const url = `http://127.0.0.1:${port}`
      const program: SampleProgram = {
        url,
        port,
        running,
        fetch: (path, init) => fetch(`${url}${path}`, init),
        output: running.output,
        async finished() {
          const code = await running.exited
          expect(code, running.output()).toBe(0)
          return running.output()
        },
        stop: (graceMs) => running.stop(graceMs),
      }
      started.push(program)
      if ((options.until ?? 'http') === 'http') await answering(program)
      return program
    },
    async cleanup() {
      await Promise.all(started.map((program) => program.stop()))
    },
  }
}

/** Resolves once the program answers HTTP on its port; throws with its output when it ended first. */
async function answering(program: SampleProgram): Promise<void> {
  const deadline = Date.now() + START_DEADLINE_MS
  for (;;) {
    const { child } = program.running
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `the sample ended (${child.exitCode ?? child.signalCode}) before answering on ${program.url}:\n${program.output()}`,
      )
    }
    const answered = await fetch(program.url, { signal: AbortSignal.timeout(2000) }).then(
      async (response) => {
        await response.arrayBuffer()
        return true
      },
      () => false,
    )
    if (answered) return
    if (Date.now() > deadline) {
      throw new Error(`the sample did not answer on ${program.url}:\n${program.output()}`)
    }
    await new Promise((done) => setTimeout(done, 100))
  }
}

/** `Authorization: Bearer <token>` (and more headers). */
export function bearer(token: string, headers: Record<string, string> = {}): RequestInit {
  return { headers: { authorization: `Bearer ${token}`, ...headers } }
}

/** The status and JSON body of a response (the body `undefined` when it is not JSON). */
export async function answer(response: Response): Promise<{ status: number; body: unknown }> {
  const text = await response.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = text === '' ? undefined : text
  }
  return { status: response.status, body }
}

/**
 * Calls `probe` until `accept` holds for what it resolved to (every 100 ms, at most 15 s), and
 * resolves with that value; rejects naming `what` and the last value otherwise. For what a sample
 * does in the background (a log line, a row written by a late store command).
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T> | T,
  accept: (value: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const value = await probe()
    if (accept(value)) return value
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within 15 s; last: ${JSON.stringify(value)}`)
    }
    await new Promise((done) => setTimeout(done, 100))
  }
}
