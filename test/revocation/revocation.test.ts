import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'

import {
  isTollgateError,
  renderError,
  ServiceUnavailableError,
  type TollgateError,
} from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { GateOptions } from '../../src/gate/options.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'

let issuer: TestIssuer
let base: GateOptions
const gates: Gate[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'beta'], audience: 'gateway' })
  base = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme', 'beta'] }),
    audience: 'gateway',
  }
})
afterAll(async () => {
  await issuer.close()
})
afterEach(async () => {
  vi.useRealTimers()
  for (const gate of gates.splice(0)) await gate.close()
})

function gateWith(extra: Partial<GateOptions> = {}, events?: GateEvent[]): Gate {
  const gate = createGate({
    ...base,
    revocation: {},
    ...extra,
    ...(events === undefined ? {} : { onEvent: (event: GateEvent) => events.push(event) }),
  })
  gates.push(gate)
  return gate
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'admitted',
    (error: TollgateError) => `${error.status} ${error.code} ${error.reason}`,
  )
const REVOKED = '401 ERR_TOKEN_INVALID revoked'
const acme = () => issuer.issuer('acme')
/** A token issued a few seconds ago, so that a revocation made now applies to it. */
const earlier = (claims: Record<string, unknown> = {}) =>
  issuer.mint({ iat: Math.floor(Date.now() / 1000) - 10, ...claims })

