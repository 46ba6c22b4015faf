/**
 * Properties over token bytes and over header/claims JSON, through `gate.check`:
 * - a mutated token is never admitted (unless the mutation gave back the very same string);
 * - random segments are never admitted;
 * - for tokens genuinely signed over generated headers and claims, the gate's verdict equals an
 *   independent oracle written from RFC 7519/8725/9068 and the product decisions: 200 exactly
 *   when every rule holds, `token expired` exactly when only the expiry fails, else invalid_token.
 */
import type { KeyObject } from 'node:crypto'

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

import { createGate, type Gate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { b64, decode, type Json, parts, privateKeyOf, signWith } from '../security/tokens.js'
import { judge, runs, TIMEOUT_MS, TOKEN_CHARS, watchUnhandled } from './fixture.js'

const NOW_MS = Date.UTC(2033, 5, 1)
const NOW = NOW_MS / 1000
const TOLERANCE = 5

let issuer: TestIssuer
let gate: Gate
let kid: string
let key: KeyObject
let trusted: string
let valid: string[]
const unhandled = watchUnhandled()

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'], now: NOW_MS })
  issuer = await createTestIssuer({ realms: ['acme'], algorithms: ['ES256'], audience: 'gateway' })
  gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  })
  valid = await Promise.all(
    Array.from({ length: 8 }, (_, index) =>
      issuer.mint({ sub: `u${index}` }, { expiresInSeconds: 3600 }),
    ),
  )
  kid = decode(parts(valid[0] as string)[0])['kid'] as string
  key = privateKeyOf(issuer, kid)
  trusted = issuer.issuer('acme')
  await gate.ready()
})
afterAll(async () => {
  vi.useRealTimers()
  unhandled.stop()
  expect(unhandled.seen).toEqual([])
  await issuer.close()
})

const check = (token: string) => judge(gate, { headers: { authorization: `Bearer ${token}` } })

/** Whitespace is left out: `Bearer  <token>` is a legitimate spelling (see authorization.test.ts). */
const MUTATION_CHARS = TOKEN_CHARS.filter((char) => char.trim() !== '')

type Mutation = (token: string, at: number, char: string) => string
const MUTATIONS: Array<[string, Mutation]> = [
  ['replace', (t, at, c) => t.slice(0, at % t.length) + c + t.slice((at % t.length) + 1)],
  ['insert', (t, at, c) => t.slice(0, at % (t.length + 1)) + c + t.slice(at % (t.length + 1))],
  ['delete', (t, at) => t.slice(0, at % t.length) + t.slice((at % t.length) + 1)],
  ['truncate', (t, at) => t.slice(0, at % t.length)],
  [
    'swap segments',
    (t, at) => {
      const [h, p, s] = parts(t)
      return (
        [
          [p, h, s],
          [h, s, p],
          [s, p, h],
        ][at % 3]?.join('.') ?? t
      )
    },
  ],
  [
    'flip a bit in a segment',
    (t, at) => {
      const segments = parts(t)
      const which = at % 3
      const bytes = Buffer.from(segments[which] as string, 'base64url')
      if (bytes.length === 0) return t
      const index = Math.floor(at / 3) % bytes.length
      bytes[index] = (bytes[index] as number) ^ (1 << (at % 8))
      segments[which] = bytes.toString('base64url')
      return segments.join('.')
    },
  ],
  [
    'splice with another token',
    (t, at) => {
      const other = valid[at % valid.length] as string
      const mine = parts(t)
      const theirs = parts(other)
      const pick = at % 3
      mine[pick] = theirs[pick] as string
      return mine.join('.')
    },
  ],
]

describe('token bytes', () => {
  it(
    'never admits a mutated token',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 7 }),
          fc.array(
            fc.tuple(
              fc.integer({ min: 0, max: MUTATIONS.length - 1 }),
              fc.nat(),
              fc.constantFrom(...MUTATION_CHARS),
            ),
            { minLength: 1, maxLength: 3 },
          ),
          async (index, steps) => {
            const original = valid[index] as string
            let token = original
            for (const [mutation, at, char] of steps)
              token = (MUTATIONS[mutation] as [string, Mutation])[1](token, at, char)
            const verdict = await check(token)
            if (valid.includes(token)) expect(verdict.status).toBe(200)
            else expect(verdict.status).not.toBe(200)
          },
        ),
        { numRuns: runs(0.2) },
      )
    },
    TIMEOUT_MS,
  )

  it(
    'never admits random segments, whatever bytes they decode to',
    async () => {
      const segment = fc.oneof(
        fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
        fc.jsonValue({ maxDepth: 3 }).map((value) => b64(JSON.stringify(value) ?? 'null')),
        fc.constant(''),
      )
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 6 }), async (segments) => {
          expect((await check(segments.join('.'))).status).not.toBe(200)
        }),
        { numRuns: runs(0.07) },
      )
    },
    TIMEOUT_MS,
  )
})

