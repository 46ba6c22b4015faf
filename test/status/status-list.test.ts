/**
 * The Token Status List step, from draft-ietf-oauth-status-list's text: the referenced token's
 * `status.status_list` (§6.1), the Status List Token's checks (§5.1, §8.3: signature by the
 * issuer's keys, `typ`, `sub` equal to the URI, `iat`, `exp`, `ttl`), decoding (§4.1), the status
 * values (§7.1) and the index past the end (§8.2), and what a gate does when a list cannot be had.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { InvalidTokenError, ServiceUnavailableError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { normalizeStatusListOptions } from '../../src/status/options.js'
import { createStatusListStep, type StatusListStep } from '../../src/status/status-list.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { IssuerKeys } from '../../src/token/jwks.js'
import type { VerifiedToken } from '../../src/token/verify.js'
import { TEST_JWKS_OPTIONS } from '../helpers/jwks-options.js'
import { type StatusListServer, startStatusListServer } from '../helpers/status-list-server.js'

const JWKS = TEST_JWKS_OPTIONS

let issuer: TestIssuer
let lists: StatusListServer
const steps: StatusListStep[] = []

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'other'] })
  lists = await startStatusListServer(issuer)
})
afterAll(async () => {
  await lists.close()
  await issuer.close()
})
afterEach(() => {
  for (const step of steps.splice(0)) step.close()
  lists.fault = undefined
  lists.claims = {}
  lists.header = {}
  lists.realm = undefined
  lists.fetches.clear()
})

interface Setup {
  readonly options?: Record<string, unknown>
  readonly clock?: { now: number }
}

function stepWith({ options = {}, clock }: Setup = {}) {
  const events: GateEvent[] = []
  const keys = new IssuerKeys(
    { issuer: issuer.issuer('acme'), jwksUri: issuer.jwksUri('acme'), discovery: false },
    ['RS256', 'ES256'],
    JWKS,
    { emit: undefined, onKeysRetired: undefined },
  )
  const normalized = normalizeStatusListOptions({
    allowedUriPrefixes: [lists.origin],
    ...options,
  })
  if (normalized === undefined) throw new Error('options')
  const step = createStatusListStep(normalized, {
    keysOf: (name) => (name === issuer.issuer('acme') ? keys : undefined),
    algorithms: new Set(['RS256', 'ES256']),
    clockToleranceSeconds: 30,
    emit: (event) => events.push(event),
    now: clock === undefined ? undefined : () => clock.now,
  })
  steps.push(step)
  return { step, events }
}

function tokenNaming(status: unknown, iss = issuer.issuer('acme')): VerifiedToken {
  return {
    header: { alg: 'RS256' },
    claims: { iss, sub: 'alice', ...(status === undefined ? {} : { status }) },
    issuer: iss,
    realm: 'acme',
  } as unknown as VerifiedToken
}

const at = (idx: number, uri = lists.uri()) => tokenNaming({ status_list: { idx, uri } })

/** The step's answer, awaited: `undefined` (admitted) or the error. */
async function judged(step: StatusListStep, token: VerifiedToken): Promise<unknown> {
  const answer = step.judge(token)
  if (answer instanceof Promise)
    return answer.then(
      () => undefined,
      (error: unknown) => error,
    )
  return answer
}

const reasonOf = (outcome: unknown) => (outcome as InvalidTokenError | undefined)?.reason

