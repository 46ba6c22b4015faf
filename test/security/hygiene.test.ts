/**
 * Attack class: error hygiene (RFC 6750 §3, RFC 8725 §2.8). No 500, no stack, nothing from the
 * token or from a dependency echoed in headers, body, error objects or events; and every refusal
 * of a token whose signature was not verified looks exactly the same, so an attacker learns
 * nothing about which check failed.
 */
import { inspect } from 'node:util'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { isTollgateError } from '../../src/errors.js'
import type { GateEvent } from '../../src/events.js'
import { createGate } from '../../src/gate/gate.js'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  type Answer,
  bearer,
  INVALID_TOKEN,
  MISSING,
  type Probe,
  ROUTE,
  UNAVAILABLE,
  useApps,
} from './helpers.js'
import {
  accessClaims,
  attackerKey,
  b64,
  compact,
  hmacToken,
  type Json,
  kidOf,
  parts,
  privateKeyOf,
  signWith,
} from './tokens.js'

let issuer: TestIssuer
let kid: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'other'], audience: 'gateway' })
  kid = await kidOf(issuer, 'RS256')
})
afterAll(async () => {
  await issuer.close()
})

const options = () => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
})

const MARKERS = [
  'MARKERSUB',
  'MARKERISS',
  'MARKERKID',
  'MARKERAUD',
  'MARKERTYP',
  'MARKERJTI',
  'MARKERALG',
]

/** Genuinely signed, with `overrides` on good claims. */
function genuine(overrides: Json, header: Json = {}): string {
  return signWith(
    privateKeyOf(issuer, kid),
    'RS256',
    { alg: 'RS256', typ: 'JWT', kid, ...header },
    accessClaims(issuer, { exp: 4_102_444_800, ...overrides }),
  )
}

/**
 * Tokens refused for very different reasons, most before any signature is checked. Each one
 * carries marker strings in the places an error message might quote.
 */
function refusedTokens(): Array<[string, string]> {
  const marked = accessClaims(issuer, {
    sub: '<script>MARKERSUB</script>',
    jti: 'MARKERJTI',
    exp: 4_102_444_800,
  })
  const attacker = attackerKey('rsa').privateKey
  const valid = genuine({})
  const [h, p, s] = parts(valid)
  return [
    ['one segment', 'MARKERSUB'],
    ['four segments', `${valid}.${s}`],
    ['header not JSON', `${b64('{MARKERALG')}.${p}.${s}`],
    ['payload not JSON', `${h}.${b64('MARKERSUB}')}.${s}`],
    ['payload an array', `${h}.${b64(['MARKERSUB'])}.${s}`],
    ['non-canonical base64url', `${h}.${p}.${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`],
    ['alg none', compact({ alg: 'none', kid: 'MARKERKID' }, marked)],
    ['alg MARKERALG', compact({ alg: 'MARKERALG', kid }, marked, Buffer.alloc(256))],
    ['alg HS256 with the PEM', hmacToken({ alg: 'HS256', kid }, marked, 'MARKER')],
    ['kid a number', compact({ alg: 'RS256', kid: 7 }, marked, Buffer.alloc(256))],
    [
      'kid too long',
      compact({ alg: 'RS256', kid: `MARKERKID${'k'.repeat(300)}` }, marked, Buffer.alloc(256)),
    ],
    ['crit', genuine({}, { crit: ['MARKERALG'], MARKERALG: 1 })],
    [
      'untrusted issuer',
      signWith(
        attacker,
        'RS256',
        { alg: 'RS256', kid },
        { ...marked, iss: 'https://MARKERISS.example/realms/acme' },
      ),
    ],
    [
      'issuer of an untrusted realm',
      signWith(
        privateKeyOf(issuer, kid),
        'RS256',
        { alg: 'RS256', kid },
        { ...marked, iss: issuer.issuer('other') },
      ),
    ],
    ['unknown kid', signWith(attacker, 'RS256', { alg: 'RS256', kid: 'MARKERKID' }, marked)],
    ['forged signature, trusted kid', signWith(attacker, 'RS256', { alg: 'RS256', kid }, marked)],
    [
      'forged signature, expired',
      signWith(attacker, 'RS256', { alg: 'RS256', kid }, { ...marked, exp: 1 }),
    ],
    ['signature stripped', `${h}.${p}.`],
    ['oversized', `${h}.${b64({ ...marked, pad: 'MARKERSUB'.repeat(1000) })}.${s}`],
    [
      'JWE',
      `${b64({ alg: 'RSA-OAEP', enc: 'A256GCM', kid: 'MARKERKID' })}.AAAA.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA`,
    ],
    // Genuine signatures refused by a claim check: the same answer as a forgery.
    ['genuine, wrong audience', genuine({ aud: 'MARKERAUD' })],
    ['genuine, refresh token', genuine({ typ: 'Refresh' })],
    ['genuine, ID token by header typ', genuine({}, { typ: 'MARKERTYP' })],
    ['genuine, exp missing', genuine({ exp: undefined })],
    ['genuine, nbf in the future', genuine({ nbf: 4_000_000_000 })],
    ['genuine, iat in the future', genuine({ iat: 4_000_000_000 })],
    ['genuine, sub not a string', genuine({ sub: ['MARKERSUB'] })],
  ]
}

