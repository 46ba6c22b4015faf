/**
 * Attack class: Authorization header parsing (RFC 6750 §2.1, §3.1). Schemes, spacing, casing,
 * empty, repeated and oversized fields, and tokens sent some other way (query, body, cookie,
 * other headers). Every case runs through Express 5, Express 4, Koa 3 and Koa 2.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import {
  BAD_REQUEST,
  type Case,
  type Expected,
  INVALID_TOKEN,
  MISSING,
  OK,
  ROUTE,
  useApps,
} from './helpers.js'

let issuer: TestIssuer
let token: string

beforeAll(async () => {
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  // A long lifetime: the same token serves every case of the file.
  token = await issuer.mint({}, { expiresInSeconds: 3600 })
})
afterAll(async () => {
  await issuer.close()
})

const apps = useApps(() => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
}))

/** What Node's own HTTP parser answers before any framework runs: a bare 400 or 431. */
const NODE_REFUSES = (status: number): Expected => ({ status, challenge: undefined })

const noCredentials: Case[] = [
  ['no Authorization field', () => ({}), MISSING],
  ['an empty Authorization field', () => ({ authorization: '' }), MISSING],
  ['an Authorization field of spaces only', () => ({ authorization: '   ' }), MISSING],
  ['the Basic scheme', () => ({ authorization: 'Basic dXNlcjpwYXNzd29yZA==' }), MISSING],
  ['the Digest scheme', () => ({ authorization: 'Digest username="u", realm="api"' }), MISSING],
  ['the DPoP scheme carrying a valid token', () => ({ authorization: `DPoP ${token}` }), MISSING],
  ['a "Token" scheme carrying a valid token', () => ({ authorization: `Token ${token}` }), MISSING],
  ['a JWT scheme carrying a valid token', () => ({ authorization: `JWT ${token}` }), MISSING],
  ['"Bearer" glued to the token', () => ({ authorization: `Bearer${token}` }), MISSING],
  ['"Bearer2" as the scheme', () => ({ authorization: `Bearer2 ${token}` }), MISSING],
  ['"Bearer-" as the scheme', () => ({ authorization: `Bearer- ${token}` }), MISSING],
  ['the bare token without a scheme', () => ({ authorization: token }), MISSING],
  // "Bearer%20…" is one auth-scheme token (RFC 9110 §11.1: "%" is a tchar), not Bearer.
  ['"Bearer%20" glued to the token', () => ({ authorization: `Bearer%20${token}` }), MISSING],
  ['a token only in the query string', () => ({ path: `${ROUTE}?access_token=${token}` }), MISSING],
  ['a token only in a form body', () => ({ form: { access_token: token } }), MISSING],
  [
    'a token only in the form body of a GET',
    () => ({ method: 'GET', form: { access_token: token } }),
    MISSING,
  ],
  [
    'a token only in a cookie',
    () => ({ headers: [['Cookie', `access_token=${token}; token=${token}`]] }),
    MISSING,
  ],
  [
    'a token only in Proxy-Authorization',
    () => ({ headers: [['Proxy-Authorization', `Bearer ${token}`]] }),
    MISSING,
  ],
  [
    'a token only in X-Access-Token / X-Auth-Token',
    () => ({
      headers: [
        ['X-Access-Token', token],
        ['X-Auth-Token', `Bearer ${token}`],
      ],
    }),
    MISSING,
  ],
  [
    'a token only in X-Forwarded-Authorization',
    () => ({ headers: [['X-Forwarded-Authorization', `Bearer ${token}`]] }),
    MISSING,
  ],
]

const malformedBearer: Case[] = [
  ['"Bearer" with no token', () => ({ authorization: 'Bearer' }), BAD_REQUEST],
  ['"Bearer" and spaces with no token', () => ({ authorization: 'Bearer    ' }), BAD_REQUEST],
  ['lower-case "bearer" with no token', () => ({ authorization: 'bearer' }), BAD_REQUEST],
  [
    'two tokens separated by a space',
    () => ({ authorization: `Bearer ${token} ${token}` }),
    BAD_REQUEST,
  ],
  [
    'two tokens separated by a comma',
    () => ({ authorization: `Bearer ${token},${token}` }),
    BAD_REQUEST,
  ],
  [
    'two Bearer credentials in one field',
    () => ({ authorization: `Bearer ${token}, Bearer ${token}` }),
    BAD_REQUEST,
  ],
  [
    'Bearer then Basic credentials in one field',
    () => ({ authorization: `Bearer ${token}, Basic dXNlcjpwYXNz` }),
    BAD_REQUEST,
  ],
  ['a tab instead of a space', () => ({ authorization: `Bearer\t${token}` }), BAD_REQUEST],
  ['a quoted token', () => ({ authorization: `Bearer "${token}"` }), BAD_REQUEST],
  ['a token=value parameter', () => ({ authorization: `Bearer token=${token}` }), BAD_REQUEST],
  ['a trailing comma', () => ({ authorization: `Bearer ${token},` }), BAD_REQUEST],
  ['a trailing semicolon', () => ({ authorization: `Bearer ${token};` }), BAD_REQUEST],
  ['a character outside b64token', () => ({ authorization: `Bearer ${token}!` }), BAD_REQUEST],
  ['"=" inside the token', () => ({ authorization: `Bearer ab=cd.${token}` }), BAD_REQUEST],
  ['a latin-1 byte in the token', () => ({ authorization: `Bearer ${token}\xe9` }), BAD_REQUEST],
  [
    'UTF-8 bytes in the token',
    () => ({ authorization: `Bearer ${Buffer.from('tök€n', 'utf8').toString('latin1')}` }),
    BAD_REQUEST,
  ],
  [
    'a JSON-serialized JWS',
    () => ({ authorization: 'Bearer {"payload":"e30","signatures":[]}' }),
    BAD_REQUEST,
  ],
]

