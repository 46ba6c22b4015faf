import { spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { type Demo, startDemo } from '../../demo/servers.js'
import { runWalkthrough, type Step } from '../../demo/walkthrough.js'

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