describe('gate.revoke', () => {
  it.each([
    ['jti', { jti: 'token-1' }, { jti: 'token-1' }],
    ['sid', { sid: 'session-1' }, { sid: 'session-1' }],
    ['sub', { sub: 'alice' }, { sub: 'alice' }],
    ['clientId', { azp: 'billing-ui' }, { clientId: 'billing-ui' }],
    ['all', {}, { all: true as const }],
  ])(
    'refuses a token named by %s from the next request, cache hit included',
    async (_kind, claims, target) => {
      const gate = gateWith()
      const token = await earlier(claims)
      expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
      await gate.revoke({ issuer: acme(), ...target })
      expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
    },
  )

  it('answers a revoked token with the generic invalid_token challenge', async () => {
    const gate = gateWith()
    const token = await earlier({ sub: 'alice' })
    await gate.revoke({ issuer: acme(), sub: 'alice' })
    const error = await gate.check(bearer(token)).catch((caught: TollgateError) => caught)
    expect(error).toMatchObject({
      status: 401,
      error: 'invalid_token',
      message: 'invalid token',
      reason: 'revoked',
      detail: { by: 'sub' },
      headers: {
        'WWW-Authenticate':
          'Bearer realm="api", error="invalid_token", error_description="invalid token"',
      },
    })
  })

  it('refuses a revoked token on its first request too (no cached verdict)', async () => {
    const gate = gateWith()
    await gate.revoke({ issuer: acme(), sid: 'session-2' })
    expect(await outcome(gate.check(bearer(await earlier({ sid: 'session-2' }))))).toBe(REVOKED)
  })

  it('admits tokens issued after the not-before (the user signed in again)', async () => {
    const gate = gateWith()
    const now = Math.floor(Date.now() / 1000)
    await gate.revoke({ issuer: acme(), sub: 'alice', notBefore: now - 5 })
    expect(
      await outcome(gate.check(bearer(await issuer.mint({ sub: 'alice', iat: now - 6 })))),
    ).toBe(REVOKED)
    expect(
      await outcome(gate.check(bearer(await issuer.mint({ sub: 'alice', iat: now - 5 })))),
    ).toBe('admitted')
  })

  it('refuses a token issued in the same second as the revocation', async () => {
    const gate = gateWith()
    const token = await issuer.mint({ sub: 'carol' })
    await gate.revoke({ issuer: acme(), sub: 'carol' })
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
  })

  it('refuses a token minted by a provider clock ahead, within clockToleranceSeconds, after revoke by sub', async () => {
    const gate = gateWith()
    // iat 4 s ahead of this host: admitted (tolerance 5 s), yet issued before the revocation.
    const ahead = await issuer.mint({ sub: 'dave', iat: Math.floor(Date.now() / 1000) + 4 })
    expect(await outcome(gate.check(bearer(ahead)))).toBe('admitted')
    await gate.revoke({ issuer: acme(), sub: 'dave' })
    expect(await outcome(gate.check(bearer(ahead)))).toBe(REVOKED)
  })

  it('sets the default not-before one clockToleranceSeconds past the second after the call', async () => {
    const events: GateEvent[] = []
    const gate = gateWith({ clockToleranceSeconds: 30 }, events)
    const before = Math.floor(Date.now() / 1000)
    await gate.revoke({ issuer: acme(), sub: 'erin' })
    const after = Math.floor(Date.now() / 1000)
    const revoked = events.find((event) => event.type === 'revoked')
    expect(revoked).toBeDefined()
    const notBefore = (revoked as { notBefore: number }).notBefore
    expect(notBefore).toBeGreaterThanOrEqual(before + 1 + 30)
    expect(notBefore).toBeLessThanOrEqual(after + 1 + 30)
  })

  it('leaves other users, sessions and issuers alone', async () => {
    const gate = gateWith()
    await gate.revoke({ issuer: acme(), sub: 'alice' })
    expect(await outcome(gate.check(bearer(await earlier({ sub: 'bob' }))))).toBe('admitted')
    const beta = await issuer.mint(
      { sub: 'alice', iat: Math.floor(Date.now() / 1000) - 10 },
      { realm: 'beta' },
    )
    expect(await outcome(gate.check(bearer(beta)))).toBe('admitted')
  })

  it('admits the token again after unrevoke', async () => {
    const gate = gateWith()
    const token = await earlier({ sid: 'session-3' })
    await gate.revoke({ issuer: acme(), sid: 'session-3' })
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
    await gate.unrevoke({ issuer: acme(), sid: 'session-3' })
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
  })

  it('checks revocation on tenant gates too', async () => {
    const gate = gateWith({ tenant: { claim: 'tenant' } })
    const token = await earlier({ sub: 'alice', tenant: 'acme' })
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
    await gate.revoke({ issuer: acme(), sub: 'alice' })
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
  })

  it('defaults the issuer when only one is configured', async () => {
    const gate = gateWith({ issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }) })
    await gate.revoke({ sub: 'dave' })
    expect(await outcome(gate.check(bearer(await earlier({ sub: 'dave' }))))).toBe(REVOKED)
  })

  it('resolves with where the revocation went', async () => {
    const gate = gateWith()
    await expect(gate.revoke({ issuer: acme(), sub: 'erin' })).resolves.toEqual({
      stored: 'memory',
    })
    await expect(gate.unrevoke({ issuer: acme(), sub: 'erin' })).resolves.toEqual({
      stored: 'memory',
    })
  })

  it('reports revocations made and requests refused for them', async () => {
    const events: GateEvent[] = []
    const gate = gateWith({}, events)
    const token = await earlier({ sub: 'frank' })
    await gate.revoke({
      issuer: acme(),
      sub: 'frank',
    })
    await gate.check(bearer(token)).catch(() => {})
    expect(events).toContainEqual({
      type: 'revoked',
      issuer: acme(),
      by: 'sub',
      value: 'frank',
      notBefore: expect.any(Number),
      source: 'api',
      stored: 'memory',
    })
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'rejected', reason: 'revoked', issuer: acme(), status: 401 }),
    )
  })

  it.each([
    ['no selector', {}, 'exactly one of jti, sid, sub, clientId or all'],
    ['two selectors', { sub: 'a', sid: 'b' }, 'exactly one of'],
    ['an empty sub', { sub: '' }, '"sub" must be a string of 1 to 1024'],
    ['a numeric sub', { sub: 7 }, '"sub" must be a string'],
    ['a sub of 1025 characters', { sub: 'x'.repeat(1025) }, '"sub" must be a string'],
    ['all: false', { all: false }, '"all" must be true'],
    ['all: "yes"', { all: 'yes' }, '"all" must be true'],
    ['a string notBefore', { sub: 'a', notBefore: '1' }, '"notBefore" must be a time in seconds'],
    ['a NaN notBefore', { sub: 'a', notBefore: Number.NaN }, '"notBefore"'],
    [
      'a notBefore two hours ahead',
      { sub: 'a', notBefore: Date.now() / 1000 + 7200 },
      'at most an hour ahead',
    ],
    ['an unknown field', { sub: 'a', subject: 'a' }, '"subject" is not a field'],
    [
      'an unknown issuer',
      { sub: 'a', issuer: 'https://elsewhere.example.com' },
      '"issuer" must be one of the configured issuers',
    ],
  ])('rejects %s with a TypeError', async (_name, target, message) => {
    const gate = gateWith()
    await expect(gate.revoke({ issuer: acme(), ...(target as object) } as never)).rejects.toThrow(
      message,
    )
  })

  it('needs the issuer when several are configured', async () => {
    const gate = gateWith()
    await expect(gate.revoke({ sub: 'a' })).rejects.toThrow('required when there are several')
  })

  it('rejects without the revocation option', async () => {
    const gate = createGate(base)
    gates.push(gate)
    await expect(gate.revoke({ sub: 'a' })).rejects.toThrow(TypeError)
    await expect(gate.unrevoke({ sub: 'a' })).rejects.toThrow('needs the "revocation" option')
  })
})

