/**
 * Properties over what the identity provider sends back: whatever JSON the certs endpoint
 * returns, a request is admitted only when the document carries the genuine key, refused with
 * 401 (key not there) or 503 (no usable keys at all), and never fails with anything that is not a
 * TollgateError.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { isTollgateError } from '../../src/errors.js'
import { createGate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import type { Json } from '../security/tokens.js'
import { runs, TIMEOUT_MS, watchUnhandled } from './fixture.js'

let issuer: TestIssuer
let token: string
let genuine: Json
const unhandled = watchUnhandled()

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], algorithms: ['ES256'], audience: 'gateway' })
  token = await issuer.mint({}, { expiresInSeconds: 3600 })
  genuine = issuer.jwks('acme').keys[0] as Json
})
afterAll(async () => {
  unhandled.stop()
  expect(unhandled.seen).toEqual([])
  await issuer.close()
})

/** The genuine key with some members changed, dropped or added. */
const mutatedKey = fc
  .record({
    drop: fc.subarray(['kid', 'alg', 'use', 'crv', 'x', 'y', 'kty']),
    change: fc.dictionary(
      fc.constantFrom('kid', 'alg', 'use', 'crv', 'kty', 'key_ops', 'd', 'x'),
      fc.oneof(
        fc.constantFrom(
          'sig',
          'enc',
          'ES256',
          'RS256',
          'P-384',
          'RSA',
          'EC',
          'oct',
          ['verify'],
          ['sign'],
          'AAAA',
        ),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      { maxKeys: 3 },
    ),
  })
  .map(({ drop, change }) => {
    const key: Json = { ...genuine, ...change }
    for (const name of drop) delete key[name]
    return key
  })

const document = fc.oneof(
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.oneof(
          mutatedKey,
          fc.constant(null).map(() => genuine),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        { maxLength: 5 },
      )
      .map((keys) => ({ keys })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.jsonValue({ maxDepth: 2 }), fc.array(mutatedKey, { maxLength: 3 }))
      .map((keys) => ({ keys })),
  },
)

/** Whether a correct gate may verify the token with some key of `doc`. */
function carriesGenuineKey(doc: unknown): boolean {
  const keys = (doc as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys)) return false
  return keys.some((key) => {
    if (typeof key !== 'object' || key === null) return false
    const k = key as Json
    return (
      k['kty'] === 'EC' &&
      k['crv'] === 'P-256' &&
      k['x'] === genuine['x'] &&
      k['y'] === genuine['y']
    )
  })
}

describe('key set documents', () => {
  it(
    'admits only with the genuine key, otherwise 401 or 503, never an error of another kind',
    async () => {
      await fc.assert(
        fc.asyncProperty(document, async (doc) => {
          const gate = createGate({
            issuers: [{ issuer: issuer.issuer('acme'), jwksUri: issuer.jwksUri('acme') }],
            audience: 'gateway',
            jwks: {
              fetch: async () =>
                new Response(JSON.stringify(doc), {
                  headers: { 'content-type': 'application/json' },
                }),
            },
            // An unusable document is reported by an event; the property is about the answers.
            onEvent: () => {},
          })
          let status = 200
          try {
            await gate.check({ headers: { authorization: `Bearer ${token}` } })
          } catch (error) {
            if (!isTollgateError(error)) throw new Error(`not a TollgateError: ${String(error)}`)
            status = error.status
          }
          expect([200, 401, 503]).toContain(status)
          if (status === 200) expect(carriesGenuineKey(doc)).toBe(true)
          if (!carriesGenuineKey(doc)) expect(status).not.toBe(200)
        }),
        { numRuns: runs(0.03) },
      )
    },
    TIMEOUT_MS,
  )
})