// ---- Generated headers and claims, genuinely signed, judged by an independent oracle. ----

const UNDEFINED = undefined
/** Boundary values around now, a spread biased towards `side`, and the odd extreme. */
const numericDate = (offsets: number[], side: 'past' | 'future') =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...offsets.map((offset) => NOW + offset)) },
    {
      weight: 4,
      arbitrary:
        side === 'future'
          ? fc.double({ min: NOW - 100, max: NOW + 100_000, noNaN: true })
          : fc.double({ min: NOW - 100_000, max: NOW + 100, noNaN: true }),
    },
    { weight: 1, arbitrary: fc.integer({ min: -1, max: 2 ** 40 }) },
  )
const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 12 }),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.constant({}),
)

/** Mostly absent; sometimes one of `arbitrary`'s values. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight = 3) =>
  fc.oneof({ weight, arbitrary: fc.constant(UNDEFINED) }, { weight: 1, arbitrary })

const headerArb = fc.record({
  alg: fc.oneof(
    { weight: 16, arbitrary: fc.constant('ES256') },
    {
      weight: 1,
      arbitrary: fc.constantFrom('RS256', 'none', 'HS256', 'ES384', 'es256', 'EdDSA', ''),
    },
    { weight: 1, arbitrary: junk },
  ),
  kid: fc.oneof(
    { weight: 16, arbitrary: fc.constant('KID') },
    { weight: 2, arbitrary: fc.constantFrom(UNDEFINED, 'other', '', 'KID ') },
    { weight: 1, arbitrary: junk },
  ),
  typ: sometimes(
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc.constantFrom(
          'JWT',
          'jwt',
          'at+jwt',
          'AT+JWT',
          'application/at+jwt',
          'application/jwt',
        ),
      },
      { weight: 2, arbitrary: fc.constantFrom('logout+jwt', 'id_token+jwt', 'Bearer') },
      { weight: 1, arbitrary: junk },
    ),
    1,
  ),
  extension: sometimes(
    fc.constantFrom<Json>(
      { crit: ['exp'] },
      { crit: [] },
      { b64: false },
      { b64: true },
      { crit: null },
    ),
    16,
  ),
  ignored: sometimes(
    fc.constantFrom<Json>(
      { jku: 'https://attacker.example/jwks' },
      { jwk: { kty: 'oct', k: 'AAAA' } },
      { x5u: 'https://attacker.example/cert' },
      { cty: 'JWT' },
    ),
    2,
  ),
})

const claimsArb = fc.record({
  iss: fc.oneof(
    { weight: 16, arbitrary: fc.constant('ISS') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'ISS/',
        'https://evil.example/realms/acme',
        'ISS_OTHER_REALM',
        UNDEFINED,
      ),
    },
    { weight: 1, arbitrary: junk },
  ),
  aud: fc.oneof(
    { weight: 12, arbitrary: fc.constant('gateway') },
    {
      weight: 3,
      arbitrary: fc.array(fc.constantFrom('gateway', 'office', 'api'), { maxLength: 3 }),
    },
    { weight: 1, arbitrary: fc.constantFrom('office', 'Gateway', 'gateway ', UNDEFINED) },
    {
      weight: 1,
      arbitrary: fc.array(fc.oneof(fc.constant('gateway'), fc.integer()), { maxLength: 3 }),
    },
    { weight: 1, arbitrary: junk },
  ),
  exp: fc.oneof(
    {
      weight: 16,
      arbitrary: numericDate([-TOLERANCE - 1, -TOLERANCE, -TOLERANCE + 1, 0, 60, 3600], 'future'),
    },
    { weight: 1, arbitrary: fc.constant(UNDEFINED) },
    { weight: 1, arbitrary: junk },
  ),
  nbf: sometimes(
    fc.oneof(
      { weight: 6, arbitrary: numericDate([TOLERANCE - 1, TOLERANCE, TOLERANCE + 1, -60], 'past') },
      { weight: 1, arbitrary: junk },
    ),
    2,
  ),
  iat: sometimes(
    fc.oneof(
      { weight: 6, arbitrary: numericDate([TOLERANCE - 1, TOLERANCE, TOLERANCE + 1, -60], 'past') },
      { weight: 1, arbitrary: junk },
    ),
    1,
  ),
  typ: sometimes(
    fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('Bearer', 'bearer', 'BEARER') },
      { weight: 2, arbitrary: fc.constantFrom('ID', 'Refresh', 'Logout', 'Offline') },
      { weight: 1, arbitrary: junk },
    ),
    1,
  ),
  sub: sometimes(
    fc.oneof(
      { weight: 6, arbitrary: fc.string({ maxLength: 10 }) },
      { weight: 1, arbitrary: junk },
    ),
    1,
  ),
  scope: sometimes(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('openid', 'billing:read profile', '') },
      { weight: 1, arbitrary: fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }) },
      { weight: 1, arbitrary: junk },
    ),
    1,
  ),
  // A claim only ID tokens carry: refused on a token with no access-token marker.
  nonce: sometimes(fc.constantFrom('n-1', 'abc'), 3),
  events: sometimes(
    fc.oneof(
      fc.constant({ 'http://schemas.openid.net/event/backchannel-logout': {} }),
      fc.constant({ other: {} }),
      junk,
    ),
    6,
  ),
  extra: fc.dictionary(
    fc.string({ minLength: 1, maxLength: 8 }).map((name) => `x_${name}`),
    fc.jsonValue({ maxDepth: 2 }),
    { maxKeys: 4 },
  ),
})

/** The object without its `undefined` members (what JSON would carry). */
function defined(record: Json): Json {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== UNDEFINED))
}

