/**
 * Attack class: JSON semantics of the header and claims (RFC 7515 §4, RFC 7519 §4, RFC 8259 §4).
 * Duplicate member names (the last one is the one every JOSE library reads, so a token can never
 * be admitted on the strength of an earlier duplicate), `\u` escapes that spell a member name,
 * `__proto__` and `constructor` members that must stay plain data, and homoglyph look-alikes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  bearer,
  type Case,
  EXPIRED,
  INVALID_TOKEN,
  insufficientScope,
  OK,
  useApps,
} from './helpers.js'
import { accessClaims, b64, kidOf, nowSeconds, privateKeyOf, signInput } from './tokens.js'

let issuer: TestIssuer
let kid: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  kid = await kidOf(issuer, 'RS256')
})
afterAll(async () => {
  await issuer.close()
})

const options = (extra: object = {}) => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
  ...extra,
})

/** Signs header and payload JSON *text* exactly as written, with the trusted key. */
function signText(headerText: string, payloadText: string): string {
  const input = `${b64(headerText)}.${b64(payloadText)}`
  return `${input}.${signInput(privateKeyOf(issuer, kid), 'RS256', input).toString('base64url')}`
}

const HEADER = () => `{"alg":"RS256","typ":"JWT","kid":"${kid}"}`

/** Default claims as JSON text, without the named members, followed by `extra` members. */
function claimsText(extra: string, without: string[] = []): string {
  const claims = accessClaims(issuer)
  for (const name of without) delete claims[name]
  const base = JSON.stringify(claims).slice(0, -1)
  return extra === '' ? `${base}}` : `${base},${extra}}`
}

/** Every own property name Object.prototype had before the suite ran. */
const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype).sort()

