import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { type Demo, startDemo } from '../../demo/servers.js'
import { runWalkthrough, type Step } from '../../demo/walkthrough.js'
import { freePort } from '../helpers/redis.js'

/** The processes of a process group, from /proc (field 5 of `stat` is the group). */
function processGroup(pgid: number): number[] {
  const members: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // `comm` (field 2) is in parentheses and may hold spaces: count from its end.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') members.push(Number(entry))
    } catch {
      // The process ended meanwhile.
    }
  }
  return members
}

/** `true` when nothing listens on `port` of 127.0.0.1: this test can listen there itself. */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)))
  })
}

describe('demo walkthrough', () => {
  let demo: Demo
  let steps: Step[]
  beforeAll(async () => {
    demo = await startDemo()
    steps = await runWalkthrough(demo)
  })
  afterAll(async () => {
    await demo.close()
  })

  it('answers every scripted step with the status it promises (200, 401, 400, 403, 429)', () => {
    expect(steps.map((step) => [step.title, step.status])).toEqual(
      steps.map((step) => [step.title, step.expected]),
    )
    expect(new Set(steps.map((step) => step.status))).toEqual(new Set([200, 400, 401, 403, 429]))
  })

  it('refuses a user who signed out at the provider’s page within a second (Shared Signals pushed to the gateway), and no one else', () => {
    const signals = steps.filter((step) => /Bob|Alice’s token, still/.test(step.title))
    expect(signals.map((step) => [step.title, step.status])).toEqual([
      ['gateway, Bob’s token, before he signs out', 200],
      ['gateway, Bob signed out at the provider’s page: his token refused within a second', 401],
      ['gateway, Alice’s token, still admitted', 200],
    ])
    expect(signals[1]?.detail).toContain('error="invalid_token"')
  })

  it('reads the user’s office data on their behalf: the office sees alice and the gateway as actor', () => {
    const onBehalf = steps.filter((step) => step.title.includes('on the user’s behalf'))
    expect(onBehalf.map((step) => step.status)).toEqual([200, 403])
    expect(onBehalf[0]?.detail).toContain('"user":"alice","actor":"gateway"')
    expect(onBehalf[1]?.detail).toContain('ERR_SUBJECT_TOKEN_REFUSED')
  })

  it('has the gateway obtain its office token once, reuse it, then renew it once', () => {
    expect(demo.officeTokens.events.map((event) => event.type)).toEqual([
      'token_requested',
      'token_obtained',
      'token_requested',
      'token_renewed',
    ])
  })
})

describe('npm start', () => {
  it.each([
    ['DEMO_ISSUER_PORT', 'issuer'],
    ['DEMO_GATEWAY_PORT', 'gateway'],
    ['DEMO_SIGNIN_PORT', 'signIn'],
  ])('stops with one line naming %s when its port is taken', async (variable, service) => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as AddressInfo).port
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DEMO_ISSUER_PORT: '0',
      DEMO_GATEWAY_PORT: '0',
      DEMO_OFFICE_PORT: '0',
      DEMO_SIGNIN_PORT: '0',
    }
    env[variable] = String(port)
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'demo/main.ts'], {
      env,
      encoding: 'utf8',
      timeout: 15_000,
    })
    taken.close()
    expect(result.status).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr.trim().split('\n')).toEqual([
      `demo: port ${port} (${service}) is in use; set ${variable} to another port, or ${variable}=0 for any free one`,
    ])
  })
})

describe('npm start, stopped by a signal to npm', () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    '%s to the npm process stops every process it started and frees every port',
    async (signal) => {
      // Free ports, chosen before the demo binds them: another test's connection may take one
      // meanwhile, and the demo then says so and exits; it is started again on others.
      let started: Awaited<ReturnType<typeof startNpmDemo>> | undefined
      for (let attempt = 0; attempt < 3 && started === undefined; attempt++) {
        started = await startNpmDemo()
      }
      if (started === undefined) throw new Error('npm start found a port in use three times')
      const { npm, pgid, ports, exited } = started
      try {
        expect(processGroup(pgid).length).toBeGreaterThan(1)
        expect(await Promise.all(ports.map(free))).toEqual([false, false, false, false])

        process.kill(pgid, signal)
        // npm exits once its child has (a bounded wait: a demo that never hears of the signal
        // keeps npm waiting, and the assertions below say so).
        await Promise.race([exited, sleep(20_000)])
        // The demo closes its servers and exits; an adopted one notices within half a second.
        const deadline = performance.now() + 15_000
        while (processGroup(pgid).length > 0 && performance.now() < deadline) await sleep(100)
        expect(npm.exitCode !== null || npm.signalCode !== null).toBe(true)
        expect(processGroup(pgid)).toEqual([])
        expect(await Promise.all(ports.map(free))).toEqual([true, true, true, true])
      } finally {
        for (const pid of processGroup(pgid)) process.kill(pid, 'SIGKILL')
      }
    },
    60_000,
  )
})

/** `npm start` on four free ports, running; `undefined` when it found one of them taken. */
async function startNpmDemo() {
  const ports = [await freePort(), await freePort(), await freePort(), await freePort()]
  const [issuer, gateway, office, signIn] = ports.map(String)
  // Its own process group, so that whatever it started can be found, and nothing else.
  const npm = spawn('npm', ['start'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DEMO_ISSUER_PORT: issuer,
      DEMO_GATEWAY_PORT: gateway,
      DEMO_OFFICE_PORT: office,
      DEMO_SIGNIN_PORT: signIn,
    },
  })
  const pgid = npm.pid as number
  let output = ''
  npm.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  npm.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()))
  try {
    while (!output.includes('Every case at once: npm run walkthrough')) {
      if (npm.exitCode !== null) {
        if (/is in use; set DEMO_/.test(output)) return undefined
        throw new Error(`npm start ended:\n${output}`)
      }
      await sleep(100)
    }
  } catch (error) {
    for (const pid of processGroup(pgid)) process.kill(pid, 'SIGKILL')
    throw error
  }
  return { npm, pgid, ports, exited }
}
