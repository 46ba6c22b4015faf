import { describe, expect, it } from 'vitest'

import { scheduleToken } from '../../src/client/schedule.js'

const defaults = { atFraction: 0.75, jitterFraction: 0.1, expiryMarginMs: 30_000 }

describe('scheduleToken', () => {
  it.each([
    [0, 225_000],
    [0.5, 210_000],
    [0.999, 195_030],
  ])('renews a 300 s token with random %s at %s ms', (random, renewAt) => {
    expect(scheduleToken(0, 300, defaults, random).renewAt).toBeCloseTo(renewAt, 0)
  })

  it('spreads renewal over the jitter window, so a fleet does not renew in step', () => {
    const points = [0, 0.25, 0.5, 0.75].map(
      (random) => scheduleToken(0, 300, defaults, random).renewAt,
    )
    expect(new Set(points).size).toBe(4)
    expect(Math.min(...points)).toBeGreaterThanOrEqual(195_000)
    expect(Math.max(...points)).toBeLessThanOrEqual(225_000)
  })

  it('stops handing a token out 30 seconds before it expires', () => {
    expect(scheduleToken(1000, 300, defaults, 0)).toMatchObject({
      usableUntil: 271_000,
      expiresAt: 301_000,
    })
  })

  it('shrinks the margin to a tenth of the lifetime for short-lived tokens', () => {
    expect(scheduleToken(0, 60, defaults, 0).usableUntil).toBe(54_000)
  })

  it('never schedules renewal after the token stops being usable', () => {
    const late = { atFraction: 0.99, jitterFraction: 0, expiryMarginMs: 30_000 }
    const { renewAt, usableUntil } = scheduleToken(0, 300, late, 0)
    expect(renewAt).toBe(usableUntil)
  })
})
