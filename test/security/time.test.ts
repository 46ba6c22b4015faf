/**
 * Attack class: time claims (RFC 7519 §4.1.4–4.1.6, RFC 8725 §3.10). Missing, mistyped, float,
 * infinite and huge `exp`; `nbf` and `iat` in the future; the exact tolerance boundaries; a
 * maximum token age; and time passing for a token already verified (the verdict cache must not
 * outlive `exp`). Date is frozen with fake timers; sockets and the JWKS fetch stay real.
 */
import { afterAll, beforeAll, describe, it, vi } from 'vitest'
import { createTestIssuer, type TestIssuer } from '../../src/testing/index.js'
import { keycloak } from '../../src/token/issuers.js'
import { bearer, type Case, EXPIRED, INVALID_TOKEN, OK, useApps } from './helpers.js'
import { accessClaims, b64, type Json, kidOf, privateKeyOf, signInput, signWith } from './tokens.js'

/** 2030-01-01T00:00:00Z, a whole second. */
const NOW_MS = Date.UTC(2030, 0, 1)
const S = NOW_MS / 1000

let issuer: TestIssuer
let kid: string

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'], now: NOW_MS })
  issuer = await createTestIssuer({ realms: ['acme'], audience: 'gateway' })
  kid = await kidOf(issuer, 'RS256')
})
afterAll(async () => {
  vi.useRealTimers()
  await issuer.close()
})

const options = (extra: object = {}) => ({
  issuers: keycloak({ authUrl: issuer.url, realms: ['acme'] }),
  audience: 'gateway',
  ...extra,
})

/** A genuine token with `overrides` on the default claims (`undefined` removes a claim). */
function token(overrides: Json): string {
  return signWith(
    privateKeyOf(issuer, kid),
    'RS256',
    { alg: 'RS256', typ: 'JWT', kid },
    accessClaims(issuer, overrides),
  )
}

/** A genuine token whose payload JSON text is spliced by hand (for values JSON.stringify can't write). */
function rawToken(claimsJson: (base: string) => string): string {
  const base = JSON.stringify(accessClaims(issuer, { exp: undefined }))
  const header = b64({ alg: 'RS256', typ: 'JWT', kid })
  const payload = Buffer.from(claimsJson(base.slice(0, -1)), 'utf8').toString('base64url')
  const signature = signInput(privateKeyOf(issuer, kid), 'RS256', `${header}.${payload}`)
  return `${header}.${payload}.${signature.toString('base64url')}`
}

const expiry: Case[] = [
  ['exp missing', () => bearer(token({ exp: undefined })), INVALID_TOKEN],
  ['exp as a numeric string', () => bearer(token({ exp: String(S + 300) })), INVALID_TOKEN],
  ['exp null', () => bearer(token({ exp: null })), INVALID_TOKEN],
  ['exp true', () => bearer(token({ exp: true })), INVALID_TOKEN],
  ['exp as an array', () => bearer(token({ exp: [S + 300] })), INVALID_TOKEN],
  ['exp as an object', () => bearer(token({ exp: { value: S + 300 } })), INVALID_TOKEN],
  [
    'exp 1e400 (parses to Infinity)',
    () => bearer(rawToken((base) => `${base},"exp":1e400}`)),
    INVALID_TOKEN,
  ],
  [
    'exp -1e400 (parses to -Infinity)',
    () => bearer(rawToken((base) => `${base},"exp":-1e400}`)),
    INVALID_TOKEN,
  ],
  // RFC 7519 §2: a NumericDate may have a fraction (issuers writing Date.now() / 1000).
  ['exp as a float in the future', () => bearer(token({ exp: S + 300.5 })), OK],
  [
    'exp, iat and nbf all fractional (exp now + 300.5, iat now − 5.25, nbf now + 0.9)',
    () => bearer(token({ exp: S + 300.5, iat: S - 5.25, nbf: S + 0.9 })),
    OK,
  ],
  ['exp as a float in the past', () => bearer(token({ exp: S - 5.5, iat: S - 300 })), EXPIRED],
  // Beyond ±2^53 s: malformed, whatever its value (an exp of 1e300 would never expire).
  [
    'exp written in exponent form',
    () => bearer(rawToken((base) => `${base},"exp":${(S + 300) / 1e9}e9}`)),
    OK,
  ],
  ['exp 1e300 (huge, finite)', () => bearer(token({ exp: 1e300 })), INVALID_TOKEN],
  [
    'exp beyond 2^53',
    () => bearer(rawToken((base) => `${base},"exp":9007199254740993}`)),
    INVALID_TOKEN,
  ],
  ['exp 0', () => bearer(token({ exp: 0 })), EXPIRED],
  ['exp -1', () => bearer(token({ exp: -1 })), EXPIRED],
  ['exp an hour ago', () => bearer(token({ exp: S - 3600, iat: S - 7200 })), EXPIRED],
  [
    'exp in milliseconds by mistake (far future, accepted)',
    () => bearer(token({ exp: NOW_MS + 300_000 })),
    OK,
  ],
]

