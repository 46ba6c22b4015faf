import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { type Demo, startDemo } from '../demo/servers.js'
import { runWalkthrough } from '../demo/walkthrough.js'

describe('demo walkthrough', () => {
  let demo: Demo
  beforeAll(async () => {
    demo = await startDemo()
  })
  afterAll(async () => {
    await demo.close()
  })

  it('answers every scripted step with the status it promises (200, 401, 400, 403, 429)', async () => {
    const steps = await runWalkthrough(demo)
    expect(steps.map((step) => [step.title, step.status])).toEqual(
      steps.map((step) => [step.title, step.expected]),
    )
    expect(new Set(steps.map((step) => step.status))).toEqual(new Set([200, 400, 401, 403, 429]))
  })
})