describe('a token with status.status_list (§6.1)', () => {
  it('is admitted while its index is VALID (0x00), and refused once the issuer sets INVALID (0x01)', async () => {
    lists.setStatuses([0, 0, 0, 0])
    const { step } = stepWith({
      options: { minCacheSeconds: 1, maxCacheSeconds: 1 },
      clock: { now: Date.now() },
    })
    expect(await judged(step, at(2))).toBeUndefined()
    const { step: later } = stepWith()
    lists.setStatus(2, 1)
    const refused = await judged(later, at(2))
    expect(refused).toBeInstanceOf(InvalidTokenError)
    expect(reasonOf(refused)).toBe('status_invalid')
    expect((refused as InvalidTokenError).status).toBe(401)
    expect(await judged(later, at(1))).toBeUndefined()
  })

  it('refuses SUSPENDED (0x02) and an application-specific value with reasons of their own', async () => {
    lists.setStatuses([0, 2, 3, 1], { bits: 2 })
    const { step } = stepWith()
    expect(reasonOf(await judged(step, at(1)))).toBe('status_suspended')
    expect(reasonOf(await judged(step, at(2)))).toBe('status_unrecognized')
    expect(reasonOf(await judged(step, at(3)))).toBe('status_invalid')
    expect(await judged(step, at(0))).toBeUndefined()
  })

  it('reads 4- and 8-bit lists at the right index', async () => {
    lists.setStatuses([0, 0, 0, 0, 0, 1, 0], { bits: 4, path: '/lists/4' })
    lists.setStatuses([0, 0, 0, 2, 0], { bits: 8, path: '/lists/8' })
    const { step } = stepWith()
    expect(reasonOf(await judged(step, at(5, lists.uri('/lists/4'))))).toBe('status_invalid')
    expect(await judged(step, at(4, lists.uri('/lists/4')))).toBeUndefined()
    expect(reasonOf(await judged(step, at(3, lists.uri('/lists/8'))))).toBe('status_suspended')
  })

  it('refuses an index past the end of the list (§8.2), whatever the padding of its last byte says', async () => {
    lists.setStatuses([0, 0, 0])
    const { step } = stepWith()
    expect(reasonOf(await judged(step, at(8)))).toBe('status_index')
    expect(reasonOf(await judged(step, at(1_000_000)))).toBe('status_index')
  })

  it('refuses a malformed reference: idx negative, fractional or a string; uri missing or not a string', async () => {
    lists.setStatuses([0])
    const { step } = stepWith()
    for (const status of [
      'revoked',
      [],
      { status_list: 'x' },
      { status_list: { idx: -1, uri: lists.uri() } },
      { status_list: { idx: 0.5, uri: lists.uri() } },
      { status_list: { idx: '0', uri: lists.uri() } },
      { status_list: { idx: 0 } },
      { status_list: { idx: 0, uri: 42 } },
    ]) {
      expect(reasonOf(await judged(step, tokenNaming(status))), JSON.stringify(status)).toBe(
        'malformed_claim',
      )
    }
    expect(lists.fetches.size).toBe(0)
  })

  it('admits a token without status, unless required: then it is refused (status_missing)', async () => {
    const { step } = stepWith()
    expect(await judged(step, tokenNaming(undefined))).toBeUndefined()
    expect(await judged(step, tokenNaming({ other_mechanism: {} }))).toBeUndefined()
    const { step: strict } = stepWith({ options: { required: true } })
    expect(reasonOf(await judged(strict, tokenNaming(undefined)))).toBe('status_missing')
    expect(reasonOf(await judged(strict, tokenNaming({ other_mechanism: {} })))).toBe(
      'status_missing',
    )
  })

  it('answers a held list without waiting: the second check is synchronous', async () => {
    lists.setStatuses([0, 1])
    const { step } = stepWith()
    expect(await judged(step, at(0))).toBeUndefined()
    expect(step.judge(at(0))).toBeUndefined()
    expect(reasonOf(step.judge(at(1)))).toBe('status_invalid')
    expect(lists.fetches.get('/lists/1')).toBe(1)
  })

  it('fetches a list once however many requests wait for it', async () => {
    lists.setStatuses([0, 0])
    const { step } = stepWith()
    const answers = await Promise.all(Array.from({ length: 20 }, () => judged(step, at(1))))
    expect(answers.every((answer) => answer === undefined)).toBe(true)
    expect(lists.fetches.get('/lists/1')).toBe(1)
    expect(lists.lastAccept).toBe('application/statuslist+jwt')
  })
})