const repeated: Case[] = [
  [
    'the same Bearer field twice',
    () => ({ authorization: [`Bearer ${token}`, `Bearer ${token}`] }),
    BAD_REQUEST,
  ],
  [
    'a valid Bearer field and a garbage one',
    () => ({ authorization: [`Bearer ${token}`, 'Bearer x.y.z'] }),
    BAD_REQUEST,
  ],
  [
    'a garbage Bearer field before a valid one',
    () => ({ authorization: ['Bearer x.y.z', `Bearer ${token}`] }),
    BAD_REQUEST,
  ],
  [
    'a Basic field and a Bearer field',
    () => ({ authorization: ['Basic dXNlcjpwYXNz', `Bearer ${token}`] }),
    BAD_REQUEST,
  ],
  [
    'an empty field and a Bearer field',
    () => ({ authorization: ['', `Bearer ${token}`] }),
    BAD_REQUEST,
  ],
  [
    'the field name in two casings',
    () => ({
      headers: [
        ['authorization', `Bearer ${token}`],
        ['AUTHORIZATION', `Bearer ${token}`],
      ],
    }),
    BAD_REQUEST,
  ],
  [
    'three Bearer fields',
    () => ({ authorization: [`Bearer ${token}`, `Bearer ${token}`, `Bearer ${token}`] }),
    BAD_REQUEST,
  ],
]

const sentTwoWays: Case[] = [
  [
    'the header and the query',
    () => ({ authorization: `Bearer ${token}`, path: `${ROUTE}?access_token=${token}` }),
    BAD_REQUEST,
  ],
  [
    'the header and an empty access_token query parameter',
    () => ({ authorization: `Bearer ${token}`, path: `${ROUTE}?access_token=` }),
    BAD_REQUEST,
  ],
  [
    'the header and a query parameter among others',
    () => ({ authorization: `Bearer ${token}`, path: `${ROUTE}?a=1&access_token=x&b=2` }),
    BAD_REQUEST,
  ],
  [
    'the header and a percent-encoded access_token query name',
    () => ({ authorization: `Bearer ${token}`, path: `${ROUTE}?access%5Ftoken=${token}` }),
    BAD_REQUEST,
  ],
  [
    'the header and a form body',
    () => ({ authorization: `Bearer ${token}`, form: { access_token: token } }),
    BAD_REQUEST,
  ],
  [
    'a malformed header and a form body',
    () => ({ authorization: 'Bearer', form: { access_token: token } }),
    BAD_REQUEST,
  ],
]

const accepted: Case[] = [
  ['"Bearer <token>"', () => ({ authorization: `Bearer ${token}` }), OK],
  ['a lower-case scheme', () => ({ authorization: `bearer ${token}` }), OK],
  ['an upper-case scheme', () => ({ authorization: `BEARER ${token}` }), OK],
  ['a mixed-case scheme', () => ({ authorization: `bEaReR ${token}` }), OK],
  ['several spaces after the scheme', () => ({ authorization: `Bearer     ${token}` }), OK],
  [
    'leading and trailing spaces around the value',
    () => ({ authorization: `  Bearer ${token}  ` }),
    OK,
  ],
  [
    'an unrelated query string',
    () => ({ authorization: `Bearer ${token}`, path: `${ROUTE}?token=1&access_tokens=2` }),
    OK,
  ],
  // RFC 6750 §2.2: no body method on GET or HEAD; the body is no credential channel there, so
  // the header alone decides, as on hosts that never hand a GET body over (contract suite).
  [
    'a GET whose form body holds the token as well',
    () => ({ method: 'GET', authorization: `Bearer ${token}`, form: { access_token: token } }),
    OK,
  ],
  [
    'a cookie holding another copy of the token',
    () => ({ authorization: `Bearer ${token}`, headers: [['Cookie', `access_token=${token}`]] }),
    OK,
  ],
]

