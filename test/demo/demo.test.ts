import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { type Demo, startDemo } from '../../demo/servers.js'
import { REFUSAL_WITHIN_MS, runWalkthrough, type Step } from '../../demo/walkthrough.js'
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
  /** How each SET of `event` reached the product's receiver, and whose tokens it revoked. */
  const revokedBy = (product: 'gateway' | 'office', event: string) =>
    demo.signalEvents[product].flatMap((signal) =>
      signal.type === 'signal_applied' && signal.event.endsWith(`/${event}`)
        ? signal.changes
            .filter(
              (change) =>
                change.change === 'revoked' &&
                change.by === 'sub' &&
                change.issuer === demo.signInProvider.issuer,
            )
            .map((change) => [signal.delivery, change.value])
        : [],
    )
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

  it('refuses a user who signed out at the provider’s page within a second at the gateway (signals pushed) and at the office (signals polled), and no one else', () => {
    const signals = steps.filter((step) => /Bob|Alice’s (office )?token, still/.test(step.title))
    expect(signals.map((step) => [step.title, step.status])).toEqual([
      ['gateway, Bob’s gateway token, before he signs out', 200],
      ['office, Bob’s office token, before he signs out', 200],
      [
        'gateway, Bob signed out at the provider’s page: his token refused within a second (CAEP session-revoked, pushed)',
        401,
      ],
      [
        'office, Bob signed out at the provider’s page: his office token refused within a second (polled)',
        401,
      ],
      ['gateway, Alice’s token, still admitted', 200],
      ['office, Alice’s office token, still admitted', 200],
    ])
    const [gateway, office] = [signals[2], signals[3]]
    // Measured from the press of "Sign out" on the provider's page to the refused answer.
    expect(gateway?.afterMs).toBeLessThan(REFUSAL_WITHIN_MS)
    expect(office?.afterMs).toBeLessThan(REFUSAL_WITHIN_MS)
    expect(gateway?.detail).toContain('realm="gateway", error="invalid_token"')
    expect(office?.detail).toContain('realm="office", error="invalid_token"')
    expect(gateway?.detail).toMatch(/refused \d+ ms after the sign-out/)
    expect(office?.detail).toContain('office receiver: session-revoked applied, delivered by poll')
    expect(revokedBy('gateway', 'session-revoked')).toEqual([['push', 'bob']])
    expect(revokedBy('office', 'session-revoked')).toEqual([['poll', 'bob']])
  })

  it('refuses a user whose account an administrator disabled (RISC account-disabled) within a second at the gateway and the office, her exchanged office token included', () => {
    const disabled = steps.filter((step) => step.title.includes('disabled Alice’s account'))
    expect(disabled.map((step) => [step.title, step.status])).toEqual([
      [
        'gateway, an administrator disabled Alice’s account: her token refused within a second (RISC account-disabled, pushed)',
        401,
      ],
      [
        'office, an administrator disabled Alice’s account: her office token refused within a second (polled)',
        401,
      ],
    ])
    for (const step of disabled) {
      expect(step.afterMs).toBeLessThan(REFUSAL_WITHIN_MS)
      expect(step.detail).toMatch(/refused \d+ ms after the administrator’s call/)
    }
    const exchanged = steps.find((step) => step.title.includes('her exchanged office token'))
    expect(exchanged?.status).toBe(401)
    expect(revokedBy('gateway', 'account-disabled')).toEqual([['push', 'alice']])
    expect(revokedBy('office', 'account-disabled')).toEqual([['poll', 'alice']])
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