describe('revocation and token lifetime', () => {
  it('refuses tokens living longer than maxTokenLifetimeSeconds while revocation is on', async () => {
    const gate = gateWith({ maxTokenLifetimeSeconds: 600 })
    const long = await issuer.mint({}, { expiresInSeconds: 601 })
    const fine = await issuer.mint({}, { expiresInSeconds: 600 })
    expect(await outcome(gate.check(bearer(long)))).toBe('401 ERR_TOKEN_INVALID lifetime')
    expect(await outcome(gate.check(bearer(fine)))).toBe('admitted')
  })

  it('refuses tokens without iat while revocation is on', async () => {
    const gate = gateWith()
    expect(await outcome(gate.check(bearer(await issuer.mint({ iat: undefined }))))).toBe(
      '401 ERR_TOKEN_INVALID missing_claim',
    )
  })

  it('admits long-lived tokens when revocation is off', async () => {
    const gate = createGate(base)
    gates.push(gate)
    expect(
      await outcome(gate.check(bearer(await issuer.mint({}, { expiresInSeconds: 200_000 })))),
    ).toBe('admitted')
  })

  it('lets no token an entry matches outlive the entry (maxTokenLifetimeSeconds bounds both)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const gate = gateWith({
      maxTokenLifetimeSeconds: 600,
      clockToleranceSeconds: 0,
    })
    const token = await earlier({ sub: 'gina' })
    await gate.revoke({ issuer: acme(), sub: 'gina' })
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
    // The longest-lived token the entry could match is expired by now, whichever it was.
    vi.setSystemTime(Date.now() + 601_000)
    expect(await outcome(gate.check(bearer(token)))).toBe('401 ERR_TOKEN_EXPIRED expired')
  })
})

describe('revocation per issuer', () => {
  it('refuses a revoked jti of one realm and admits the same jti issued by another', async () => {
    const gate = gateWith()
    const acmeToken = await earlier({ jti: 'shared-id' })
    const betaToken = await issuer.mint(
      { jti: 'shared-id', iat: Math.floor(Date.now() / 1000) - 10 },
      { realm: 'beta' },
    )
    await gate.revoke({ issuer: acme(), jti: 'shared-id' })
    expect(await outcome(gate.check(bearer(acmeToken)))).toBe(REVOKED)
    expect(await outcome(gate.check(bearer(betaToken)))).toBe('admitted')
  })
})

