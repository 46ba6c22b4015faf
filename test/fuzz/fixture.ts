/**
 * Shared set-up of the property suites: run budgets, the issuer, a warm gate, and the one
 * classification every property asserts (200 only for a genuine token; otherwise a TollgateError
 * with 400 or 401; never anything else).
 */
import { expect } from 'vitest'

import { isTollgateError } from '../../src/errors.js'
import type { Gate } from '../../src/gate/gate.js'
import type { RequestLike } from '../../src/types.js'

/**
 * Total runs across the fuzz suite: `FUZZ_RUNS` (default 10,000, the CI budget; `npm run fuzz`
 * sets 200,000). Each property takes a fixed share of it.
 */
export const TOTAL_RUNS = (() => {
  const value = Number(process.env['FUZZ_RUNS'] ?? 10_000)
  return Number.isFinite(value) && value >= 10 ? Math.floor(value) : 10_000
})()

export function runs(share: number): number {
  return Math.max(1, Math.round(TOTAL_RUNS * share))
}

/** Longer runs get more time. */
export const TIMEOUT_MS = Math.max(60_000, TOTAL_RUNS * 20)

/** The B64token-ish alphabet and a few troublemakers, for building near-tokens. */
export const TOKEN_CHARS = [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_',
  ...'.=+/~ ,;"\\\t',
]

export interface Verdict {
  readonly status: number
  readonly code: string | undefined
  readonly subject?: string | undefined
}

/** Runs `gate.check` and classifies the result; throws (fails the property) for anything odd. */
export async function judge(gate: Gate, request: RequestLike): Promise<Verdict> {
  try {
    const result = await gate.check(request)
    return { status: 200, code: undefined, subject: result.auth?.subject }
  } catch (error) {
    if (!isTollgateError(error)) {
      throw new Error(`gate.check threw something that is not a TollgateError: ${String(error)}`)
    }
    expect([400, 401]).toContain(error.status)
    expect(error.headers['WWW-Authenticate']).toMatch(
      /^Bearer realm="api"(, error="invalid_(request|token)", error_description="[A-Za-z ]+")?$/,
    )
    if (error.status === 400) expect(error.code).toBe('ERR_INVALID_REQUEST')
    return { status: error.status, code: error.code }
  }
}

/** Collects unhandled rejections for the suite to assert on. */
export function watchUnhandled(): { readonly seen: unknown[]; stop(): void } {
  const seen: unknown[] = []
  const listener = (reason: unknown) => seen.push(reason)
  process.on('unhandledRejection', listener)
  return { seen, stop: () => process.off('unhandledRejection', listener) }
}