const boundaries: Case[] = [
  [
    'exp 6 s ago (beyond the 5 s tolerance)',
    () => bearer(token({ exp: S - 6, iat: S - 300 })),
    EXPIRED,
  ],
  [
    'exp exactly 5 s ago (tolerance used up)',
    () => bearer(token({ exp: S - 5, iat: S - 300 })),
    EXPIRED,
  ],
  ['exp 4 s ago (within tolerance)', () => bearer(token({ exp: S - 4, iat: S - 300 })), OK],
  [
    'exp 5 s ago (at the tolerance bound)',
    () => bearer(token({ exp: S - 5, iat: S - 300 })),
    EXPIRED,
  ],
  ['iat as a fraction', () => bearer(token({ iat: S - 10.5 })), OK],
  [
    'iat 5.25 s ahead (a fraction beyond the tolerance)',
    () => bearer(token({ iat: S + 5.25 })),
    INVALID_TOKEN,
  ],
  [
    'exp 4.5 s ago (a fraction within the tolerance)',
    () => bearer(token({ exp: S - 4.5, iat: S - 300 })),
    OK,
  ],
  ['nbf beyond 2^53 in the past', () => bearer(token({ nbf: -(2 ** 60) })), INVALID_TOKEN],
  ['exp now', () => bearer(token({ exp: S, iat: S - 300 })), OK],
  ['nbf 6 s ahead', () => bearer(token({ nbf: S + 6 })), INVALID_TOKEN],
  ['nbf 5.001 s ahead', () => bearer(token({ nbf: S + 5.001 })), INVALID_TOKEN],
  ['nbf exactly 5 s ahead (within tolerance)', () => bearer(token({ nbf: S + 5 })), OK],
  ['nbf an hour ahead', () => bearer(token({ nbf: S + 3600, exp: S + 7200 })), INVALID_TOKEN],
  ['nbf in the past', () => bearer(token({ nbf: S - 1000 })), OK],
  ['nbf as a string', () => bearer(token({ nbf: String(S - 10) })), INVALID_TOKEN],
  ['nbf null', () => bearer(token({ nbf: null })), INVALID_TOKEN],
  [
    'nbf 1e400 (Infinity)',
    () => bearer(rawToken((base) => `${base},"exp":${S + 300},"nbf":1e400}`)),
    INVALID_TOKEN,
  ],
  ['iat 6 s ahead', () => bearer(token({ iat: S + 6 })), INVALID_TOKEN],
  ['iat exactly 5 s ahead (within tolerance)', () => bearer(token({ iat: S + 5 })), OK],
  ['iat a day ahead', () => bearer(token({ iat: S + 86_400, exp: S + 90_000 })), INVALID_TOKEN],
  ['iat as a string', () => bearer(token({ iat: String(S) })), INVALID_TOKEN],
  ['iat missing (optional without a maximum age)', () => bearer(token({ iat: undefined })), OK],
  ['iat 0 (optional, old, no maximum age)', () => bearer(token({ iat: 0 })), OK],
  [
    'nbf after exp (never valid)',
    () => bearer(token({ nbf: S + 600, exp: S + 300 })),
    INVALID_TOKEN,
  ],
]

const forgedAndExpired: Case[] = [
  [
    'an expired token with a forged signature says "invalid token", not "token expired"',
    () => {
      const [h, p] = token({ exp: S - 3600, iat: S - 7200 }).split('.')
      return bearer(`${h}.${p}.${Buffer.alloc(256, 7).toString('base64url')}`)
    },
    INVALID_TOKEN,
  ],
  [
    'an expired token with no signature says "invalid token"',
    () =>
      bearer(
        `${token({ exp: S - 3600 })
          .split('.')
          .slice(0, 2)
          .join('.')}.`,
      ),
    INVALID_TOKEN,
  ],
  [
    'an expired alg-none token says "invalid token"',
    () => bearer(`${b64({ alg: 'none' })}.${b64(accessClaims(issuer, { exp: S - 3600 }))}.`),
    INVALID_TOKEN,
  ],
]

