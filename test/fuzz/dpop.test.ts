/**
 * DPoP proofs over HTTP: one valid bound token and a fresh proof per run, one character of the
 * proof replaced, sent to the Express 5 and Koa 3 apps with DPoP allowed. Both must answer the
 * same; 200 only for an untouched proof (canonical base64url and the signature leave no other
 * spelling), otherwise a 400 or 401 with the JSON error body; never a 500.
 */
import type { Server } from 'node:http'

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createDpopKey,
  createTestIssuer,
  type TestDpopKey,
  type TestIssuer,
} from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { APPS } from '../helpers/apps.js'
import { type Answer, expectHygiene, type Probe, ROUTE, send } from '../security/helpers.js'
import { runs, TIMEOUT_MS, TOKEN_CHARS, watchUnhandled } from './fixture.js'

const BASE = 'https://api.example.test'
let issuer: TestIssuer
let key: TestDpopKey
let token: string
const servers: Server[] = []
const unhandled = watchUnhandled()

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], algorithms: ['ES256'], audience: 'gateway' })
  key = await createDpopKey('ES256')
  token = await issuer.mint({}, { dpop: key, expiresInSeconds: 3600 })
  const options = {
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    dpop: { mode: 'allowed' as const, publicBaseUrl: BASE },
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

describe('DPoP proofs over HTTP (Express 5 and Koa 3)', () => {
  it(
    'never admits a proof with one character changed, and admits the untouched one once',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.nat(),
          fc.constantFrom(...TOKEN_CHARS.filter((char) => char.trim() !== '')),
          async (at, char) => {
            const proof = await key.proof({
              method: 'GET',
              url: `${BASE}${ROUTE}`,
              accessToken: token,
            })
            const position = at % proof.length
            const mutated = proof.slice(0, position) + char + proof.slice(position + 1)
            const answer = await askBoth({
              authorization: `DPoP ${token}`,
              headers: [['DPoP', mutated]],
            })
            expect(answer.status === 200).toBe(mutated === proof)
          },
        ),
        { numRuns: runs(0.01) },
      )
    },
    TIMEOUT_MS,
  )
})