describe('where a list may be fetched from', () => {
  it('never fetches a list named at another origin than the issuer’s or an allowed prefix', async () => {
    lists.setStatuses([0])
    const { step } = stepWith({ options: { allowedUriPrefixes: [] } })
    expect(reasonOf(await judged(step, at(0)))).toBe('status_list_uri')
    expect(lists.fetches.size).toBe(0)
  })

  it('refuses user-info, fragments and other schemes, which could pass a prefix test as text', async () => {
    const { step } = stepWith()
    for (const uri of [
      `${lists.origin.replace('http://', 'http://user@')}lists/1`,
      `${lists.uri()}#frag`,
      'file:///etc/passwd',
      'ftp://127.0.0.1/list',
    ]) {
      expect(reasonOf(await judged(step, at(0, uri))), uri).toBe('status_list_uri')
    }
    expect(lists.fetches.size).toBe(0)
  })

  it('refuses a plain-http list off loopback even when a prefix allows it as text', () => {
    expect(() =>
      normalizeStatusListOptions({ allowedUriPrefixes: ['http://lists.example/'] }),
    ).toThrow(/statusList\.allowedUriPrefixes\[0\].*https/)
    expect(() =>
      normalizeStatusListOptions({ allowedUriPrefixes: ['https://lists.example'] }),
    ).toThrow(/must end its host with a \//)
  })
})

describe('the Status List Token (§5.1, §8.3)', () => {
  it('is refused when signed by a key that is not the token issuer’s', async () => {
    lists.setStatuses([0])
    lists.realm = 'other'
    const { step, events } = stepWith()
    expect(await judged(step, at(0))).toBeInstanceOf(ServiceUnavailableError)
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'status_list_failed',
        problem: expect.stringMatching(/signature|keys/),
      }),
    )
  })

  it('is refused without typ statuslist+jwt (an access token of the issuer is not a list)', async () => {
    lists.setStatuses([0])
    lists.header = { typ: 'at+jwt' }
    const { step, events } = stepWith()
    expect(await judged(step, at(0))).toBeInstanceOf(ServiceUnavailableError)
    expect(events).toContainEqual(expect.objectContaining({ problem: 'token_type' }))
  })

  it('is refused when its sub is not the URI the token named (a list served at another address)', async () => {
    lists.setStatuses([0])
    lists.claims = { sub: lists.uri('/lists/2') }
    const { step, events } = stepWith()
    expect(await judged(step, at(0))).toBeInstanceOf(ServiceUnavailableError)
    expect(events).toContainEqual(expect.objectContaining({ problem: 'subject' }))
  })

  it('is refused when expired, issued in the future, or naming another iss', async () => {
    lists.setStatuses([0])
    const now = Math.floor(Date.now() / 1000)
    for (const [claims, problem] of [
      [{ exp: now - 120 }, 'expired'],
      [{ iat: now + 3600 }, 'issued_in_future'],
      [{ iss: issuer.issuer('other') }, 'issuer'],
      [{ iat: undefined }, 'malformed'],
      [{ status_list: { bits: 3, lst: 'eNrbuRgAAhcBXQ' } }, 'malformed'],
      [{ status_list: { bits: 1, lst: 'not base64url!' } }, 'encoding'],
      [{ status_list: { bits: 1, lst: 'AAAA' } }, 'compression'],
    ] as const) {
      lists.claims = claims
      const { step, events } = stepWith()
      expect(await judged(step, at(0)), JSON.stringify(claims)).toBeInstanceOf(
        ServiceUnavailableError,
      )
      expect(events, JSON.stringify(claims)).toContainEqual(expect.objectContaining({ problem }))
    }
  })

  it('is refused with alg none, whatever the list says', async () => {
    const now = Math.floor(Date.now() / 1000)
    const enc = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
    lists.fault = {
      kind: 'body',
      body: `${enc({ alg: 'none', typ: 'statuslist+jwt' })}.${enc({ sub: lists.uri(), iat: now, status_list: { bits: 1, lst: 'eNrbuRgAAhcBXQ' } })}.`,
    }
    const { step, events } = stepWith()
    expect(await judged(step, at(1))).toBeInstanceOf(ServiceUnavailableError)
    // Refused before any key is looked up: no signature, or the algorithm not allowed.
    expect(events).toContainEqual(
      expect.objectContaining({ problem: expect.stringMatching(/^(malformed|algorithm)$/) }),
    )
  })

  it('decodes the draft’s own examples (1-bit and 2-bit)', async () => {
    const now = Math.floor(Date.now() / 1000)
    // §4.1: statuses 1,0,0,1,1,1,0,1, 1,1,0,0,0,1,0,1 are bytes 0xB9 0xA3.
    lists.claims = { iat: now, status_list: { bits: 1, lst: 'eNrbuRgAAhcBXQ' } }
    lists.setStatuses([0])
    const { step } = stepWith()
    const expected = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]
    for (const [idx, status] of expected.entries()) {
      const answer = await judged(step, at(idx))
      expect(answer === undefined ? 0 : 1, `index ${idx}`).toBe(status)
    }
    // The 2-bit example: 1,2,0,3, 0,1,0,1, 1,2,3,3 are bytes 0xC9 0x44 0xF9.
    lists.claims = { iat: now, status_list: { bits: 2, lst: 'eNo76fITAAPfAgc' } }
    const { step: two } = stepWith()
    const reasons = {
      0: undefined,
      1: 'status_invalid',
      2: 'status_suspended',
      3: 'status_unrecognized',
    }
    for (const [idx, status] of [1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3].entries()) {
      expect(reasonOf(await judged(two, at(idx))), `index ${idx}`).toBe(
        reasons[status as 0 | 1 | 2 | 3],
      )
    }
  })

  it('stops reading a list past maxListTokenBytes, and decompressing past maxListBytes', async () => {
    lists.fault = { kind: 'endless' }
    const { step, events } = stepWith({ options: { maxListTokenBytes: 65_536 } })
    expect(await judged(step, at(0))).toBeInstanceOf(ServiceUnavailableError)
    expect(events).toContainEqual(expect.objectContaining({ problem: 'too_large' }))
    lists.fault = undefined
    // A million statuses, all VALID: 125 000 bytes once inflated, a few hundred compressed.
    lists.setStatuses(new Array(1_000_000).fill(0), { path: '/lists/big' })
    const { step: small, events: smallEvents } = stepWith({ options: { maxListBytes: 100_000 } })
    expect(await judged(small, at(0, lists.uri('/lists/big')))).toBeInstanceOf(
      ServiceUnavailableError,
    )
    expect(smallEvents).toContainEqual(expect.objectContaining({ problem: 'too_large' }))
    const { step: enough } = stepWith()
    expect(await judged(enough, at(999_999, lists.uri('/lists/big')))).toBeUndefined()
    expect(reasonOf(await judged(enough, at(1_000_000, lists.uri('/lists/big'))))).toBe(
      'status_index',
    )
  })

  it('refuses redirects and error statuses: 503, never an admission', async () => {
    lists.setStatuses([0])
    for (const fault of [
      { kind: 'redirect', to: lists.uri('/lists/1') },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 404 },
    ] as const) {
      lists.fault = fault
      const { step } = stepWith()
      const answer = await judged(step, at(0))
      expect(answer, fault.kind).toBeInstanceOf(ServiceUnavailableError)
      expect((answer as ServiceUnavailableError).headers['Retry-After']).toBeDefined()
      expect((answer as ServiceUnavailableError).reason).toBe('status_list_unavailable')
    }
  })

  it('times out a list that never comes (timeoutMs), with 503', async () => {
    lists.fault = { kind: 'hang' }
    const { step } = stepWith({ options: { timeoutMs: 200 } })
    expect(await judged(step, at(0))).toBeInstanceOf(ServiceUnavailableError)
  })
})

