/**
 * Helpers for the provider-fault suites: a gate that records its events, a one-line outcome of
 * `gate.check`, and fake time that moves only Date (real sockets and timers keep working).
 */
import { expect, vi } from 'vitest'

import { isTollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { GateOptions, JWKSOptions } from '../../src/gate/options.js'
import type { TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

/** Small, fast settings: a 1 s fetch timeout (a loaded CI machine must not turn a good fetch into a timeout), 1 s cooldown, 60 s max age, 120 s stale bound. */
export const JWKS: JWKSOptions = {
  timeoutMs: 1000,
  cooldownMs: 1000,
  maxAgeMs: 60_000,
  staleIfErrorMs: 120_000,
}

/** Options for realm acme of `issuer`, audience `gateway`, with {@link JWKS} and any overrides. */
export function acmeOptions(issuer: TestIssuer, jwks: JWKSOptions = {}): GateOptions {
  return {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    jwks: { ...JWKS, ...jwks },
  }
}

export interface RecordingGate {
  readonly gate: Gate
  readonly events: GateEvent[]
  /** Event types since the last call (and forgets them). */
  takeTypes(): string[]
  /** Events since the last call (and forgets them). */
  take(): GateEvent[]
}

export function recordingGate(options: GateOptions): RecordingGate {
  const events: GateEvent[] = []
  const gate = createGate({ ...options, onEvent: (event) => events.push(event) })
  const take = () => events.splice(0, events.length)
  return { gate, events, take, takeTypes: () => take().map((event) => event.type) }
}

/** What a check came to: 200, or the refusal's status, code and headers. */
export interface Outcome {
  readonly status: number
  readonly code?: string
  readonly headers?: Record<string, string>
  readonly subject?: string | undefined
}

export async function outcome(gate: Gate, token: string): Promise<Outcome> {
  try {
    const result = await gate.check({ headers: { authorization: `Bearer ${token}` } })
    return { status: 200, subject: result.auth?.subject }
  } catch (error) {
    if (!isTollgateError(error)) throw error
    return { status: error.status, code: error.code, headers: error.headers }
  }
}

/** Asserts a 503 `ERR_JWKS_UNAVAILABLE` with a whole-second `Retry-After` of at least 1. */
export function expectUnavailable(result: Outcome): void {
  expect(result).toMatchObject({ status: 503, code: 'ERR_JWKS_UNAVAILABLE' })
  expect(result.headers?.['Retry-After']).toMatch(/^[1-9]\d*$/)
  expect(result.headers?.['WWW-Authenticate']).toBeUndefined()
}

// Captured at load, before any test fakes timers: waiting for a condition must not stand still.
const realSetTimeout = globalThis.setTimeout

/**
 * Fake time starting at `start`, advanced by hand. By default only Date moves (real sockets and
 * timers keep working); with `timers`, `setTimeout` is fake too, so a deadline the gate sets (the
 * JWKS fetch timeout) fires only when the test moves time with `vi.advanceTimersByTimeAsync`.
 */
export function fakeClock(start = Date.UTC(2032, 0, 1)) {
  return {
    install({ timers = false }: { timers?: boolean } = {}) {
      vi.useFakeTimers({
        toFake: timers ? ['Date', 'setTimeout', 'clearTimeout'] : ['Date'],
        now: start,
      })
    },
    uninstall() {
      vi.useRealTimers()
    },
    // From Date.now(), which vi.advanceTimersByTimeAsync moves as well.
    advance(ms: number) {
      vi.setSystemTime(Date.now() + ms)
    },
    get now() {
      return Date.now()
    },
  }
}

/**
 * Waits (real time, even under fake timers) until `condition` holds. The bound only turns a hang
 * into a clear message: it is no threshold on the behaviour under test.
 */
export async function eventually(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => realSetTimeout(resolve, 10))
  }
}

/** Resolves after the event loop has gone round `rounds` times (callbacks, then check phase). */
export async function turns(rounds = 2): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * A fetch for the gate's `jwks.fetch` that passes requests through, except while held: then it
 * waits for {@link HoldingFetch.release} before fetching, so a test decides when a refresh may
 * finish instead of racing a provider's delay.
 */
export interface HoldingFetch {
  readonly fetch: typeof globalThis.fetch
  hold(): void
  release(): void
  /** Fetches waiting for release. */
  waiting(): number
}

export function holdingFetch(): HoldingFetch {
  let gate: Promise<void> | undefined
  let open: (() => void) | undefined
  let waiting = 0
  return {
    async fetch(input, init) {
      if (gate !== undefined) {
        waiting += 1
        try {
          await gate
        } finally {
          waiting -= 1
        }
      }
      return fetch(input, init)
    },
    hold() {
      gate = new Promise((resolve) => {
        open = resolve
      })
    },
    release() {
      open?.()
      gate = undefined
    },
    waiting: () => waiting,
  }
}