describe('expiry of entries', () => {
  it('keeps a jti entry until its token, issued up to one tolerance ahead, has expired', async () => {
    // The sweep runs on an interval: fake it with Date so that it runs as time moves.
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] })
    const gate = gateWith({ maxTokenLifetimeSeconds: 600, clockToleranceSeconds: 120 })
    const start = Math.floor(Date.now() / 1000)
    // The latest iat the gate accepts now, and the longest lifetime: valid until iat + 600 + 120.
    const iat = start + 120
    const token = await issuer.mint({ jti: 'late-token', iat, exp: iat + 600 })
    await gate.revoke({ issuer: acme(), jti: 'late-token' })
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
    // One second before the token's last accepted moment, sweeps at 60 s steps done meanwhile.
    vi.advanceTimersByTime((iat + 600 + 120 - 1 - start) * 1000)
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
  })

  it('keeps a not-before entry until every token issued before it has expired', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] })
    const gate = gateWith({ maxTokenLifetimeSeconds: 600, clockToleranceSeconds: 120 })
    const start = Math.floor(Date.now() / 1000)
    const notBefore = start + 3600
    // Issued just before the (future) not-before, with the longest lifetime.
    const iat = notBefore - 1
    await gate.revoke({ issuer: acme(), sub: 'hugo', notBefore })
    vi.advanceTimersByTime((iat - start) * 1000)
    const token = await issuer.mint({ sub: 'hugo', iat, exp: iat + 600 })
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
    vi.advanceTimersByTime((600 + 120 - 1) * 1000)
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
  })
})

