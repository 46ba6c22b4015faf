/**
 * Properties over Authorization header values and the rest of the request shape, through
 * `gate.check`: a request is admitted only when it carries, in an RFC 6750 spelling, a token the
 * issuer really minted; everything else is a TollgateError with 400 or 401, never a throw of
 * another kind, a 500, a 503 or an unhandled rejection.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createGate, type Gate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { judge, runs, TIMEOUT_MS, TOKEN_CHARS, watchUnhandled } from './fixture.js'

let issuer: TestIssuer
let gate: Gate
let valid: string[]
const unhandled = watchUnhandled()

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], algorithms: ['ES256'], audience: 'gateway' })
  gate = createGate({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  })
  valid = await Promise.all(
    Array.from({ length: 4 }, (_, index) =>
      issuer.mint({ sub: `user-${index}` }, { expiresInSeconds: 3600 }),
    ),
  )
  await gate.ready()
})
afterAll(async () => {
  unhandled.stop()
  expect(unhandled.seen).toEqual([])
  await issuer.close()
})

/**
 * The one shape of Authorization value that must be admitted: scheme, spaces, a minted token.
 * (Leading and trailing whitespace never reaches the core: HTTP parsers strip it.)
 */
function admissible(value: string): boolean {
  const match = /^bearer +(\S+)$/i.exec(value)
  return match !== null && valid.includes(match[1] as string)
}

const tokenish = fc.oneof(
  fc
    .constantFrom(...TOKEN_CHARS)
    .chain((first) =>
      fc
        .array(fc.constantFrom(...TOKEN_CHARS), { maxLength: 120 })
        .map((rest) => first + rest.join('')),
    ),
  fc.integer({ min: 0, max: 3 }).map((index) => valid[index] as string),
  fc
    .tuple(fc.integer({ min: 0, max: 3 }), fc.nat(), fc.constantFrom(...TOKEN_CHARS))
    .map(([index, at, char]) => {
      const token = valid[index] as string
      const position = at % (token.length + 1)
      return token.slice(0, position) + char + token.slice(position)
    }),
  fc.tuple(fc.integer({ min: 0, max: 3 }), fc.nat()).map(([index, at]) => {
    const token = valid[index] as string
    const position = at % token.length
    return token.slice(0, position) + token.slice(position + 1)
  }),
)

const scheme = fc.constantFrom(
  'Bearer',
  'bearer',
  'BEARER',
  'bEaReR',
  'Basic',
  'DPoP',
  'Token',
  'Bearer,',
  '',
  'Bearer:',
  'B',
)
const gap = fc.constantFrom(' ', '  ', '\t', '', ' \t', '   ')

const authorization = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.tuple(gap, scheme, gap, tokenish, gap).map((parts) => parts.join('')),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        scheme,
        fc.constant(' '),
        tokenish,
        fc.constantFrom(' ', ',', ', '),
        scheme,
        fc.constant(' '),
        tokenish,
      )
      .map((parts) => parts.join('')),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((text) => `Bearer ${text}`),
  },
)

describe('Authorization values', () => {
  it(
    'admits only an RFC 6750 spelling of a minted token, and answers 400/401 to everything else',
    async () => {
      await fc.assert(
        fc.asyncProperty(authorization, async (value) => {
          const verdict = await judge(gate, { headers: { authorization: value } })
          if (verdict.status === 200) expect(admissible(value)).toBe(true)
          if (admissible(value)) expect(verdict.status).toBe(200)
        }),
        { numRuns: runs(0.25) },
      )
    },
    TIMEOUT_MS,
  )

  it(
    'never admits when the field is repeated, the token is also in the query or body, or the field is an array',
    async () => {
      const extra = fc.oneof(
        fc.record({ rawHeaders: fc.constant(['Authorization', 'x', 'authorization', 'y']) }),
        fc.record({
          url: fc.oneof(
            fc.constant('/?access_token'),
            fc
              .tuple(
                fc.constantFrom('/?access_token=', '/x?a=1&access_token=', '/?b&access_token='),
                fc.string({ maxLength: 20 }),
              )
              .map(([path, value]) => path + encodeURIComponent(value)),
          ),
        }),
        fc.record({
          body: fc.dictionary(fc.constantFrom('access_token'), fc.string({ maxLength: 10 }), {
            minKeys: 1,
          }),
        }),
        fc.record({ authorizationArray: fc.constant(true) }),
      )
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 3 }),
          scheme,
          extra,
          async (index, schemeName, shape) => {
            const value = `${schemeName === '' ? 'Bearer' : schemeName} ${valid[index]}`
            const { authorizationArray, ...rest } = shape as { authorizationArray?: boolean }
            const headers = { authorization: authorizationArray ? [value, value] : value }
            const verdict = await judge(gate, { headers, ...rest })
            expect(verdict.status).not.toBe(200)
          },
        ),
        { numRuns: runs(0.05) },
      )
    },
    TIMEOUT_MS,
  )

  it(
    'answers arbitrary request shapes with a TollgateError or an admission, never a crash',
    async () => {
      const headerValue = fc.oneof(
        fc.string({ maxLength: 60 }),
        fc.array(fc.string({ maxLength: 30 }), { maxLength: 3 }),
        fc.constant(undefined),
      )
      await fc.assert(
        fc.asyncProperty(
          fc.dictionary(
            fc.constantFrom('authorization', 'cookie', 'x-access-token', 'proxy-authorization'),
            headerValue,
          ),
          fc.option(fc.array(fc.string({ maxLength: 20 }), { maxLength: 8 }), { nil: undefined }),
          fc.option(fc.string({ maxLength: 80 }), { nil: undefined }),
          fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
          async (headers, rawHeaders, url, body) => {
            const verdict = await judge(gate, { headers, rawHeaders, url, body })
            expect([200, 400, 401]).toContain(verdict.status)
          },
        ),
        { numRuns: runs(0.05) },
      )
    },
    TIMEOUT_MS,
  )
})