describe('JSON semantics (default options)', () => {
  const apps = useApps(() => options())

  afterEach(() => {
    // Nothing a token says can reach the prototype of every object.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTOTYPE_NAMES)
    const probe = {} as Record<string, unknown>
    for (const name of ['admin', 'polluted', 'roles', 'scope', 'aud', 'iss', 'exp', 'tenant']) {
      expect(probe[name]).toBeUndefined()
    }
  })

  const duplicates: Case[] = [
    [
      'header alg "RS256" then "none"',
      () => bearer(signText(`{"alg":"RS256","alg":"none","kid":"${kid}"}`, claimsText(''))),
      INVALID_TOKEN,
    ],
    [
      'header kid trusted then unknown',
      () => bearer(signText(`{"alg":"RS256","kid":"${kid}","kid":"unknown"}`, claimsText(''))),
      INVALID_TOKEN,
    ],
    [
      'header crit absent then present',
      () => bearer(signText(`{"alg":"RS256","kid":"${kid}","crit":["x"],"x":1}`, claimsText(''))),
      INVALID_TOKEN,
    ],
    [
      'header alg "RS256" then "\\u006eone" (escaped none)',
      () =>
        bearer(signText(`{"alg":"RS256","\\u0061lg":"\\u006eone","kid":"${kid}"}`, claimsText(''))),
      INVALID_TOKEN,
    ],
    [
      'aud "gateway" then "office"',
      () => bearer(signText(HEADER(), claimsText('"aud":"office"'))),
      INVALID_TOKEN,
    ],
    [
      'aud "gateway" then "\\u0061ud": "office" (escaped name)',
      () => bearer(signText(HEADER(), claimsText('"\\u0061ud":"office"'))),
      INVALID_TOKEN,
    ],
    [
      'iss trusted then untrusted',
      () => bearer(signText(HEADER(), claimsText('"iss":"https://evil.example/realms/acme"'))),
      INVALID_TOKEN,
    ],
    [
      'exp in the future then in the past',
      () => bearer(signText(HEADER(), claimsText(`"exp":${nowSeconds() - 3600}`))),
      EXPIRED,
    ],
    [
      'exp number then string',
      () => bearer(signText(HEADER(), claimsText(`"exp":"${nowSeconds() + 3600}"`))),
      INVALID_TOKEN,
    ],
    [
      'typ "Bearer" then "Refresh"',
      () => bearer(signText(HEADER(), claimsText('"typ":"Refresh"'))),
      INVALID_TOKEN,
    ],
    [
      'nbf past then future',
      () => bearer(signText(HEADER(), claimsText(`"nbf":0,"nbf":${nowSeconds() + 3600}`))),
      INVALID_TOKEN,
    ],
  ]

  const prototypeMembers: Case[] = [
    [
      '"__proto__": {"scope": "billing:read"} at a scoped route',
      () => ({
        ...bearer(
          signText(HEADER(), claimsText('"__proto__":{"scope":"billing:read"}', ['scope'])),
        ),
        path: '/scoped',
      }),
      insufficientScope('billing:read'),
    ],
    [
      '"__proto__": {"aud": "gateway"} without aud',
      () => bearer(signText(HEADER(), claimsText('"__proto__":{"aud":"gateway"}', ['aud']))),
      INVALID_TOKEN,
    ],
    [
      '"__proto__": {"exp": far} without exp',
      () => bearer(signText(HEADER(), claimsText('"__proto__":{"exp":4102444800}', ['exp']))),
      INVALID_TOKEN,
    ],
    [
      '"__proto__": {"iss": trusted} without iss',
      () =>
        bearer(
          signText(HEADER(), claimsText(`"__proto__":{"iss":"${issuer.issuer('acme')}"}`, ['iss'])),
        ),
      INVALID_TOKEN,
    ],
    [
      '"__proto__": {"typ": "Bearer"} with typ "Refresh"',
      () =>
        bearer(
          signText(HEADER(), claimsText('"__proto__":{"typ":"Bearer"},"typ":"Refresh"', ['typ'])),
        ),
      INVALID_TOKEN,
    ],
    [
      '"constructor": {"prototype": {"admin": true}}',
      () =>
        bearer(
          signText(HEADER(), claimsText('"constructor":{"prototype":{"admin":true,"polluted":1}}')),
        ),
      OK,
    ],
    [
      '"__proto__": {"polluted": 1} on an accepted token',
      () => bearer(signText(HEADER(), claimsText('"__proto__":{"polluted":1,"admin":true}'))),
      OK,
    ],
    [
      'realm_access {"__proto__": {"roles": ["admin"]}}',
      () => ({
        ...bearer(
          signText(HEADER(), claimsText('"realm_access":{"__proto__":{"roles":["admin"]}}')),
        ),
        path: '/realm-role',
      }),
      insufficientScope('admin'),
    ],
    [
      'realm_access.roles as an array-like object',
      () => ({
        ...bearer(
          signText(HEADER(), claimsText('"realm_access":{"roles":{"0":"admin","length":1}}')),
        ),
        path: '/realm-role',
      }),
      insufficientScope('admin'),
    ],
    [
      'resource_access {"__proto__": {"office": {"roles": ["editor"]}}}',
      () => ({
        ...bearer(
          signText(
            HEADER(),
            claimsText('"resource_access":{"__proto__":{"office":{"roles":["editor"]}}}'),
          ),
        ),
        path: '/client-role',
      }),
      insufficientScope('editor'),
    ],
    [
      'resource_access.office {"__proto__": {"roles": ["editor"]}}',
      () => ({
        ...bearer(
          signText(
            HEADER(),
            claimsText('"resource_access":{"office":{"__proto__":{"roles":["editor"]}}}'),
          ),
        ),
        path: '/client-role',
      }),
      insufficientScope('editor'),
    ],
    [
      'resource_access.office.roles (control)',
      () => ({
        ...bearer(
          signText(HEADER(), claimsText('"resource_access":{"office":{"roles":["editor"]}}')),
        ),
        path: '/client-role',
      }),
      OK,
    ],
    [
      'header "__proto__": {"alg": "RS256"} with alg none',
      () =>
        bearer(
          signText(`{"__proto__":{"alg":"RS256"},"alg":"none","kid":"${kid}"}`, claimsText('')),
        ),
      INVALID_TOKEN,
    ],
    [
      'members named toString, valueOf, hasOwnProperty, constructor',
      () =>
        bearer(
          signText(
            HEADER(),
            claimsText(
              '"toString":1,"valueOf":"x","hasOwnProperty":null,"constructor":[],"isPrototypeOf":{}',
            ),
          ),
        ),
      OK,
    ],
    [
      'header members named toString and hasOwnProperty',
      () =>
        bearer(
          signText(
            `{"alg":"RS256","kid":"${kid}","toString":1,"hasOwnProperty":2}`,
            claimsText(''),
          ),
        ),
      OK,
    ],
  ]

  const lookAlikes: Case[] = [
    [
      'aud with a Cyrillic "у" (gatewaу)',
      () => bearer(signText(HEADER(), claimsText('"aud":"gatewa\u0443"', ['aud']))),
      INVALID_TOKEN,
    ],
    [
      'aud with a zero-width space',
      () => bearer(signText(HEADER(), claimsText('"aud":"gate\u200bway"', ['aud']))),
      INVALID_TOKEN,
    ],
    [
      'aud with a trailing NUL',
      () => bearer(signText(HEADER(), claimsText('"aud":"gateway\\u0000"', ['aud']))),
      INVALID_TOKEN,
    ],
    [
      'aud in full-width letters',
      () => bearer(signText(HEADER(), claimsText('"aud":"ｇａｔｅｗａｙ"', ['aud']))),
      INVALID_TOKEN,
    ],
    [
      'aud spelled with \\u escapes (the same string)',
      () => bearer(signText(HEADER(), claimsText('"aud":"\\u0067ateway"', ['aud']))),
      OK,
    ],
    [
      'iss with a Cyrillic "а" in the realm',
      () =>
        bearer(
          signText(
            HEADER(),
            claimsText(`"iss":"${issuer.issuer('acme').replace('acme', '\u0430cme')}"`, ['iss']),
          ),
        ),
      INVALID_TOKEN,
    ],
    [
      'typ "Bеarer" with a Cyrillic "е"',
      () => bearer(signText(HEADER(), claimsText('"typ":"B\u0435arer"', ['typ']))),
      INVALID_TOKEN,
    ],
  ]

  describe.each([
    ['duplicate member names: the last one decides', duplicates],
    ['__proto__ and constructor members stay plain data', prototypeMembers],
    ['look-alike strings', lookAlikes],
  ] as const)('%s', (_title, cases) => {
    it.each(cases)('%s', async (_name, probe, expected) => {
      await apps.expectAll(await probe(), expected)
    })
  })

  it.each([
    ['sub "alice" then "admin"', '"sub":"admin"', 'admin'],
    ['aud "office" then "gateway"', '"aud":"office","aud":"gateway"', 'user-1'],
  ])(
    'never admits a token on an earlier duplicate (%s): refused, or read as the last member',
    async (_name, extra, subject) => {
      const without = extra.startsWith('"aud"') ? ['aud'] : []
      const answers = await apps.askAll(bearer(signText(HEADER(), claimsText(extra, without))))
      for (const answer of answers) {
        if (answer.status === 200) expect(answer.body).toMatchObject({ subject })
        else expect(answer.body).toEqual(INVALID_TOKEN.body)
      }
    },
  )
})

describe('JSON semantics with required claims', () => {
  const apps = useApps(() => options({ requiredClaims: ['tenant'] }))

  it.each([
    ['a required claim only inside "__proto__"', '"__proto__":{"tenant":"acme"}', INVALID_TOKEN],
    ['a required claim inside "constructor"', '"constructor":{"tenant":"acme"}', INVALID_TOKEN],
    ['a required claim present (control)', '"tenant":"acme"', OK],
  ] as const)('%s', async (_name, extra, expected) => {
    await apps.expectAll(bearer(signText(HEADER(), claimsText(extra))), expected)
  })
})