/** Everything in an answer except what legitimately varies between two requests. */
function fingerprint(answer: Answer): unknown {
  const headers = { ...answer.headers }
  delete headers['date']
  return { status: answer.status, headers, text: answer.text }
}

function expectNoMarkers(text: string): void {
  for (const marker of MARKERS) expect(text).not.toContain(marker)
}

describe('answers over HTTP', () => {
  const apps = useApps(options)

  it('gives one and the same answer, byte for byte, to every refused token', async () => {
    const seen: unknown[][] = apps.servers.map(() => [])
    for (const [name, token] of refusedTokens()) {
      const answers = await apps.expectAll(bearer(token), INVALID_TOKEN)
      answers.forEach((answer, index) => {
        expectNoMarkers(answer.raw)
        seen[index]?.push({ name, ...(fingerprint(answer) as object) })
      })
    }
    for (const answers of seen) {
      const [first] = answers as Array<{ name: string }>
      for (const answer of answers as Array<{ name: string }>) {
        expect({ ...answer, name: first?.name }).toEqual(first)
      }
    }
  })

  it.each([
    ['HEAD', 'HEAD', ROUTE],
    ['OPTIONS', 'OPTIONS', ROUTE],
    ['DELETE', 'DELETE', ROUTE],
    ['PUT on a path that does not exist', 'PUT', '/nothing/here'],
    ['GET on a path with traversal', 'GET', '/api/../../etc/passwd'],
  ])('refuses a forged token the same way for %s', async (_name, method, path) => {
    const token = signWith(
      attackerKey('rsa').privateKey,
      'RS256',
      { alg: 'RS256', kid },
      accessClaims(issuer),
    )
    const probe: Probe = { ...bearer(token), method, path }
    const answers = await apps.askAll(probe)
    for (const answer of answers) {
      expect(answer.status).toBe(401)
      expect(answer.challenge).toBe(INVALID_TOKEN.challenge)
      if (method !== 'HEAD') expect(answer.body).toEqual(INVALID_TOKEN.body)
    }
  })

  it('never reflects header lines of the request', async () => {
    const answers = await apps.expectAll(
      {
        authorization: 'Basic MARKERSUB',
        headers: [
          ['X-Forwarded-For', 'MARKERISS'],
          ['Origin', 'https://MARKERAUD.example'],
          ['Cookie', 'session=MARKERJTI'],
        ],
      },
      MISSING,
    )
    for (const answer of answers) expectNoMarkers(answer.raw)
  })

  it('keeps every error_description to a short fixed vocabulary', async () => {
    const descriptions = new Set<string>()
    for (const [, token] of refusedTokens().slice(0, 8)) {
      for (const answer of await apps.askAll(bearer(token))) {
        descriptions.add((answer.body as { error_description: string }).error_description)
      }
    }
    for (const probe of [{}, { authorization: 'Bearer' }, { authorization: 'Bearer a b' }]) {
      for (const answer of await apps.askAll(probe)) {
        descriptions.add((answer.body as { error_description: string }).error_description)
      }
    }
    for (const description of descriptions) {
      expect(description).toMatch(/^[A-Za-z ]{3,48}$/)
    }
  })
})

