/**
 * A smaller property run over real HTTP: Authorization values and mutated tokens sent to the
 * Express 5 and Koa 3 apps must get the same answer from both, 200 only for a minted token in an
 * RFC 6750 spelling, otherwise 400 or 401 with the JSON error body; never a 500.
 */
import type { Server } from 'node:http'

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { type Answer, expectHygiene, type Probe, send } from '../security/helpers.js'
import { runs, TIMEOUT_MS, TOKEN_CHARS, watchUnhandled } from './fixture.js'

let issuer: TestIssuer
let valid: string[]
const servers: Server[] = []
const unhandled = watchUnhandled()

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], algorithms: ['ES256'], audience: 'gateway' })
  valid = await Promise.all(
    Array.from({ length: 4 }, () => issuer.mint({}, { expiresInSeconds: 3600 })),
  )
  const options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
  }
  for (const [name, createApp] of APPS) {
    if (name !== 'express 5' && name !== 'koa 3') continue
    const server = createApp(options)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
  }
})
afterAll(async () => {
  unhandled.stop()
  expect(unhandled.seen).toEqual([])
  for (const server of servers) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  await issuer.close()
})

/** Characters HTTP allows in a field value (RFC 9110 §5.5), latin-1 included. */
const FIELD_CHARS = [
  '\t',
  ...Array.from({ length: 0x7f - 0x20 }, (_, index) => String.fromCharCode(0x20 + index)),
  ...Array.from({ length: 0x100 - 0x80 }, (_, index) => String.fromCharCode(0x80 + index)),
]

function admissible(value: string): boolean {
  const match = /^[ \t]*bearer +(\S+)[ \t]*$/i.exec(value)
  return match !== null && valid.includes(match[1] as string)
}

async function askBoth(probe: Probe): Promise<Answer> {
  const answers = await Promise.all(servers.map((server) => send(server, probe)))
  const [first] = answers as [Answer, Answer]
  for (const answer of answers) {
    expectHygiene(probe, answer)
    expect([200, 400, 401]).toContain(answer.status)
    expect([answer.status, answer.challenge, answer.body]).toEqual([
      first.status,
      first.challenge,
      first.body,
    ])
  }
  return first
}

describe('over HTTP (Express 5 and Koa 3)', () => {
  it(
    'answers arbitrary Authorization values the same on both, 200 only for a minted token',
    async () => {
      const value = fc.oneof(
        fc.array(fc.constantFrom(...FIELD_CHARS), { maxLength: 80 }).map((chars) => chars.join('')),
        fc
          .tuple(
            fc.constantFrom('Bearer ', 'bearer  ', 'Basic ', 'Bearer', 'DPoP '),
            fc.integer({ min: 0, max: 3 }),
            fc.array(fc.constantFrom(...FIELD_CHARS), { maxLength: 4 }),
          )
          .map(([scheme, index, tail]) => `${scheme}${valid[index]}${tail.join('')}`),
      )
      await fc.assert(
        fc.asyncProperty(value, async (authorization) => {
          const answer = await askBoth({ authorization })
          expect(answer.status === 200).toBe(admissible(authorization))
        }),
        { numRuns: runs(0.03) },
      )
    },
    TIMEOUT_MS,
  )

  it(
    'never admits a mutated token over HTTP',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 3 }),
          fc.nat(),
          fc.constantFrom(...TOKEN_CHARS.filter((char) => char.trim() !== '')),
          async (index, at, char) => {
            const token = valid[index] as string
            const position = at % token.length
            const mutated = token.slice(0, position) + char + token.slice(position + 1)
            const answer = await askBoth({ authorization: `Bearer ${mutated}` })
            expect(answer.status === 200).toBe(mutated === token)
          },
        ),
        { numRuns: runs(0.02) },
      )
    },
    TIMEOUT_MS,
  )
})