describe('caching (ttl, exp) and failures', () => {
  it('keeps a list for its ttl clamped by min/maxCacheSeconds, then fetches it again in the background', async () => {
    lists.setStatuses([0, 0])
    const clock = { now: Date.now() }
    const { step } = stepWith({ options: { minCacheSeconds: 10, maxCacheSeconds: 60 }, clock })
    lists.claims = { ttl: 30 }
    expect(await judged(step, at(1))).toBeUndefined()
    lists.setStatus(1, 1)
    clock.now += 20_000
    // Held, fresh: no fetch yet, the old status still decides.
    expect(step.judge(at(1))).toBeUndefined()
    expect(lists.fetches.get('/lists/1')).toBe(1)
    // Past four fifths of its 30 s: answered from the list held while the new one is fetched.
    clock.now += 5_000
    expect(step.judge(at(1))).toBeUndefined()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(lists.fetches.get('/lists/1')).toBe(2)
    expect(reasonOf(step.judge(at(1)))).toBe('status_invalid')
  })

  it('never keeps a list past its exp, even with a longer ttl', async () => {
    lists.setStatuses([0])
    const clock = { now: Date.now() }
    const { step } = stepWith({ options: { maxCacheSeconds: 3600 }, clock })
    lists.claims = { ttl: 3600, exp: Math.floor(clock.now / 1000) + 60 }
    expect(await judged(step, at(0))).toBeUndefined()
    clock.now += 61_000
    const answer = step.judge(at(0))
    expect(answer).toBeInstanceOf(Promise)
    await (answer as Promise<void>).catch(() => undefined)
    expect(lists.fetches.get('/lists/1')).toBe(2)
  })

  it('answers 503 when a list past its time cannot be fetched again, and admits within staleIfErrorSeconds', async () => {
    lists.setStatuses([0])
    const clock = { now: Date.now() }
    const strict = stepWith({ options: { minCacheSeconds: 10, maxCacheSeconds: 10 }, clock })
    const lenient = stepWith({
      options: { minCacheSeconds: 10, maxCacheSeconds: 10, staleIfErrorSeconds: 60 },
      clock,
    })
    expect(await judged(strict.step, at(0))).toBeUndefined()
    expect(await judged(lenient.step, at(0))).toBeUndefined()
    lists.fault = { kind: 'status', status: 503 }
    clock.now += 11_000
    expect(await judged(strict.step, at(0))).toBeInstanceOf(ServiceUnavailableError)
    expect(await judged(lenient.step, at(0))).toBeUndefined()
    clock.now += 61_000
    expect(await judged(lenient.step, at(0))).toBeInstanceOf(ServiceUnavailableError)
  })

  it('backs off after a failed fetch instead of fetching on every request', async () => {
    lists.fault = { kind: 'status', status: 500 }
    const clock = { now: Date.now() }
    const { step } = stepWith({ clock })
    for (let i = 0; i < 10; i++) await judged(step, at(0))
    expect(lists.fetches.get('/lists/1')).toBe(1)
    clock.now += 1_500
    await judged(step, at(0))
    expect(lists.fetches.get('/lists/1')).toBe(2)
  })

  it('holds at most maxLists lists', async () => {
    for (let i = 0; i < 5; i++) lists.setStatuses([0], { path: `/many/${i}` })
    const { step } = stepWith({ options: { maxLists: 2 } })
    for (let i = 0; i < 5; i++) await judged(step, at(0, lists.uri(`/many/${i}`)))
    await judged(step, at(0, lists.uri('/many/0')))
    expect(lists.fetches.get('/many/0')).toBe(2)
  })
})