describe('answers when the keys cannot be fetched', () => {
  // Nothing listens on port 1: every fetch fails at once with ECONNREFUSED.
  const apps = useApps(() => ({
    issuers: [
      { issuer: 'http://127.0.0.1:1/realms/acme', jwksUri: 'http://127.0.0.1:1/realms/acme/certs' },
    ],
    audience: 'gateway',
    jwks: { cooldownMs: 0 },
  }))

  it('answers 503 with Retry-After and reveals neither the key URL nor the network error', async () => {
    const token = signWith(
      privateKeyOf(issuer, kid),
      'RS256',
      { alg: 'RS256', kid },
      accessClaims(issuer, { iss: 'http://127.0.0.1:1/realms/acme' }),
    )
    const answers = await apps.expectAll(bearer(token), UNAVAILABLE)
    for (const answer of answers) {
      expect(answer.raw).not.toMatch(/127\.0\.0\.1:1\b|ECONNREFUSED|fetch failed|certs/i)
      expect(answer.headers['cache-control']).toEqual(['no-store'])
    }
  })
})

describe('errors and events in the core', () => {
  it('never puts the token, a claim value or a header value in an error or its cause', async () => {
    const events: GateEvent[] = []
    const gate = createGate({ ...options(), onEvent: (event) => events.push(event) })
    for (const [name, token] of refusedTokens()) {
      const error = await gate.check({ headers: { authorization: `Bearer ${token}` } }).then(
        () => undefined,
        (caught: unknown) => caught,
      )
      expect(isTollgateError(error), name).toBe(true)
      // The two exceptions, by design, shown to operators in `detail`: a verified token's `aud`,
      // and the `iss` of a token from no configured issuer, bounded and named unverifiedIss.
      const { detail } = error as { detail?: Record<string, unknown> }
      for (const key of Object.keys(detail ?? {})) {
        expect([
          'aud',
          'expected',
          'configured',
          'claim',
          'exp',
          'iat',
          'nbf',
          'unverifiedIss',
        ]).toContain(key)
      }
      expectNoMarkers(
        inspect({ ...detail, aud: undefined, unverifiedIss: undefined }, { depth: 10 }),
      )
      const text = inspect(
        { ...(error as object), detail: undefined },
        { depth: 10, showHidden: true },
      )
      expectNoMarkers(inspect((error as Error).cause, { depth: 10, showHidden: true }))
      expectNoMarkers(text)
      for (const piece of token.split('.'))
        if (piece.length >= 16) expect(text).not.toContain(piece)
    }
    const text = inspect(
      events.map((event) => ({ ...event, detail: undefined })),
      { depth: 10 },
    )
    expectNoMarkers(text)
    for (const [, token] of refusedTokens()) {
      for (const piece of token.split('.'))
        if (piece.length >= 16) expect(text).not.toContain(piece)
    }
  })

  it('names no issuer in a rejected event unless the signature was verified', async () => {
    const events: GateEvent[] = []
    const gate = createGate({ ...options(), onEvent: (event) => events.push(event) })
    const forged = signWith(
      attackerKey('rsa').privateKey,
      'RS256',
      { alg: 'RS256', kid },
      accessClaims(issuer),
    )
    await expect(
      gate.check({ headers: { authorization: `Bearer ${forged}` } }),
    ).rejects.toMatchObject({
      code: 'ERR_TOKEN_INVALID',
    })
    expect(events.filter((event) => event.type === 'rejected')).toEqual([
      expect.objectContaining({
        type: 'rejected',
        code: 'ERR_TOKEN_INVALID',
        reason: 'signature',
        detail: undefined,
        issuer: undefined,
        tenant: undefined,
      }),
    ])
  })

  it('rejects with a TollgateError, never a TypeError, for request shapes adapters could pass', async () => {
    const gate = createGate(options())
    const shapes = [
      { headers: { authorization: ['Bearer a.b.c', 'Bearer a.b.c'] } },
      {
        headers: { authorization: 'Bearer a.b.c' },
        rawHeaders: ['Authorization', 'x', 'authorization', 'y'],
      },
      { headers: { authorization: 'Bearer a.b.c' }, url: '/?%zz=1&access_token' },
      { headers: { authorization: 'Bearer a.b.c' }, body: Object.create(null) as object },
      { headers: { authorization: 'Bearer a.b.c' }, body: 'access_token=x' },
      { headers: { authorization: 'Bearer a.b.c' }, body: null },
      { headers: {} },
    ]
    for (const request of shapes) {
      const error = await gate.check(request).then(
        () => undefined,
        (caught: unknown) => caught,
      )
      expect(isTollgateError(error), inspect(request)).toBe(true)
      expect([400, 401]).toContain((error as { status: number }).status)
    }
  })
})