describe("revocation.load (the application's records)", () => {
  it('holds back requests until load resolves, then refuses what it named', async () => {
    let resolveLoad: (targets: { issuer: string; sub: string; notBefore: number }[]) => void =
      () => {}
    const gate = gateWith({
      revocation: {
        storeTimeoutMs: 60_000,
        load: () => new Promise((resolve) => (resolveLoad = resolve)),
      },
    })
    const token = await earlier({ sub: 'recorded' })
    const order: string[] = []
    const decided = outcome(gate.check(bearer(token))).then((result) => {
      order.push('decided')
      return result
    })
    const ready = gate.ready().then((report) => {
      order.push('ready')
      return report
    })
    // Let every microtask run: neither may settle while load is pending.
    await new Promise((resolve) => setImmediate(resolve))
    order.push('loaded')
    resolveLoad([{ issuer: acme(), sub: 'recorded', notBefore: Math.floor(Date.now() / 1000) }])
    expect(await decided).toBe(REVOKED)
    expect(await ready).toMatchObject({ ready: true, revocation: 'held' })
    expect(order[0]).toBe('loaded')
  })

  it('skips entries that name no single target or lack the recorded notBefore, and reports them', async () => {
    const events: GateEvent[] = []
    const nowSeconds = Math.floor(Date.now() / 1000)
    const gate = gateWith(
      {
        revocation: {
          load: async () => [
            { issuer: acme(), sub: 'no-not-before' },
            { issuer: acme(), jti: 'token-9' },
            { issuer: acme(), sub: 'kept', notBefore: nowSeconds },
            { issuer: acme() },
            { issuer: acme(), sub: 'two', sid: 'targets', notBefore: nowSeconds },
            // Several issuers are configured: an entry must say which.
            { jti: 'no-issuer' },
          ],
        },
      },
      events,
    )
    await gate.ready()
    expect(events).toContainEqual({
      type: 'revocation_loaded',
      trigger: 'start',
      entries: 2,
      skipped: 4,
    })
    expect(await outcome(gate.check(bearer(await earlier({ jti: 'token-9' }))))).toBe(REVOKED)
    expect(await outcome(gate.check(bearer(await earlier({ sub: 'kept' }))))).toBe(REVOKED)
    expect(await outcome(gate.check(bearer(await earlier({ sub: 'no-not-before' }))))).toBe(
      'admitted',
    )
  })

  it('answers 503 while load fails, reports it, and retries until it succeeds', async () => {
    const events: GateEvent[] = []
    let calls = 0
    const gate = gateWith(
      {
        revocation: {
          storeTimeoutMs: 20,
          load: async () => {
            calls += 1
            if (calls === 1) throw new Error('records unavailable')
            return []
          },
        },
      },
      events,
    )
    const token = await earlier({ sub: 'anyone' })
    const refused = (await gate
      .check(bearer(token))
      .catch((error: unknown) => error)) as TollgateError
    expect(refused).toMatchObject({ status: 503, code: 'ERR_REVOCATION_UNAVAILABLE' })
    expect(events).toContainEqual({
      type: 'revocation_load_failed',
      trigger: 'start',
      error: expect.any(Error),
    })
    const deadline = Date.now() + 10_000
    while ((await outcome(gate.check(bearer(token)))) !== 'admitted') {
      if (Date.now() > deadline) throw new Error('load was not retried')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(calls).toBe(2)
  })
})

describe('revocation.reloadIntervalMs (instances that share no store)', () => {
  const INTERVAL_MS = 5000
  /** The application's records, as `load` returns them: changed by the test between reloads. */
  function recordsOf(records: object[]) {
    let calls = 0
    return {
      load: async () => {
        calls += 1
        return [...records]
      },
      calls: () => calls,
    }
  }
  /** Moves the clock the gate reads (Date) on by `ms`. */
  const pass = (ms: number) => vi.setSystemTime(Date.now() + ms)

  it("enforces a revocation recorded in the application's store on the first request after the interval", async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const records: object[] = []
    const { load, calls } = recordsOf(records)
    const events: GateEvent[] = []
    const gate = gateWith({ revocation: { load, reloadIntervalMs: INTERVAL_MS } }, events)
    await gate.ready()
    const token = await earlier({ sub: 'mallory' })
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
    // Another instance revoked her and recorded it (D1, KV, a database…).
    records.push({ issuer: acme(), sub: 'mallory', notBefore: Math.floor(Date.now() / 1000) })
    pass(INTERVAL_MS - 1)
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
    expect(calls()).toBe(1)
    pass(1)
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
    expect(calls()).toBe(2)
    expect(events).toContainEqual({
      type: 'revocation_loaded',
      trigger: 'reload',
      entries: 1,
      skipped: 0,
    })
  })

  it('reloads once per interval however many requests come', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { load, calls } = recordsOf([])
    const gate = gateWith({ revocation: { load, reloadIntervalMs: INTERVAL_MS } })
    await gate.ready()
    const token = await earlier()
    pass(INTERVAL_MS)
    await Promise.all(Array.from({ length: 5 }, () => outcome(gate.check(bearer(token)))))
    expect(calls()).toBe(2)
    pass(INTERVAL_MS - 1)
    await outcome(gate.check(bearer(token)))
    expect(calls()).toBe(2)
    pass(1)
    await outcome(gate.check(bearer(token)))
    expect(calls()).toBe(3)
  })

  it('keeps the entries it holds when a reload fails, and reports the failure', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const events: GateEvent[] = []
    let failing = false
    const gate = gateWith(
      {
        revocation: {
          reloadIntervalMs: INTERVAL_MS,
          load: async () => {
            if (failing) throw new Error('records unavailable')
            return [{ issuer: acme(), jti: 'stolen' }]
          },
        },
      },
      events,
    )
    await gate.ready()
    failing = true
    pass(INTERVAL_MS)
    expect(await outcome(gate.check(bearer(await earlier({ jti: 'stolen' }))))).toBe(REVOKED)
    expect(events).toContainEqual({
      type: 'revocation_load_failed',
      trigger: 'reload',
      error: expect.any(Error),
    })
  })

  it('adds back an entry removed with gate.unrevoke() while the records still hold it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const gate = gateWith({
      revocation: {
        reloadIntervalMs: INTERVAL_MS,
        load: async () => [{ issuer: acme(), jti: 'recorded' }],
      },
    })
    await gate.ready()
    const token = await earlier({ jti: 'recorded' })
    await gate.unrevoke({ issuer: acme(), jti: 'recorded' })
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
    pass(INTERVAL_MS)
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
  })

  it('waits for a slow reload at most storeTimeoutMs, and starts no second one meanwhile', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    let calls = 0
    let finish: (targets: object[]) => void = () => {}
    const gate = gateWith({
      revocation: {
        reloadIntervalMs: INTERVAL_MS,
        storeTimeoutMs: 20,
        load: () => {
          calls += 1
          return calls === 1 ? [] : new Promise<object[]>((resolve) => (finish = resolve))
        },
      },
    })
    await gate.ready()
    const token = await earlier({ jti: 'late' })
    pass(INTERVAL_MS)
    // Decided with what is held once storeTimeoutMs has passed (real time: only Date is fake).
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
    expect(await outcome(gate.check(bearer(token)))).toBe('admitted')
    expect(calls).toBe(2)
    finish([{ issuer: acme(), jti: 'late' }])
    await new Promise((resolve) => setImmediate(resolve))
    expect(await outcome(gate.check(bearer(token)))).toBe(REVOKED)
  })

  it('leaves no timer once gate.close() returned, and loads nothing after', async () => {
    vi.useFakeTimers({
      toFake: ['Date', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'],
    })
    const records = recordsOf([])
    const gate = createGate({
      ...base,
      revocation: { load: records.load, reloadIntervalMs: INTERVAL_MS },
    })
    await gate.ready()
    await gate.close()
    expect(vi.getTimerCount()).toBe(0)
    pass(10 * INTERVAL_MS)
    await gate.check(bearer(await earlier())).catch(() => {})
    expect(records.calls()).toBe(1)
  })

  it('calls load once, at start, without reloadIntervalMs', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const records = recordsOf([])
    const gate = gateWith({ revocation: { load: records.load } })
    await gate.ready()
    pass(3_600_000)
    await outcome(gate.check(bearer(await earlier())))
    expect(records.calls()).toBe(1)
  })
})