describe('time claims with the default 5 s tolerance', () => {
  const apps = useApps(() => options())

  describe.each([
    ['exp: missing, mistyped, infinite, huge, past', expiry],
    ['exp, nbf and iat at the tolerance boundaries', boundaries],
    ['expiry is only revealed for a genuine signature', forgedAndExpired],
  ] as const)('%s', (_title, cases) => {
    it.each(cases)('%s', async (_name, probe, expected) => {
      await apps.expectAll(await probe(), expected)
    })
  })

  describe('time passing for a token already verified', () => {
    afterAll(() => {
      vi.setSystemTime(NOW_MS)
    })

    it('admits a token until exp + tolerance, then answers token expired (no cached verdict outlives exp)', async () => {
      vi.setSystemTime(NOW_MS)
      const probe = bearer(token({ exp: S + 60 }))
      await apps.expectAll(probe, OK)
      vi.setSystemTime(NOW_MS + 64_999)
      await apps.expectAll(probe, OK)
      vi.setSystemTime(NOW_MS + 65_000)
      await apps.expectAll(probe, EXPIRED)
      vi.setSystemTime(NOW_MS + 10 * 60_000)
      await apps.expectAll(probe, EXPIRED)
    })

    it('admits a token with a fractional exp until exp + tolerance, to the millisecond', async () => {
      vi.setSystemTime(NOW_MS)
      const probe = bearer(token({ exp: S + 60.5 }))
      await apps.expectAll(probe, OK)
      vi.setSystemTime(NOW_MS + 65_499)
      await apps.expectAll(probe, OK)
      vi.setSystemTime(NOW_MS + 65_500)
      await apps.expectAll(probe, EXPIRED)
    })

    it('refuses a token before nbf − tolerance and admits it after', async () => {
      vi.setSystemTime(NOW_MS)
      const probe = bearer(token({ nbf: S + 60 }))
      await apps.expectAll(probe, INVALID_TOKEN)
      vi.setSystemTime(NOW_MS + 54_000)
      await apps.expectAll(probe, INVALID_TOKEN)
      vi.setSystemTime(NOW_MS + 55_000)
      await apps.expectAll(probe, OK)
    })

    it('refuses a token verified before the clock went back past its iat', async () => {
      vi.setSystemTime(NOW_MS)
      const probe = bearer(token({ iat: S }))
      await apps.expectAll(probe, OK)
      vi.setSystemTime(NOW_MS - 60_000)
      await apps.expectAll(probe, INVALID_TOKEN)
    })
  })
})

describe('time claims with no tolerance and a one-hour maximum age', () => {
  const apps = useApps(() => options({ clockToleranceSeconds: 0, maxTokenAgeSeconds: 3600 }))

  const cases: Case[] = [
    ['exp now (no tolerance)', () => bearer(token({ exp: S })), EXPIRED],
    ['exp 1 s ahead', () => bearer(token({ exp: S + 1 })), OK],
    ['nbf 1 s ahead', () => bearer(token({ nbf: S + 1 })), INVALID_TOKEN],
    ['nbf now', () => bearer(token({ nbf: S })), OK],
    ['iat 1 s ahead', () => bearer(token({ iat: S + 1 })), INVALID_TOKEN],
    [
      'iat missing (required by the maximum age)',
      () => bearer(token({ iat: undefined })),
      INVALID_TOKEN,
    ],
    ['iat as a string', () => bearer(token({ iat: String(S - 10) })), INVALID_TOKEN],
    [
      'iat exactly the maximum age ago',
      () => bearer(token({ iat: S - 3600, exp: S + 3600 })),
      EXPIRED,
    ],
    [
      'iat one second less than the maximum age ago',
      () => bearer(token({ iat: S - 3599, exp: S + 3600 })),
      OK,
    ],
    [
      'iat a day ago with a far exp',
      () => bearer(token({ iat: S - 86_400, exp: S + 86_400 })),
      EXPIRED,
    ],
  ]

  it.each(cases)('%s', async (_name, probe, expected) => {
    await apps.expectAll(await probe(), expected)
  })

  it('stops admitting a cached token once it reaches the maximum age', async () => {
    vi.setSystemTime(NOW_MS)
    const probe = bearer(token({ iat: S - 3500, exp: S + 3600 }))
    await apps.expectAll(probe, OK)
    vi.setSystemTime(NOW_MS + 99_000)
    await apps.expectAll(probe, OK)
    vi.setSystemTime(NOW_MS + 100_000)
    await apps.expectAll(probe, EXPIRED)
    vi.setSystemTime(NOW_MS)
  })
})