// RFC 7519 §2: fractions allowed; non-finite values and anything beyond ±2^53 s refused.
const isNumericDate = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
const ACCESS_TYPES = new Set(['jwt', 'application/jwt', 'at+jwt', 'application/at+jwt'])

/** What a correct gate answers, from the rules alone. */
function oracle(header: Json, claims: Json, token: string): { status: number; code?: string } {
  const invalid = { status: 401, code: 'ERR_TOKEN_INVALID' }
  if (token.length > 8192) return invalid
  if (header['alg'] !== 'ES256') return invalid
  if ('crit' in header || 'b64' in header) return invalid
  if ('kid' in header && header['kid'] !== kid) return invalid
  if (claims['iss'] !== trusted) return invalid
  const { exp, nbf, iat, aud, typ, sub, scope, nonce, events } = claims
  if (!isNumericDate(exp)) return invalid
  if (nbf !== UNDEFINED && (!isNumericDate(nbf) || nbf > NOW + TOLERANCE)) return invalid
  if (iat !== UNDEFINED && (!isNumericDate(iat) || iat > NOW + TOLERANCE)) return invalid
  const audiences = typeof aud === 'string' ? [aud] : aud
  if (
    !Array.isArray(audiences) ||
    audiences.length === 0 ||
    audiences.some((item) => typeof item !== 'string')
  )
    return invalid
  if (!audiences.includes('gateway')) return invalid
  const headerType = header['typ']
  if (
    headerType !== UNDEFINED &&
    (typeof headerType !== 'string' || !ACCESS_TYPES.has(headerType.toLowerCase()))
  )
    return invalid
  if (typ !== UNDEFINED && (typeof typ !== 'string' || typ.toLowerCase() !== 'bearer'))
    return invalid
  if (
    typeof events === 'object' &&
    events !== null &&
    Object.hasOwn(events, 'http://schemas.openid.net/event/backchannel-logout')
  )
    return invalid
  if (sub !== UNDEFINED && (typeof sub !== 'string' || sub === '')) return invalid
  if (scope !== UNDEFINED && typeof scope !== 'string') return invalid
  const accessMarked =
    (typeof headerType === 'string' && headerType.toLowerCase().endsWith('at+jwt')) ||
    typ !== UNDEFINED ||
    scope !== UNDEFINED
  if (!accessMarked && nonce !== UNDEFINED) return invalid
  if (exp + TOLERANCE <= NOW) return { status: 401, code: 'ERR_TOKEN_EXPIRED' }
  return { status: 200 }
}

describe('generated headers and claims, genuinely signed', () => {
  it(
    'agrees with the oracle on every token',
    async () => {
      await fc.assert(
        fc.asyncProperty(headerArb, claimsArb, async (headerDraft, claimsDraft) => {
          const { extension, ignored, ...headerNamed } = headerDraft
          const header: Json = defined({ ...headerNamed, ...extension, ...ignored })
          if (header['kid'] === 'KID') header['kid'] = kid
          const { extra, ...named } = claimsDraft
          const claims: Json = defined({ ...extra, ...named })
          if (claims['iss'] === 'ISS') claims['iss'] = trusted
          if (claims['iss'] === 'ISS/') claims['iss'] = `${trusted}/`
          if (claims['iss'] === 'ISS_OTHER_REALM') claims['iss'] = issuer.issuer('other')
          const token = signWith(key, 'ES256', header, claims)
          const verdict = await check(token)
          const expected = oracle(header, JSON.parse(JSON.stringify(claims)) as Json, token)
          expect({ status: verdict.status, code: verdict.code }).toEqual({
            status: expected.status,
            code: expected.code,
          })
        }),
        { numRuns: runs(0.3) },
      )
    },
    TIMEOUT_MS,
  )
})