describe('a failed start load with the memory store', () => {
  it('is retried by gate.ready() too, once a second has passed, without a timer', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    let calls = 0
    const gate = gateWith(
      {
        revocation: {
          storeTimeoutMs: 20,
          load: async () => {
            calls += 1
            if (calls === 1) throw new Error('records unavailable')
            return []
          },
        },
      },
      [],
    )
    expect(await gate.ready()).toMatchObject({ ready: false, revocation: 'not_held' })
    expect(calls).toBe(1)
    vi.setSystemTime(Date.now() + 1000)
    expect(await gate.ready()).toMatchObject({ revocation: 'held' })
    expect(calls).toBe(2)
  })
})

describe('ERR_REVOCATION_UNAVAILABLE', () => {
  it('is a 503 with Retry-After, rendered without detail and recognized by shape', () => {
    const error = new ServiceUnavailableError({
      code: 'ERR_REVOCATION_UNAVAILABLE',
      retryAfterSeconds: 0.2,
    })
    expect(error).toMatchObject({
      status: 503,
      reason: 'revocation_unavailable',
      headers: { 'Retry-After': '1' },
    })
    expect(JSON.parse(renderError(error).body)).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'revocation list unavailable',
    })
    const foreign = Object.assign(new Error('x'), {
      code: 'ERR_REVOCATION_UNAVAILABLE',
      status: 503,
      headers: {},
    })
    expect(isTollgateError(foreign)).toBe(true)
  })
})