const notAToken: Case[] = [
  [
    'a b64token that is not a JWT',
    () => ({ authorization: 'Bearer mF_9.B5f-4.1JqM' }),
    INVALID_TOKEN,
  ],
  ['b64token padding after a JWT', () => ({ authorization: `Bearer ${token}=` }), INVALID_TOKEN],
  [
    'b64token padding "==" after a JWT',
    () => ({ authorization: `Bearer ${token}==` }),
    INVALID_TOKEN,
  ],
  [
    'a token just over the 8192-byte limit',
    () => ({ authorization: `Bearer ${token}${'A'.repeat(8193 - token.length)}` }),
    INVALID_TOKEN,
  ],
  [
    'a 15 KiB token (within Node header limits)',
    () => ({ authorization: `Bearer ${'A'.repeat(7000)}.${'B'.repeat(7000)}.${'C'.repeat(1000)}` }),
    INVALID_TOKEN,
  ],
  ['a "+" and "/" token', () => ({ authorization: 'Bearer abc+/def.ghi+/.jkl/+' }), INVALID_TOKEN],
]

const transport: Case[] = [
  [
    'an Authorization field larger than Node accepts (32 KiB)',
    () => ({ authorization: `Bearer ${'A'.repeat(32 * 1024)}` }),
    NODE_REFUSES(431),
  ],
  [
    'a NUL byte in the field',
    () => ({ authorization: `Bearer ${token}\u0000` }),
    NODE_REFUSES(400),
  ],
  ['a bare CR in the field', () => ({ authorization: `Bearer \r${token}` }), NODE_REFUSES(400)],
  [
    'an obs-fold continuation line',
    () => ({ headers: [['Authorization', `Bearer\r\n ${token}`]] }),
    NODE_REFUSES(400),
  ],
]

describe.each([
  ['no credentials or another scheme → 401 bare challenge', noCredentials],
  ['malformed Bearer credentials → 400 invalid_request', malformedBearer],
  ['repeated Authorization fields → 400 invalid_request', repeated],
  ['a token sent more than one way → 400 invalid_request', sentTwoWays],
  ['well-formed Bearer credentials in every spelling RFC 6750 allows → 200', accepted],
  ['a b64token that is no acceptable JWT → 401 invalid_token', notAToken],
  ["requests Node's HTTP parser refuses → its bare 4xx, the same everywhere", transport],
] as const)('%s', (_title, cases) => {
  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })
})

describe('header parsing details', () => {
  it('describes 400s with fixed text that never names the token', async () => {
    const answers = await apps.expectAll({ authorization: `Bearer ${token} ${token}` }, BAD_REQUEST)
    for (const answer of answers) {
      const { error_description } = answer.body as { error_description: string }
      expect(answer.challenge).toContain(`error_description="${error_description}"`)
      expect(error_description.length).toBeLessThan(64)
    }
  })

  it('refuses repeated fields in the same way whatever their order', async () => {
    const first = await apps.askAll({ authorization: ['Bearer x.y.z', `Bearer ${token}`] })
    const second = await apps.askAll({ authorization: [`Bearer ${token}`, 'Bearer x.y.z'] })
    expect(second.map((answer) => [answer.status, answer.challenge, answer.body])).toEqual(
      first.map((answer) => [answer.status, answer.challenge, answer.body]),
    )
  })
})

describe('header parsing with optional authentication (credentialsRequired: false)', () => {
  const optional = useApps(() => ({
    issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
    audience: 'gateway',
    credentialsRequired: false,
  }))
  const ANONYMOUS: Expected = { status: 200, challenge: undefined, body: { authenticated: false } }

  const cases: Case[] = [
    ['no Authorization field → anonymous', () => ({}), ANONYMOUS],
    ['another scheme → anonymous', () => ({ authorization: 'Basic dXNlcjpwYXNz' }), ANONYMOUS],
    ['a valid token → authenticated', () => ({ authorization: `Bearer ${token}` }), OK],
    [
      'a forged token → still refused',
      () => ({ authorization: `Bearer ${token.slice(0, -4)}AAAA` }),
      INVALID_TOKEN,
    ],
    ['malformed Bearer credentials → still 400', () => ({ authorization: 'Bearer' }), BAD_REQUEST],
    [
      'a repeated field → still 400',
      () => ({ authorization: [`Bearer ${token}`, `Bearer ${token}`] }),
      BAD_REQUEST,
    ],
    [
      'an empty field then a Bearer field → still 400',
      () => ({ authorization: ['', 'Bearer x.y.z'] }),
      BAD_REQUEST,
    ],
    [
      'a token also in the query → still 400',
      () => ({ authorization: `Bearer ${token}`, path: `${ROUTE}?access_token=x` }),
      BAD_REQUEST,
    ],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await optional.expectAll(await probe(), expected)
  })
})
